// Engines in parallel on the cycle-level SoC. A network of two independent 1x1 convolutions
// reading the same input (GoogLeNet's branches), joined by a Concat, then a 3x3 convolution whose
// MaxPool runs on the fly, compiled for nv_full and run twice: with the serial schedule (every
// layer awaited before the next is programmed) and with the overlapped one (firmware/net/
// schedule.hpp: a layer waits only for what it depends on). Checked:
//   - PDP pools on the fly while the convolution runs (its layer record lies inside the CONV's);
//   - overlapped, the second branch's weights load during the first branch: CDMA's weight client
//     fetches them ahead into free CBUF banks (its byte counter moves during the first layer),
//     and the second layer skips them;
//   - the overlapped network takes fewer cycles, and both runs are bit-exact against the
//     quantized reference executor.
// SystemC elaborates one design per process: each run happens in a child process (fork) and
// reports back through a pipe.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <variant>

#include <gtest/gtest.h>
#include <systemc>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"
#include "tests/net/net_test_graph.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using nettest::GraphBuilder;
using nettest::ints_attr;
using nettest::ramp;

// x: 256 x 7 x 7; a = 1x1 conv to 64 (16 KiB of weights); b = 3x3 conv to 128 (288 KiB of
// weights, which CDMA can fetch into the banks a leaves free: a holds 2 of nv_full's 16);
// concat; 3x3 conv to 64 with a 2x2 MaxPool.
models::graph::Graph branches() {
  GraphBuilder b;
  b.input("x", {1, 256, 7, 7});
  b.constant("Wa", {64, 256, 1, 1}, ramp(64 * 256));
  std::vector<float> wb = ramp(128 * 256 * 9 + 7);
  wb.erase(wb.begin(), wb.begin() + 7);  // other weights than Wa's
  b.constant("Wb", {128, 256, 3, 3}, wb);
  b.node("Conv", "a", {"x", "Wa"}, {"ya"});
  b.node("Relu", "ra", {"ya"}, {"a"});
  b.node("Conv", "b", {"x", "Wb"}, {"yb"}).attributes["pads"] = ints_attr({1, 1, 1, 1});
  b.node("Relu", "rb", {"yb"}, {"bb"});
  b.node("Concat", "cat", {"a", "bb"}, {"c"}).attributes["axis"] = nettest::int_attr(1);
  b.constant("Wc", {64, 192, 3, 3}, ramp(64 * 192 * 9));
  b.node("Conv", "conv", {"c", "Wc"}, {"yc"}).attributes["pads"] = ints_attr({1, 1, 1, 1});
  b.node("Relu", "rc", {"yc"}, {"r"});
  auto& mp = b.node("MaxPool", "pool", {"r"}, {"y"});
  mp.attributes["kernel_shape"] = ints_attr({2, 2});
  mp.attributes["strides"] = ints_attr({2, 2});
  b.output("y");
  return b.graph();
}

struct Span {
  std::uint64_t start = 0, end = 0;
  std::uint64_t weight_bytes = 0;  // what CDMA's weight client read while the layer ran
};

struct RunResult {
  bool compiled_as_expected = false;  // CONV, CONV, CONV with PDP on the fly
  bool bit_exact = false;
  std::uint64_t cycles = 0;
  Span conv_a, conv_b, conv_c, pdp;
  std::uint64_t weight_bytes_a = 0, weight_bytes_b = 0;  // the branches' weights in memory
};

