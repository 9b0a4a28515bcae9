// Fuzz target: PPU push buffers and kernel descriptors. The input is loaded into device memory
// at 0x80000000 as a push buffer and walked command by command with the front end's framing
// rules (firmware/ppu/commands.hpp: opcode, payload length, reserved header bits, a
// SYNCPT_WAIT's syncpoint number); each LAUNCH's
// 32-word descriptor is decoded by the PPU's kernel decoder (sim/ppu/kernels.cpp decode_kernel,
// which reads and checks the operands against the image) on soc_small's PPU, with 64 KiB of
// memory at 0x80000000. The front end's
// command loop itself runs in a SystemC thread (sim/ppu/ppu.cpp) and is not called here: no
// sc_start in a fuzz target. decode_kernel never throws: a bad descriptor is an error code.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "firmware/ppu/commands.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/ppu/kernels.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {

constexpr std::uint64_t kBase = 0x80000000;
constexpr std::size_t kImageBytes = std::size_t{1} << 16;

std::uint32_t word_at(const std::uint8_t* data, std::size_t i) {
  return std::uint32_t{data[i]} | std::uint32_t{data[i + 1]} << 8 |
         std::uint32_t{data[i + 2]} << 16 | std::uint32_t{data[i + 3]} << 24;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const octasim::HwConfig hw = octasim::load_hw_config("soc_small");
  namespace pf = octasim::ppu_format;
  // 64 KiB of DRAM at kBase: operands beyond it are BAD_ADDRESS, so no input makes the decoder
  // read (and the fuzzer wait for) hundreds of MiB of a 4 GiB address space.
  octasim::MemoryImage image(kBase, kImageBytes, "DRAM");
  if (size > 0) image.write(kBase, data, std::min<std::size_t>(size, kImageBytes));
  unsigned launches = 0;
  for (std::size_t offset = 0; offset + 4 <= size && launches < 4;) {
    const std::uint32_t header = word_at(data, offset);
    const auto opcode = static_cast<std::uint8_t>(header >> 24);
    const unsigned len = header & 0xffu;
    const int expected = pf::payload_words(opcode);
    if (expected < 0 || len != static_cast<unsigned>(expected) || (header & 0x00ffff00u) != 0) {
      break;  // UNKNOWN_COMMAND / BAD_LENGTH
    }
    if (offset + 4 * (1 + std::size_t{len}) > size) break;  // PB_OUT_OF_RANGE
    if (static_cast<pf::Opcode>(opcode) == pf::Opcode::kSyncptWait &&
        word_at(data, offset + 4) >= pf::kSyncpoints) {
      break;  // BAD_SYNCPOINT
    }
    if (static_cast<pf::Opcode>(opcode) == pf::Opcode::kLaunch) {
      ++launches;
      const std::uint64_t desc =
          std::uint64_t{word_at(data, offset + 4)} | std::uint64_t{word_at(data, offset + 8)} << 32;
      std::vector<std::uint32_t> words(32);
      if (desc % 4 == 0 && image.contains(desc, 128)) {
        image.read(desc, reinterpret_cast<std::uint8_t*>(words.data()), 128);
        const octasim::ppu::DecodeResult r = octasim::ppu::decode_kernel(words.data(), hw, image);
        if ((r.kernel == nullptr) == (r.error == pf::ErrorCode::kNone)) std::abort();
        if (r.kernel == nullptr) octasim::fuzz::rejected(std::runtime_error(r.why));
        if (r.kernel != nullptr && r.kernel->ctas() > 0) {
          std::vector<octasim::ppu::Range> loads;
          if (r.kernel->steps(0) > 0) r.kernel->loads(0, 0, loads);
          (void)r.kernel->math_cycles(0, 0);
        }
      }
    }
    offset += 4 * (1 + std::size_t{len});
  }
  return 0;
}
