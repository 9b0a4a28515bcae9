// The PPU's node kernel (kNode) on a standalone PPU: a kernel image (models::ops::encode_node)
// in memory, a push buffer launching node_descriptor(); the output bytes (padding lanes and stride
// gaps included) equal models::ops::run_node on a copy of the memory; the cycles grow with the
// tensor; a MatMul runs on the tensor path; a corrupt image stops the channel with kBadKernel and
// an image outside memory with kBadAddress.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <systemc>

#include "firmware/ppu/commands.hpp"
#include "models/numerics/float_format.hpp"
#include "models/ops/ppu_node.hpp"
#include "tests/ppu/ppu_test_util.hpp"

namespace octasim::ppu::test {
namespace {

namespace M = models::ops;

// An FP16 surface place for a 1 x C x H x W tensor, 32-byte atoms, a 32-byte gap after each line.
M::TensorPlace surface(std::uint64_t addr, std::uint32_t c, std::uint32_t h, std::uint32_t w) {
  M::TensorPlace p;
  p.address = addr;
  p.shape = {1, c, h, w};
  p.width = w, p.height = h, p.channels = c, p.atom_bytes = 32;
  p.line_stride = w * 32 + 32;
  p.surface_stride = h * p.line_stride;
  return p;
}

// Random FP16 values everywhere in the place's span (padding lanes and gaps too), in both
// memories.
void fill(const M::TensorPlace& p, MemoryImage& image, MemoryImage& golden, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  std::vector<std::uint8_t> b(M::place_bytes(p));
  for (std::size_t i = 0; i + 1 < b.size(); i += 2) {
    const std::uint16_t v = models::fp16_from_double(u(rng));
    b[i] = static_cast<std::uint8_t>(v), b[i + 1] = static_cast<std::uint8_t>(v >> 8);
  }
  image.write(p.address, b.data(), b.size());
  golden.write(p.address, b.data(), b.size());
}

std::vector<std::uint8_t> span(const MemoryImage& m, const M::TensorPlace& p) {
  std::vector<std::uint8_t> v(M::place_bytes(p));
  m.read(p.address, v.data(), v.size());
  return v;
}

// Places the image and its descriptor; returns the descriptor's address.
std::uint64_t launchable(Bench& bench, const M::NodeImage& node) {
  const std::vector<std::uint8_t> bytes = M::encode_node(node);
  const std::uint64_t at = bench.put(bytes);
  return bench.put(F::node_descriptor(at, static_cast<std::uint32_t>(bytes.size())).bytes());
}

TEST(PpuNode, ErfEqualsRunNodeAndCyclesGrowWithTheTensor) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench bench(soc_small());
  MemoryImage golden(bench.hw.dla.mem_address_width);
  std::vector<M::NodeImage> nodes;
  F::PushBuffer pb;
  const std::uint32_t sizes[][3] = {{21, 4, 8}, {21, 16, 32}, {40, 32, 64}};
  for (unsigned k = 0; k < 3; ++k) {
    const auto [c, h, w] = sizes[k];
    M::NodeImage node;
    node.op_type = "Erf";
    node.name = "erf" + std::to_string(k);
    const M::TensorPlace in = surface(0, c, h, w);
    node.inputs = {surface(bench.alloc(M::place_bytes(in)), c, h, w)};
    node.outputs = {surface(bench.alloc(M::place_bytes(in)), c, h, w)};
    fill(node.inputs[0], bench.image, golden, 10 + k);
    fill(node.outputs[0], bench.image, golden, 20 + k);  // junk the kernel must zero or keep
    nodes.push_back(node);
    pb.launch(launchable(bench, node));
  }
  bench.submit(0, pb);
  ASSERT_TRUE(bench.run());
  print_records(bench.ppu);
  EXPECT_EQ(bench.chreg(0, P::S_CH0_ERROR::kAddr), 0u);
  for (const M::NodeImage& node : nodes) {
    M::run_node(node, golden);
    EXPECT_EQ(span(bench.image, node.outputs[0]), span(golden, node.outputs[0])) << node.name;
  }
  const auto& r = bench.ppu.kernels();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].kind, "node");
  EXPECT_EQ(r[0].type, "fp16");
  EXPECT_NE(r[0].path.find("fma (node Erf"), std::string::npos) << r[0].path;
  EXPECT_GT(r[0].cycles(), 0u);
  EXPECT_GT(r[1].cycles(), r[0].cycles());
  EXPECT_GT(r[2].cycles(), r[1].cycles());
  EXPECT_EQ(r[2].m, 40u * 32 * 64);
  EXPECT_EQ(r[2].ctas, 40u * 32 * 64 / 4096);
  // Every atom loaded and stored once (line requests may round a range up to its lines).
  const std::uint64_t atoms = 2ull * 32 * 64 * 32;
  EXPECT_GE(r[2].bytes_read, atoms);
  EXPECT_GE(r[2].bytes_written, atoms);
}

