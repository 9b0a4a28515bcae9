// Placement of a compiled network's data in the CV-SRAM (firmware/net/placement.hpp) on a network
// small enough to lay out by hand, on nv_full (32-byte atoms: C' = 32 INT8 channels) with CV-SRAMs
// of chosen sizes at 0x5000_0000:
//
//   x 1x8x8x8 -> MaxPool 2x2/2 -> p 1x8x4x4 -> Conv 16x8x3x3 (pad 1) + bias + Relu -> y 1x16x4x4
//
// (a pooling before the convolution: nothing to fuse). Activations (memory_layout.hpp: first fit
// from 0xC000_0000, 256-byte aligned):
//   x: 8 x 8 atoms of 32 bytes = 2048 bytes at +0x000 (the graph input: never released)
//   p: 4 x 4 atoms             =  512 bytes at +0x800
//   y: 4 x 4 atoms             =  512 bytes at +0xA00 (nothing was free yet)
//   footprint 0xC00 = 3072 bytes.
// Constants (from 0x8000_0000, 256-byte aligned), in program order:
//   conv weights: 16 kernels x 3 x 3 x 8 bytes = 1152 (a multiple of 128: no padding) at +0x000
//   conv bias/scale table: 16 channels padded to C' = 32, 4 bytes each = 128, at +0x500
// So everything needs 3072 + 1280 + 128 = 4480 bytes of CV-SRAM (weights after the activations at
// +0xC00, the table at +0x1100).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "firmware/net/compiler.hpp"
#include "firmware/net/placement.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using firmware::Ram;
using nettest::GraphBuilder;
using nettest::ints_attr;
using nettest::ramp;

constexpr std::uint64_t kCv = 0x50000000;
constexpr std::uint64_t kAct = 0xC0000000;
constexpr std::uint64_t kConst = 0x80000000;

models::graph::Graph pool_conv_graph() {
  GraphBuilder b;
  b.input("x", {1, 8, 8, 8});
  auto& mp = b.node("MaxPool", "pool", {"x"}, {"p"});
  mp.attributes["kernel_shape"] = ints_attr({2, 2});
  mp.attributes["strides"] = ints_attr({2, 2});
  b.constant("W", {16, 8, 3, 3}, ramp(16 * 8 * 3 * 3));
  b.constant("B", {16}, ramp(16));
  auto& conv = b.node("Conv", "conv", {"p", "W", "B"}, {"c"});
  conv.attributes["kernel_shape"] = ints_attr({3, 3});
  conv.attributes["pads"] = ints_attr({1, 1, 1, 1});
  b.node("Relu", "relu", {"c"}, {"y"});
  b.output("y");
  return b.graph();
}

HwConfig nv_full_with_cvsram(unsigned bytes) {
  return parse_hw_config(R"({"base": "nv_full", "cvsram_base": 1342177280, "cvsram_bytes": )" +
                             std::to_string(bytes) + "}",
                         "test.json");
}

fn::NetProgram compile(const HwConfig& hw, bool cvsram = true,
                       fn::ClipCalibration calibration = fn::ClipCalibration::kMax) {
  fn::CompiledNetwork net = fn::prepare_network(pool_conv_graph(), hw);
  fn::QuantOptions q;
  q.calibration = calibration;
  fn::quantize_network(net, hw, fn::random_images(net.plan, 4), q, nullptr,
                       fn::PlacementOptions{cvsram});
  return std::move(net.program);
}

struct Layout {
  const firmware::ConvLayer* conv;
  const firmware::PdpLayer* pdp;
};

Layout layout(const fn::NetProgram& p) {
  EXPECT_EQ(p.layers.size(), 2U);
  return {&std::get<firmware::ConvLayer>(p.layers.at(1).hw),
          &std::get<firmware::PdpLayer>(p.layers.at(0).hw)};
}

void expect_surface(const firmware::FeatureSurface& s, std::uint64_t address, Ram ram,
                    const char* what) {
  EXPECT_EQ(s.address, address) << what << std::hex << " at 0x" << s.address;
  EXPECT_EQ(s.ram, ram) << what;
}

