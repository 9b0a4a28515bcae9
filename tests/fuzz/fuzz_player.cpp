// Fuzz target: the trace player (sim/trace/player.cpp, the command table's play functions) on a
// register-file device without SystemC: a .cfg trace is parsed and played — register writes and
// reads, polls, mem_init, mem_load, check_crc, check_file, sync points — against 16 MiB of DRAM
// and a 1 MiB CV-SRAM. CSB accesses store and return words; an interrupt wait
// succeeds when a write set its GLB status bit, otherwise it uses up its (small) timeout. The
// DLA's engines are not run (a register write starts nothing): that needs the functional or
// the SystemC device, whose layers take far longer than a fuzz input may. A malformed or
// failing trace must give TraceError (or a failed check in the result), nothing else.
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "octasim/regs/nvdla.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {

class RegisterDevice final : public octasim::trace::Device {
 public:
  void csb_write(std::uint32_t addr, std::uint32_t value) override {
    ++cycle_;
    if (addr == octasim::regs::GLB::S_INTR_STATUS::kAddr) {
      regs_[addr] &= ~value;  // write one to clear
    } else {
      regs_[addr] = value;
    }
  }
  std::uint32_t csb_read(std::uint32_t addr) override {
    ++cycle_;
    const auto it = regs_.find(addr);
    return it == regs_.end() ? 0 : it->second;
  }
  octasim::MemoryImage& memory() override { return dram_; }
  octasim::MemoryImage& memory_of(octasim::MemorySpace space) override {
    return space == octasim::MemorySpace::kDram ? dram_ : cvsram_;
  }
  bool wait_interrupt(unsigned status_bit, std::uint64_t timeout_cycles) override {
    if ((regs_[octasim::regs::GLB::S_INTR_STATUS::kAddr] >> status_bit & 1u) != 0) return true;
    cycle_ += timeout_cycles;
    return false;
  }
  void wait_cycles(std::uint64_t cycles) override { cycle_ += cycles; }
  std::uint64_t cycle() const override { return cycle_; }

 private:
  std::unordered_map<std::uint32_t, std::uint32_t> regs_;
  // 16 MiB of DRAM at 0x80000000 (where NVDLA's traces place their surfaces): every region a
  // trace can touch is small, so no input spends seconds filling memory (kMaxRegionBytes, the
  // player's own limit, is tested in limits_test.cpp).
  octasim::MemoryImage dram_{0x80000000, 0x1000000, "DRAM"};
  octasim::MemoryImage cvsram_{0x50000000, 0x100000, "the CV-SRAM"};
  std::uint64_t cycle_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = [] {
    const char* const packet =
        "{\n{offset:0x0, size:8, payload:0x01 0x02 0x03 0x04 0x05 0x06 0x07 0x08},\n"
        "{offset:0x10, size:4, payload:0x00 0x00 0x80 0x3f},\n}\n";
    for (const char* name : {"input.dat", "golden.dat", "pb.dat"}) {
      octasim::fuzz::write_scratch(name, packet);
    }
    return (octasim::fuzz::scratch_dir() / "fuzz.cfg").string();
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const octasim::trace::Trace t = octasim::trace::parse_trace(text, path);
    RegisterDevice device;
    octasim::trace::PlayerOptions options;
    options.timeout_cycles = 1000;
    options.poll_interval_cycles = 16;
    (void)octasim::trace::play(t, device, options);
  } catch (const octasim::trace::TraceError& e) {
    octasim::fuzz::rejected(e);
  }
  return 0;
}
