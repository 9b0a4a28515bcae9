// The secondary memory interface (mem::CvSramPort behind MemorySystem): every expected cycle
// count is derived here from the configuration's numbers (width, burst, latency, atom), by the
// rule cvsram_port.hpp documents, not read back from the model.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>

#include "sim/core/device_memory.hpp"
#include "sim/mem/cvsram_port.hpp"
#include "sim/mem/memory_system.hpp"

namespace octasim {
namespace {

using sc_core::SC_NS;
using sc_core::sc_time;

struct Client final : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Client> socket{"port"};
  explicit Client(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {}
};

// A memory system with DRAM and the configuration's CV-SRAM, one client, elaborated; requests
// are issued from the test body at absolute cycles.
class Rig {
 public:
  explicit Rig(const HwConfig& hw)
      : dram_(hw.dla.mem_address_width),
        sram_(make_cvsram_image(hw)),
        mem_("mem", hw, dram_, sc_time(1, SC_NS), sram_.get()),
        client_("client") {
    client_.socket.bind(mem_.socket);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }
  // Returns the completion cycle, or -1 for an address error.
  std::int64_t access(bool read, std::uint64_t dma_addr, unsigned len, std::uint64_t at) {
    std::vector<std::uint8_t> data(len);
    tlm::tlm_generic_payload trans;
    trans.set_command(read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
    trans.set_address(dma_addr);
    trans.set_data_ptr(data.data());
    trans.set_data_length(len);
    trans.set_streaming_width(len);
    trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_time delay(static_cast<double>(at), SC_NS);
    client_.socket->b_transport(trans, delay);
    last_data_ = data;
    if (trans.get_response_status() != tlm::TLM_OK_RESPONSE) return -1;
    return static_cast<std::int64_t>((sc_core::sc_time_stamp() + delay) / sc_time(1, SC_NS) + 0.5);
  }
  MemorySystem& mem() { return mem_; }
  MemoryImage& sram() { return *sram_; }
  [[nodiscard]] const std::vector<std::uint8_t>& last_data() const { return last_data_; }

 private:
  MemoryImage dram_;
  std::unique_ptr<MemoryImage> sram_;
  MemorySystem mem_;
  Client client_;
  std::vector<std::uint8_t> last_data_;
};

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}

// nv_large: 256-bit interface (32 B/cycle), bursts of one 32-byte atom, latency 1024.
TEST(CvSramPort, LatencyAndBandwidthFromTheConfiguration) {
  const HwConfig hw = load_hw_config("nv_large");
  ASSERT_NE(hw.mem.cvsram_bytes, 0u);
  Rig rig(hw);
  const std::uint64_t bpc = hw.dla.secondary_memif_width / 8;
  const std::uint64_t burst =
      std::uint64_t{hw.dla.memory_atomic_size} * hw.dla.secondary_memif_max_burst;
  const std::uint64_t lat = hw.dla.secondary_memif_latency;
  const std::uint64_t base = hw.mem.cvsram_base;
  const std::uint64_t cv = dma_address(MemorySpace::kCvSram, base);

  // 128 bytes at cycle 0: 128 / burst bursts of ceil(burst / bpc) cycles each, then the latency.
  const std::uint64_t t1 = (128 / burst) * ceil_div(burst, bpc);
  EXPECT_EQ(rig.access(true, cv, 128, 0), static_cast<std::int64_t>(t1 + lat));
  // 64 bytes asked at cycle 1 wait for the data path (free at t1).
  const std::uint64_t t2 = t1 + (64 / burst) * ceil_div(burst, bpc);
  EXPECT_EQ(rig.access(true, cv + 128, 64, 1), static_cast<std::int64_t>(t2 + lat));
  // A write of 96 bytes at cycle 5000: acknowledged once its data crossed the path.
  const std::uint64_t t3 = 5000 + (96 / burst) * ceil_div(burst, bpc);
  EXPECT_EQ(rig.access(false, cv + 256, 96, 5000), static_cast<std::int64_t>(t3));

  const mem::CvSramPort* port = rig.mem().cvsram();
  ASSERT_NE(port, nullptr);
  EXPECT_EQ(port->bytes_read(), 192u);
  EXPECT_EQ(port->bytes_written(), 96u);
  EXPECT_EQ(port->requests(), (128 + 64 + 96) / burst);
  EXPECT_EQ(port->busy_cycles(), t1 + (t2 - t1) + (t3 - 5000));
  // None of it went through the crossbar or DRAM.
  EXPECT_EQ(rig.mem().bytes_read(), 0u);
  EXPECT_EQ(rig.mem().bytes_written(), 0u);
}

// nv_full: 512-bit interface (64 B/cycle), bursts of 4 x 32-byte atoms, latency 128; a request
// not aligned to a burst splits at burst boundaries.
TEST(CvSramPort, BurstsSplitAtBurstBoundaries) {
  const HwConfig hw = load_hw_config("nv_full");
  Rig rig(hw);
  const std::uint64_t bpc = hw.dla.secondary_memif_width / 8;
  const std::uint64_t burst =
      std::uint64_t{hw.dla.memory_atomic_size} * hw.dla.secondary_memif_max_burst;
  ASSERT_EQ(burst, 128u);
  ASSERT_EQ(bpc, 64u);
  const std::uint64_t cv = dma_address(MemorySpace::kCvSram, hw.mem.cvsram_base);
  // [96, 288): bursts [96,128) 1 cycle, [128,256) 2 cycles, [256,288) 1 cycle.
  EXPECT_EQ(rig.access(true, cv + 96, 192, 10),
            static_cast<std::int64_t>(10 + 1 + 2 + 1 + hw.dla.secondary_memif_latency));
  EXPECT_EQ(rig.mem().cvsram()->requests(), 3u);
}

// Separate read and write paths (NVIDIA's performance sheet: 25 GB/s each at 1 GHz, 25 bytes a
// cycle) on nv_full's interface (bursts of 4 x 32 = 128 bytes, latency 128). A path is a sustained
// rate: N bytes take N / 25 cycles whatever the bursts (128 is no multiple of 25), and reads and
// writes do not wait for each other.
TEST(CvSramPort, SeparateReadAndWritePathsRunInParallelAtTheirRates) {
  const HwConfig hw = parse_hw_config(
      R"({"base": "nv_full", "cvsram_read_bytes_per_cycle": 25,
          "cvsram_write_bytes_per_cycle": 10})",
      "sheet.json");
  Rig rig(hw);
  const std::uint64_t lat = hw.dla.secondary_memif_latency;
  ASSERT_EQ(lat, 128u);
  const std::uint64_t cv = dma_address(MemorySpace::kCvSram, hw.mem.cvsram_base);
  // 1000 bytes read at cycle 0: 1000 / 25 = 40 cycles on the read path, then the latency.
  EXPECT_EQ(rig.access(true, cv, 1000, 0), static_cast<std::int64_t>(40 + lat));
  // 500 bytes written at cycle 0 do not wait for the read: 500 / 10 = 50 cycles.
  EXPECT_EQ(rig.access(false, cv + 4096, 500, 0), 50);
  // 50 more bytes read at cycle 0 queue behind the first read: (1000 + 50) / 25 = 42.
  EXPECT_EQ(rig.access(true, cv + 1024, 50, 0), static_cast<std::int64_t>(42 + lat));
  // A write of 5 bytes at cycle 10 waits for the write path (free at 50): 50 + 5 / 10, up to 51.
  EXPECT_EQ(rig.access(false, cv + 8192, 5, 10), 51);
  // ... and the next 5 bytes, at cycle 10 too, end exactly at 50 + 10 / 10 = 51.
  EXPECT_EQ(rig.access(false, cv + 8197, 5, 10), 51);