TEST(PpuNode, MatMulRunsOnTheTensorCores) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  Bench bench(soc_small());
  MemoryImage golden(bench.hw.dla.mem_address_width);
  const std::uint32_t m = 64, k = 96, n = 48;
  const auto rows = [&](std::uint32_t h, std::uint32_t c) {
    M::TensorPlace p;
    p.shape = {h, c};
    p.rows = true;
    p.width = 1, p.height = h, p.channels = c, p.atom_bytes = 32;
    p.line_stride = 32, p.surface_stride = 32 * h;
    p.address = bench.alloc(M::place_bytes(p));
    return p;
  };
  M::NodeImage node;
  node.op_type = "MatMul";
  node.inputs = {rows(m, k), rows(k, n)};
  node.outputs = {rows(m, n)};
  fill(node.inputs[0], bench.image, golden, 1);
  fill(node.inputs[1], bench.image, golden, 2);
  F::PushBuffer pb;
  pb.launch(launchable(bench, node));
  bench.submit(0, pb);
  ASSERT_TRUE(bench.run());
  print_records(bench.ppu);
  M::run_node(node, golden);
  EXPECT_EQ(span(bench.image, node.outputs[0]), span(golden, node.outputs[0]));
  ASSERT_EQ(bench.ppu.kernels().size(), 1u);
  const KernelRecord& r = bench.ppu.kernels()[0];
  EXPECT_EQ(r.path.rfind("tensor (node MatMul", 0), 0u) << r.path;
  EXPECT_EQ(r.macs, std::uint64_t{m} * n * k);
  EXPECT_GT(r.tensor_utilization, 0.0);
  EXPECT_GT(r.cycles(), 0u);
  EXPECT_GT(r.ctas, 1u);  // 3072 outputs of 97 ops each: CTAs below 4096 elements
}

struct BadCase {
  const char* name;
  F::ErrorCode code;
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

class PpuNodeBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(PpuNodeBad, StopsTheChannel) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  const std::string name = GetParam().name;
  Bench bench(soc_small());
  M::NodeImage node;
  node.op_type = name == "unknown_operator" ? "NoSuchOp" : "Sigmoid";
  node.inputs = {surface(bench.alloc(4096), 8, 2, 2)};
  node.outputs = {surface(bench.alloc(4096), 8, 2, 2)};
  if (name == "output_outside_memory") {
    node.outputs[0].address = bench.image.address_space_size() - 64;
  }
  if (name == "wrong_output_shape") node.outputs[0].shape = {1, 2, 8, 2};
  std::vector<std::uint8_t> bytes = M::encode_node(node);
  if (name == "corrupt_image") bytes[4] = 7;  // version 7
  std::uint64_t image_at = bench.put(bytes);
  std::uint32_t size = static_cast<std::uint32_t>(bytes.size());
  if (name == "image_outside_memory") image_at = bench.image.address_space_size() - 16;
  if (name == "truncated_image") size -= 1;
  if (name == "image_too_large") size = F::node::kMaxImageBytes + 1;
  F::PushBuffer pb;
  pb.launch(bench.put(F::node_descriptor(image_at, size).bytes()));
  pb.interrupt();
  bench.submit(0, pb);
  ASSERT_TRUE(bench.run());
  EXPECT_EQ(bench.chreg(0, P::S_CH0_STATUS::kAddr), P::S_CH0_STATUS::STATE_ERROR);
  EXPECT_EQ(bench.chreg(0, P::S_CH0_ERROR::kAddr), static_cast<std::uint32_t>(GetParam().code));
  EXPECT_TRUE(bench.ppu.kernels().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PpuNodeBad,
    ::testing::Values(BadCase{"corrupt_image", F::ErrorCode::kBadKernel},
                      BadCase{"truncated_image", F::ErrorCode::kBadKernel},
                      BadCase{"image_too_large", F::ErrorCode::kBadKernel},
                      BadCase{"unknown_operator", F::ErrorCode::kBadKernel},
                      BadCase{"wrong_output_shape", F::ErrorCode::kBadKernel},
                      BadCase{"image_outside_memory", F::ErrorCode::kBadAddress},
                      BadCase{"output_outside_memory", F::ErrorCode::kBadAddress}),
    [](const ::testing::TestParamInfo<BadCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace octasim::ppu::test

int sc_main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