// What build_program laid out, before placement: the sizes above.
TEST(Placement, TheHandLayoutOfTheNetwork) {
  const fn::NetProgram p = compile(nv_full_with_cvsram(8192), false);
  const Layout l = layout(p);
  expect_surface(l.pdp->src, kAct + 0x000, Ram::kMc, "x");
  expect_surface(l.pdp->dst, kAct + 0x800, Ram::kMc, "p");
  expect_surface(l.conv->src, kAct + 0x800, Ram::kMc, "p");
  expect_surface(l.conv->dst, kAct + 0xA00, Ram::kMc, "y");
  EXPECT_EQ(p.memory_end, kAct + 0xC00);
  ASSERT_EQ(p.constants.size(), 2U);
  EXPECT_EQ(p.constants[0].address, kConst);
  EXPECT_EQ(p.constants[0].bytes.size(), 1152U);
  EXPECT_EQ(p.constants[1].address, kConst + 0x500);
  EXPECT_EQ(p.constants[1].bytes.size(), 128U);
  EXPECT_EQ(l.conv->weight_address, kConst);
  ASSERT_TRUE(l.conv->sdp.bias_scale.has_value());
  EXPECT_EQ(l.conv->sdp.bias_scale->address, kConst + 0x500);
  // --no-cvsram: everything counted in DRAM.
  EXPECT_EQ(p.placement.activation_cvsram_bytes, 0U);
  EXPECT_EQ(p.placement.activation_dram_bytes, 3072U);
  EXPECT_EQ(p.placement.constant_cvsram_bytes, 0U);
  EXPECT_EQ(p.placement.constant_dram_bytes, 1280U);
  EXPECT_EQ(p.placement.cvsram_begin, p.placement.cvsram_end);
}

TEST(Placement, ACvSramThatHoldsEverything) {
  const fn::NetProgram p = compile(nv_full_with_cvsram(8192));
  const Layout l = layout(p);
  // The activation region moved as a whole to the CV-SRAM's start, offsets kept.
  expect_surface(l.pdp->src, kCv + 0x000, Ram::kCv, "x");
  expect_surface(l.pdp->dst, kCv + 0x800, Ram::kCv, "p");
  expect_surface(l.conv->src, kCv + 0x800, Ram::kCv, "p");
  expect_surface(l.conv->dst, kCv + 0xA00, Ram::kCv, "y");
  expect_surface(p.input.surface, kCv, Ram::kCv, "the input");
  expect_surface(p.outputs.at(0).surface, kCv + 0xA00, Ram::kCv, "the output");
  // Then the constants in program order: weights at +0xC00, the table at +0xC00 + 0x500.
  EXPECT_EQ(l.conv->weight_address, kCv + 0xC00);
  EXPECT_EQ(l.conv->weight_ram, Ram::kCv);
  EXPECT_EQ(l.conv->sdp.bias_scale->address, kCv + 0x1100);
  EXPECT_EQ(l.conv->sdp.bias_scale->ram, Ram::kCv);
  EXPECT_EQ(p.constants[0].address, kCv + 0xC00);
  EXPECT_EQ(p.constants[0].ram, Ram::kCv);
  EXPECT_EQ(p.constants[1].address, kCv + 0x1100);
  EXPECT_EQ(p.constants[1].ram, Ram::kCv);
  EXPECT_EQ(p.placement.activation_cvsram_bytes, 3072U);
  EXPECT_EQ(p.placement.activation_dram_bytes, 0U);
  EXPECT_EQ(p.placement.constant_cvsram_bytes, 1280U);
  EXPECT_EQ(p.placement.constant_dram_bytes, 0U);
  EXPECT_EQ(p.placement.cvsram_begin, kCv);
  EXPECT_EQ(p.placement.cvsram_end, kCv + 0x1200);
  EXPECT_EQ(fn::placement_summary(p.placement),
            "memory: activations 3072 B CV-SRAM, 0 B DRAM; constants (weights, tables) 1280 B "
            "CV-SRAM, 0 B DRAM");
}

// 3072 bytes: the activations exactly; no room for a constant.
TEST(Placement, ACvSramThatHoldsOnlyTheActivations) {
  const fn::NetProgram p = compile(nv_full_with_cvsram(3072));
  const Layout l = layout(p);
  expect_surface(l.pdp->src, kCv + 0x000, Ram::kCv, "x");
  expect_surface(l.conv->dst, kCv + 0xA00, Ram::kCv, "y");
  EXPECT_EQ(l.conv->weight_address, kConst);
  EXPECT_EQ(l.conv->weight_ram, Ram::kMc);
  EXPECT_EQ(l.conv->sdp.bias_scale->address, kConst + 0x500);
  EXPECT_EQ(l.conv->sdp.bias_scale->ram, Ram::kMc);
  EXPECT_EQ(p.constants[0].ram, Ram::kMc);
  EXPECT_EQ(p.constants[1].ram, Ram::kMc);
  EXPECT_EQ(p.placement.activation_cvsram_bytes, 3072U);
  EXPECT_EQ(p.placement.constant_cvsram_bytes, 0U);
  EXPECT_EQ(p.placement.constant_dram_bytes, 1280U);
}