  const mem::CvSramPort* port = rig.mem().cvsram();
  ASSERT_NE(port, nullptr);
  EXPECT_TRUE(port->split_paths());
  EXPECT_EQ(port->read_bytes_per_cycle(), 25u);
  EXPECT_EQ(port->write_bytes_per_cycle(), 10u);
  EXPECT_EQ(port->bytes_read(), 1050u);
  EXPECT_EQ(port->bytes_written(), 510u);
  // Busy: 42 cycles of reading and 51 of writing.
  EXPECT_EQ(port->busy_cycles(), 42u + 51u);
}

// Many small requests (32-byte atoms, as the DMA issues them) stream at the full rate: 25 of
// them, 800 bytes, all issued at cycle 0, end at 800 / 25 = 32 cycles; request k ends at the
// cycle boundary at or after 32 k / 25.
TEST(CvSramPort, SmallRequestsStreamAtTheSustainedRate) {
  const HwConfig hw = parse_hw_config(
      R"({"base": "nv_full", "cvsram_read_bytes_per_cycle": 25,
          "cvsram_write_bytes_per_cycle": 25})",
      "sheet.json");
  Rig rig(hw);
  const std::uint64_t lat = hw.dla.secondary_memif_latency;
  const std::uint64_t cv = dma_address(MemorySpace::kCvSram, hw.mem.cvsram_base);
  for (std::uint64_t k = 1; k <= 25; ++k) {
    EXPECT_EQ(rig.access(true, cv + 32 * (k - 1), 32, 0),
              static_cast<std::int64_t>(ceil_div(32 * k, 25) + lat))
        << "request " << k;
  }
}