RunResult run(fn::Schedule schedule) {
  RunResult out;
  const HwConfig hw = load_hw_config("nv_full");
  fn::CompiledNetwork net = fn::prepare_network(branches(), hw);
  const models::graph::Tensor images = fn::random_images(net.plan, 1, 3);
  fn::quantize_network(net, hw, images, fn::QuantOptions{});
  const fn::NetProgram& prog = net.program;
  out.compiled_as_expected = prog.layers.size() == 3 &&
                             std::holds_alternative<firmware::ConvLayer>(prog.layers[0].hw) &&
                             std::holds_alternative<firmware::ConvLayer>(prog.layers[1].hw) &&
                             std::holds_alternative<firmware::ConvPoolLayer>(prog.layers[2].hw);
  if (!out.compiled_as_expected) return out;
  out.weight_bytes_a =
      firmware::plan_conv(std::get<firmware::ConvLayer>(prog.layers[0].hw), prog.hw).weight_bytes;
  out.weight_bytes_b =
      firmware::plan_conv(std::get<firmware::ConvLayer>(prog.layers[1].hw), prog.hw).weight_bytes;

  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", hw);
  soc::HostAdapter device(soc);
  trace::DeviceMmio mmio(device, 50'000'000);
  firmware::HostMemory golden;
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and the CV-SRAM by address
  fn::load_constants(prog, memory);
  fn::load_constants(prog, golden);
  fn::GroupState groups;
  const std::uint64_t start = device.cycle();
  const fn::ImageRun r = fn::run_image(prog, images, 0, memory, mmio, groups, golden, schedule);
  out.bit_exact = r.differing_output == prog.outputs.size();
  std::vector<Span> convs;
  for (const soc::LayerTiming& l : soc.dla().layers()) {
    const Span s{l.start_cycle, l.end_cycle, soc.dla().layer_counter(l, "cdma_wt_bytes")};
    if (l.engine == "CONV") convs.push_back(s);
    if (l.engine == "PDP") out.pdp = s;
    out.cycles = std::max(out.cycles, l.end_cycle - start);
  }
  if (convs.size() == 3) {
    out.conv_a = convs[0];
    out.conv_b = convs[1];
    out.conv_c = convs[2];
  }
  return out;
}

// `run(schedule)` in a child process.
RunResult run_in_child(fn::Schedule schedule) {
  int fd[2];
  if (pipe(fd) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    const RunResult r = run(schedule);
    const ssize_t n = write(fd[1], &r, sizeof r);
    _exit(n == static_cast<ssize_t>(sizeof r) ? 0 : 1);
  }
  close(fd[1]);
  RunResult r;
  const ssize_t n = read(fd[0], &r, sizeof r);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(n, static_cast<ssize_t>(sizeof r));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return r;
}

TEST(EnginesOverlap, PoolOnTheFlyNextWeightsAheadAndFewerCycles) {
  const RunResult serial = run_in_child(fn::Schedule::kSerial);
  const RunResult overlap = run_in_child(fn::Schedule::kOverlap);
  ASSERT_TRUE(serial.compiled_as_expected);
  ASSERT_TRUE(overlap.compiled_as_expected);
  EXPECT_TRUE(serial.bit_exact);
  EXPECT_TRUE(overlap.bit_exact);

  // PDP pools the convolution's output as SDP streams it: it starts with the convolution and
  // works while it runs.
  for (const RunResult* r : {&serial, &overlap}) {
    EXPECT_GE(r->pdp.start, r->conv_c.start);
    EXPECT_LT(r->pdp.start, r->conv_c.end);
    EXPECT_GT(r->pdp.end, r->conv_c.start);
  }

  // Serial: the second branch is enabled only after the first is done, so CDMA fetches each
  // layer's weights while it runs. Overlapped: the second waits in CONV's other register group
  // while the first runs; CDMA's weight client fetches its kernel groups then (into the banks the
  // first leaves free), and the second skips them. Every weight byte is still read once.
  EXPECT_GE(serial.conv_b.start, serial.conv_a.end);
  EXPECT_EQ(serial.conv_a.weight_bytes, serial.weight_bytes_a);
  EXPECT_EQ(serial.conv_b.weight_bytes, serial.weight_bytes_b);
  EXPECT_GT(overlap.conv_a.weight_bytes, overlap.weight_bytes_a);  // some of b's, ahead
  EXPECT_LT(overlap.conv_b.weight_bytes, overlap.weight_bytes_b);
  EXPECT_EQ(overlap.conv_a.weight_bytes + overlap.conv_b.weight_bytes,
            overlap.weight_bytes_a + overlap.weight_bytes_b);

  // The overlap shortens the second branch (its weights were mostly in CBUF when it started)
  // and the network.
  EXPECT_LT(overlap.conv_b.end - overlap.conv_b.start, serial.conv_b.end - serial.conv_b.start);
  EXPECT_LT(overlap.cycles, serial.cycles);
}

}  // namespace
}  // namespace octasim