// 3840 bytes: after the activations 768 are left: the weights (1152) do not fit and stay in DRAM,
// the table after them (128) does, at +0xC00.
TEST(Placement, AConstantThatDoesNotFitLeavesRoomForALaterOne) {
  const fn::NetProgram p = compile(nv_full_with_cvsram(3840));
  const Layout l = layout(p);
  EXPECT_EQ(l.conv->weight_address, kConst);
  EXPECT_EQ(l.conv->weight_ram, Ram::kMc);
  EXPECT_EQ(l.conv->sdp.bias_scale->address, kCv + 0xC00);
  EXPECT_EQ(l.conv->sdp.bias_scale->ram, Ram::kCv);
  EXPECT_EQ(p.placement.constant_cvsram_bytes, 128U);
  EXPECT_EQ(p.placement.constant_dram_bytes, 1152U);
  EXPECT_EQ(p.placement.cvsram_end, kCv + 0xD00);  // the table's 128 bytes, aligned to 256
}

// 2600 bytes (0xA28): y's buffer [0xA00, 0xC00) straddles it, so y stays in DRAM and only x and p
// (2560 bytes) move; the 40 bytes left take no constant.
TEST(Placement, ACvSramThatHoldsPartOfTheActivations) {
  const fn::NetProgram p = compile(nv_full_with_cvsram(2600));
  const Layout l = layout(p);
  expect_surface(l.pdp->src, kCv + 0x000, Ram::kCv, "x");
  expect_surface(l.pdp->dst, kCv + 0x800, Ram::kCv, "p");
  expect_surface(l.conv->src, kCv + 0x800, Ram::kCv, "p");
  expect_surface(l.conv->dst, kAct + 0xA00, Ram::kMc, "y");
  expect_surface(p.outputs.at(0).surface, kAct + 0xA00, Ram::kMc, "the output");
  EXPECT_EQ(p.placement.activation_cvsram_bytes, 2560U);
  EXPECT_EQ(p.placement.activation_dram_bytes, 512U);
  EXPECT_EQ(p.placement.constant_dram_bytes, 1280U);
}

// 64 bytes: x straddles it, so no activation moves, and no constant is that small.
TEST(Placement, ACvSramThatHoldsNothing) {
  const fn::NetProgram p = compile(nv_full_with_cvsram(64));
  const Layout l = layout(p);
  expect_surface(l.pdp->src, kAct, Ram::kMc, "x");
  expect_surface(l.conv->dst, kAct + 0xA00, Ram::kMc, "y");
  EXPECT_EQ(l.conv->weight_ram, Ram::kMc);
  EXPECT_EQ(p.placement.activation_cvsram_bytes, 0U);
  EXPECT_EQ(p.placement.activation_dram_bytes, 3072U);
  EXPECT_EQ(p.placement.constant_cvsram_bytes, 0U);
  EXPECT_EQ(p.placement.cvsram_begin, p.placement.cvsram_end);
}

// No secondary memory interface (nv_small), or placement turned off: all in DRAM.
TEST(Placement, NothingMovesWithoutASecondaryInterfaceOrWhenTurnedOff) {
  for (const bool nv_small : {true, false}) {
    const HwConfig hw = nv_small ? load_hw_config("nv_small") : nv_full_with_cvsram(1 << 20);
    const fn::NetProgram p = compile(hw, /*cvsram=*/nv_small);  // nv_full: turned off
    for (const fn::NetLayer& layer : p.layers) {
      std::visit(
          [](const auto& hwl) {
            using T = std::decay_t<decltype(hwl)>;
            if constexpr (std::is_same_v<T, firmware::ConvLayer>) {
              EXPECT_EQ(hwl.weight_ram, Ram::kMc);
            }
            if constexpr (std::is_same_v<T, firmware::ConvLayer> ||
                          std::is_same_v<T, firmware::PdpLayer>) {
              EXPECT_EQ(hwl.src.ram, Ram::kMc);
              EXPECT_EQ(hwl.dst.ram, Ram::kMc);
              EXPECT_GE(hwl.src.address, kAct);
            }
          },
          layer.hw);
    }
    for (const fn::ConstantBlob& c : p.constants) EXPECT_EQ(c.ram, Ram::kMc);
    EXPECT_EQ(p.placement.activation_cvsram_bytes + p.placement.constant_cvsram_bytes, 0U);
    EXPECT_GT(p.placement.activation_dram_bytes, 0U);
  }
}