// The same traffic on one shared path of 25 bytes a cycle: the write waits for the read, and each
// 128-byte burst holds the path for whole cycles (ceil(128 / 25) = 6): 1000 bytes from 0 are 7
// bursts of 128 (42 cycles) and one of 104 (5), 47 cycles; 500 bytes written from 4096 are three
// bursts of 128 and one of 116, 6 + 6 + 6 + 5 = 23 more.
TEST(CvSramPort, OneSharedPathSerializesReadsAndWrites) {
  const HwConfig hw =
      parse_hw_config(R"({"base": "nv_full", "cvsram_bytes_per_cycle": 25})", "shared.json");
  Rig rig(hw);
  const std::uint64_t lat = hw.dla.secondary_memif_latency;
  const std::uint64_t cv = dma_address(MemorySpace::kCvSram, hw.mem.cvsram_base);
  EXPECT_EQ(rig.access(true, cv, 1000, 0), static_cast<std::int64_t>(47 + lat));
  EXPECT_EQ(rig.access(false, cv + 4096, 500, 0), 47 + 23);
  EXPECT_FALSE(rig.mem().cvsram()->split_paths());
  EXPECT_EQ(rig.mem().cvsram()->bytes_per_cycle(), 25u);
}

TEST(CvSramPort, ReadsReturnTheCvSramImageAndOutOfRangeIsAnAddressError) {
  const HwConfig hw = load_hw_config("nv_large");
  Rig rig(hw);
  const std::uint64_t base = hw.mem.cvsram_base;
  const std::vector<std::uint8_t> bytes = {5, 6, 7, 8};
  rig.sram().write(base + 64, bytes.data(), 4);
  ASSERT_GE(rig.access(true, dma_address(MemorySpace::kCvSram, base + 64), 4, 0), 0);
  EXPECT_EQ(rig.last_data(), bytes);
  // The same address in DRAM is another memory: zeros.
  ASSERT_GE(rig.access(true, base + 64, 4, 0), 0);
  EXPECT_EQ(rig.last_data(), (std::vector<std::uint8_t>{0, 0, 0, 0}));
  const std::uint64_t end = base + hw.mem.cvsram_bytes;
  EXPECT_EQ(rig.access(true, dma_address(MemorySpace::kCvSram, end - 2), 4, 0), -1);
}

// Without a secondary interface (nv_small) there is no CVIF: a RAM_TYPE=CV request is timed as
// the DRAM request at the same address.
TEST(CvSramPort, WithoutSecondaryInterfaceCvRequestsGoToDram) {
  const HwConfig hw = load_hw_config("nv_small");
  Rig rig(hw);
  EXPECT_EQ(rig.mem().cvsram(), nullptr);
  const std::int64_t dram = rig.access(true, 0x1000, 64, 0);
  const std::int64_t cv = rig.access(true, dma_address(MemorySpace::kCvSram, 0x2000), 64, 10000);
  EXPECT_EQ(cv - 10000, dram);
  EXPECT_EQ(rig.mem().bytes_read(), 128u);
}

}  // namespace
}  // namespace octasim
