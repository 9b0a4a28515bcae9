// The SMs' line requests go through a DmaClient (sim/core/dma_client.hpp): each is presented to
// the memory at the simulated time the SM issues it (no delay annotated into the future), so the
// memory serves them in time order. A recording target stands in for the memory system: it notes
// every request's initiator port, command, time and annotated delay and answers after a fixed
// latency. A GEMM on soc_small stays bit-exact against models::ops::gemm_reference, every SM
// request arrives with a zero delay, each SM's requests arrive in time order, and one SM's
// consecutive requests are at least the port's cycles for the bytes apart
// (ppu_sm_bytes_per_cycle). SystemC: one elaboration per process.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>

#include "tests/ppu/ppu_test_util.hpp"

namespace octasim::ppu::test {
namespace {

class RecordingTarget final : public sc_core::sc_module {
 public:
  struct Entry {
    int port;
    tlm::tlm_command cmd;
    sc_core::sc_time at;
    sc_core::sc_time delay;
    unsigned bytes;
  };

  RecordingTarget(const sc_core::sc_module_name& name, const sc_core::sc_time& latency)
      : sc_core::sc_module(name), latency_(latency) {
    socket.register_b_transport(this, &RecordingTarget::b_transport);
  }

  tlm_utils::multi_passthrough_target_socket<RecordingTarget> socket{"socket"};
  std::vector<Entry> log;

 private:
  void b_transport(int port, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    log.push_back(
        {port, trans.get_command(), sc_core::sc_time_stamp(), delay, trans.get_data_length()});
    delay += latency_;
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
  }
  sc_core::sc_time latency_;
};

TEST(PpuDma, SmRequestsArePresentedAtTheirIssueTime) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  const HwConfig hw = soc_small();
  const sc_core::sc_time period(1, sc_core::SC_NS);
  MemoryImage image(hw.dla.mem_address_width);
  TestHost host("host", period);
  RecordingTarget mem("mem", period * 200.0);
  Ppu ppu("ppu", hw, image, host, period);
  ppu.bind(mem.socket);

  constexpr unsigned m = 128, n = 128, k = 128;
  std::mt19937 rng(5);
  const auto a = random_input(GemmType::kFp16Fp32, std::size_t{m} * k, rng);
  const auto b = random_input(GemmType::kFp16Fp32, std::size_t{k} * n, rng);
  std::uint64_t next = 0x100000;
  const auto put = [&](const std::vector<std::uint8_t>& bytes) {
    const std::uint64_t at = next;
    image.write(at, bytes.data(), bytes.size());
    next = (next + bytes.size() + 255) / 256 * 256;
    return at;
  };
  const std::uint64_t pa = put(a), pb_b = put(b);
  const std::uint64_t d = put(std::vector<std::uint8_t>(std::size_t{m} * n * 4));
  F::PushBuffer pb;
  pb.launch(
      put(gemm_descriptor(GemmType::kFp16Fp32, m, n, k, pa, pb_b, 0, d, F::ShapePolicy::kPad, false)
              .bytes()));
  const auto bytes = pb.bytes();
  const std::uint64_t base = put(bytes);
  host.set_reg(P::S_CH0_PB_BASE_LOW::kAddr, static_cast<std::uint32_t>(base));
  host.set_reg(P::S_CH0_PB_BASE_HIGH::kAddr, static_cast<std::uint32_t>(base >> 32));
  host.set_reg(P::S_CH0_PB_SIZE::kAddr, static_cast<std::uint32_t>(bytes.size()));
  host.set_reg(P::S_CH0_PUT::kAddr, static_cast<std::uint32_t>(bytes.size()));
  ppu.doorbell(0);
  bool idle = false;
  for (int i = 0; i < 1000 && !idle; ++i) {
    sc_core::sc_start(period * 100000.0);
    idle = !ppu.busy();
  }
  ASSERT_TRUE(idle);

  const auto want =
      models::ops::gemm_reference({GemmType::kFp16Fp32, m, n, k, a.data(), b.data(), nullptr});
  std::vector<std::uint8_t> got(want.d.size());
  image.read(d, got.data(), got.size());
  EXPECT_TRUE(got == want.d);

  // Port 0 is the front end (bound first); ports 1.. are the SMs.
  const unsigned port_bytes = std::max(1u, hw.ppu.sm_bytes_per_cycle);
  std::vector<sc_core::sc_time> last(hw.ppu.gpcs * hw.ppu.sms_per_gpc + 1, sc_core::SC_ZERO_TIME);
  std::vector<sc_core::sc_time> port_free(last.size(), sc_core::SC_ZERO_TIME);
  std::size_t sm_requests = 0, reads = 0, writes = 0;
  for (const auto& e : mem.log) {
    if (e.port == 0) continue;
    ASSERT_LT(static_cast<std::size_t>(e.port), last.size());
    ++sm_requests;
    (e.cmd == tlm::TLM_READ_COMMAND ? reads : writes) += 1;
    EXPECT_EQ(e.delay, sc_core::SC_ZERO_TIME) << "port " << e.port << " at " << e.at;
    EXPECT_GE(e.at, last[e.port]) << "port " << e.port;
    EXPECT_GE(e.at, port_free[e.port]) << "port " << e.port;
    last[e.port] = e.at;
    port_free[e.port] =
        e.at + period * static_cast<double>((e.bytes + port_bytes - 1) / port_bytes);
  }
  EXPECT_GT(reads, 0u);
  EXPECT_GT(writes, 0u);
  std::uint64_t counted = 0;
  for (const stats::Group* g : ppu.statistics()) {
    for (std::size_t i = 0; i < g->size(); ++i) {
      if (g->full_name(i).find(".requests") != std::string::npos &&
          g->full_name(i).find(".sm") != std::string::npos) {
        counted += g->value(i);
      }
    }
  }
  EXPECT_EQ(sm_requests, counted);
}

}  // namespace
}  // namespace octasim::ppu::test

int sc_main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