// Calibration octav-device: the OCTAV unit, which has no secondary interface, reads the
// convolution's 8-bit output c; an SDP then snaps it into a buffer of its own. By the pool
// (memory_layout.hpp): x +0x000, p +0x800, c +0xA00, the snapped c' +0xC00 (then c's and, after
// the convolution, p's buffers are free); footprint 0xE00. c's buffer [0xA00, 0xC00) stays in
// DRAM; x, p and c' move; the constants follow at +0xE00.
TEST(Placement, WhatTheOctavUnitReadsStaysInDram) {
  const fn::NetProgram p =
      compile(nv_full_with_cvsram(8192), true, fn::ClipCalibration::kOctavDevice);
  ASSERT_EQ(p.layers.size(), 4U);  // PDP, CONV, OCTAV, SDP (snap)
  const auto& pdp = std::get<firmware::PdpLayer>(p.layers[0].hw);
  const auto& conv = std::get<firmware::ConvLayer>(p.layers[1].hw);
  const auto& octav = std::get<firmware::OctavLayer>(p.layers[2].hw);
  const auto& snap = std::get<firmware::FakeQuantSdpLayer>(p.layers[3].hw);
  expect_surface(pdp.src, kCv + 0x000, Ram::kCv, "x");
  expect_surface(pdp.dst, kCv + 0x800, Ram::kCv, "p");
  expect_surface(conv.src, kCv + 0x800, Ram::kCv, "p");
  expect_surface(conv.dst, kAct + 0xA00, Ram::kMc, "c");
  expect_surface(octav.src, kAct + 0xA00, Ram::kMc, "c (OCTAV)");
  expect_surface(snap.src, kAct + 0xA00, Ram::kMc, "c (SDP)");
  expect_surface(snap.dst, kCv + 0xC00, Ram::kCv, "c'");
  expect_surface(p.outputs.at(0).surface, kCv + 0xC00, Ram::kCv, "the output");
  EXPECT_EQ(p.memory_end, kAct + 0xE00);
  EXPECT_EQ(p.placement.activation_cvsram_bytes, 3072U);
  EXPECT_EQ(p.placement.activation_dram_bytes, 512U);
  EXPECT_EQ(conv.weight_address, kCv + 0xE00);
  EXPECT_EQ(conv.sdp.bias_scale->address, kCv + 0x1300);
  EXPECT_EQ(p.placement.constant_cvsram_bytes, 1280U);
}

// Softmax on the PPU (soc_large, FP16), which reaches DRAM only: its surfaces, its push buffer
// and the descriptor only the push buffer's bytes point to all stay in DRAM, with room to spare.
TEST(Placement, WhatThePpuReadsStaysInDram) {
  GraphBuilder b;
  b.input("x", {1, 4, 4, 4});
  b.node("Softmax", "softmax", {"x"}, {"y"}).attributes["axis"] = nettest::int_attr(1);
  b.output("y");
  const HwConfig hw = load_hw_config("soc_large");
  ASSERT_TRUE(hw.dla.secondary_memif);
  fn::CompiledNetwork net = fn::prepare_network(b.graph(), hw);
  fn::QuantOptions q;
  q.precision = fn::NetPrecision::kFp16;
  fn::quantize_network(net, hw, fn::random_images(net.plan, 1), q);
  const fn::NetProgram& p = net.program;
  ASSERT_EQ(p.layers.size(), 1U);
  const auto& sm = std::get<fn::PpuSoftmaxLayer>(p.layers[0].hw);
  EXPECT_EQ(sm.src.ram, Ram::kMc);
  EXPECT_EQ(sm.dst.ram, Ram::kMc);
  EXPECT_GE(sm.src.address, kAct);
  ASSERT_EQ(p.constants.size(), 2U);  // the descriptor, the push buffer
  for (const fn::ConstantBlob& c : p.constants) {
    EXPECT_EQ(c.ram, Ram::kMc) << c.what;
    EXPECT_GE(c.address, kConst) << c.what;
  }
  EXPECT_EQ(sm.push_buffer, p.constants[1].address);
  EXPECT_EQ(p.placement.activation_cvsram_bytes + p.placement.constant_cvsram_bytes, 0U);
}

// The usable CV-SRAM never overlaps the compiler's DRAM regions [0x8000_0000, 2^32).
TEST(Placement, TheUsableCvSramAvoidsTheDramRegions) {
  const auto usable = [](std::uint64_t base, std::uint64_t bytes) {
    return fn::usable_cvsram(parse_hw_config(R"({"base": "nv_full", "cvsram_base": )" +
                                                 std::to_string(base) + R"(, "cvsram_bytes": )" +
                                                 std::to_string(bytes) + "}",
                                             "u.json"));
  };
  using Range = std::pair<std::uint64_t, std::uint64_t>;
  EXPECT_EQ(usable(0x50000000, 0x2000000), (Range{0x50000000, 0x52000000}));
  EXPECT_EQ(usable(0x70000000, 0x20000000), (Range{0x70000000, 0x80000000}));
  EXPECT_EQ(usable(0x90000000, 0x80000000), (Range{0x100000000, 0x110000000}));
  EXPECT_EQ(usable(0x90000000, 0x1000), (Range{0, 0}));
  EXPECT_EQ(fn::usable_cvsram(load_hw_config("nv_small")), (Range{0, 0}));
}

}  // namespace
}  // namespace octasim
