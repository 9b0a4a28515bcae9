// models/ops/rubik: contract, split and merge on small cubes whose expected bytes are worked out
// by hand below (from the layouts of v1_ias_unit_description.rst "RUBIK" and format.rst), not by
// the op; small atoms (2 and 4 bytes) keep the hand work short.
#include "models/ops/rubik.hpp"

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "tests/models/vec_memory.hpp"

namespace octasim::models::ops {
namespace {

using test::VecMemory;

std::vector<std::uint8_t> bytes_at(const VecMemory& m, std::uint64_t addr, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  m.read(addr, v.data(), n);
  return v;
}

void fill(VecMemory& m, std::uint64_t addr, std::size_t n, std::uint8_t v) {
  m.put(addr, std::vector<std::uint8_t>(n, v));
}

// x_stride 2: W=2, H=1, C=4 (two groups of C'=2), INT8, 2-byte atoms (2 channels per atom).
// Input element (w, h, c) = 10w + c. Input surface 0 holds c0, c1: w0 [0, 1], w1 [10, 11];
// surface 1 holds c2, c3: w0 [2, 3], w1 [12, 13]. Output (2w + gx, 0, c) = input (w, 0, 2gx + c):
// w'0 = [0, 1], w'1 = [2, 3], w'2 = [10, 11], w'3 = [12, 13].
TEST(RubikContract, XStrideTwoInterleavesTheGroupsAlongW) {
  VecMemory m(256);
  m.put(0, {0, 1, 10, 11});  // surface 0, line 0
  m.put(4, {2, 3, 12, 13});  // surface 1, line 0
  RubikParams p;
  p.mode = RubikMode::kContract;
  p.element_bytes = 1;
  p.atom_bytes = 2;
  p.width = 2, p.height = 1, p.in_channels = 4, p.out_channels = 2;
  p.x_stride = 2, p.y_stride = 1;
  p.in_base = 0, p.in_line_stride = 4, p.in_surface_stride = 4;
  p.contract_stride_0 = 4;  // ceil(C' * 1 / 2) = 1 surface per group
  p.out_base = 64, p.out_line_stride = 8, p.out_surface_stride = 8;
  p.contract_stride_1 = 8;  // y_stride * out line stride
  run_rubik(p, m, m);
  EXPECT_EQ(bytes_at(m, 64, 8), (std::vector<std::uint8_t>{0, 1, 2, 3, 10, 11, 12, 13}));
  const RubikCube out = rubik_output_cube(p);
  EXPECT_EQ(out.width, 4u);
  EXPECT_EQ(out.height, 1u);
  EXPECT_EQ(out.channels, 2u);
}

// y_stride 2: W=2, H=2, C=4, C'=2, INT8, 2-byte atoms. Input (w, h, c) = 40h + 10w + c, group 0
// (c0, c1) is surface 0, group 1 (c2, c3) surface 1. Output line 2h + gy holds input line h of
// group gy: line 0 [0 1 10 11], line 1 [2 3 12 13], line 2 [40 41 50 51], line 3 [42 43 52 53].
// The output lines are 6 bytes apart (2 gap bytes after each 4-byte line stay untouched).
TEST(RubikContract, YStrideTwoStacksTheGroupsAlongH) {
  VecMemory m(256);
  m.put(0, {0, 1, 10, 11});     // surface 0, line 0
  m.put(4, {40, 41, 50, 51});   // surface 0, line 1
  m.put(8, {2, 3, 12, 13});     // surface 1, line 0
  m.put(12, {42, 43, 52, 53});  // surface 1, line 1
  fill(m, 100, 40, 0xAA);
  RubikParams p;
  p.mode = RubikMode::kContract;
  p.atom_bytes = 2;
  p.width = 2, p.height = 2, p.in_channels = 4, p.out_channels = 2;
  p.x_stride = 1, p.y_stride = 2;
  p.in_base = 0, p.in_line_stride = 4, p.in_surface_stride = 8, p.contract_stride_0 = 8;
  p.out_base = 100, p.out_line_stride = 6, p.out_surface_stride = 24, p.contract_stride_1 = 12;
  run_rubik(p, m, m);
  EXPECT_EQ(bytes_at(m, 100, 24),
            (std::vector<std::uint8_t>{0,  1,  10, 11, 0xAA, 0xAA, 2,  3,  12, 13, 0xAA, 0xAA,
                                       40, 41, 50, 51, 0xAA, 0xAA, 42, 43, 52, 53, 0xAA, 0xAA}));
  EXPECT_EQ(bytes_at(m, 124, 1), (std::vector<std::uint8_t>{0xAA}));
}

// Split: W=2, H=2, C=3, INT8, 4-byte atoms (lane 3 is padding, 0x77). Input (w, h, c) =
// 10c + 2h + w at h*8 + w*4 + c. Plane c, line h = [10c + 2h, 10c + 2h + 1]; planes 8 bytes
// apart, lines 4 apart (2 bytes of each untouched).
TEST(RubikSplit, FeatureCubeToPlanes) {
  VecMemory m(256);
  m.put(0, {0, 10, 20, 0x77, 1, 11, 21, 0x77});  // line 0: w0, w1
  m.put(8, {2, 12, 22, 0x77, 3, 13, 23, 0x77});  // line 1
  fill(m, 64, 32, 0xAA);
  RubikParams p;
  p.mode = RubikMode::kSplit;
  p.atom_bytes = 4;
  p.width = 2, p.height = 2, p.in_channels = 3, p.out_channels = 3;
  p.in_line_stride = 8, p.in_surface_stride = 16;
  p.out_base = 64, p.out_line_stride = 4, p.out_planar_stride = 8;
  run_rubik(p, m, m);
  EXPECT_EQ(bytes_at(m, 64, 24), (std::vector<std::uint8_t>{
                                     0,  1,  0xAA, 0xAA, 2,  3,  0xAA, 0xAA, 10, 11, 0xAA, 0xAA,
                                     12, 13, 0xAA, 0xAA, 20, 21, 0xAA, 0xAA, 22, 23, 0xAA, 0xAA}));
  // Splitting only the first two channels leaves plane 2 alone.
  fill(m, 64, 32, 0xAA);
  p.out_channels = 2;
  run_rubik(p, m, m);
  EXPECT_EQ(bytes_at(m, 64 + 8, 2), (std::vector<std::uint8_t>{10, 11}));
  EXPECT_EQ(bytes_at(m, 64 + 16, 8), std::vector<std::uint8_t>(8, 0xAA));
}

// Merge: INT16 planes (little-endian) c = 0..2, W=2, H=1: plane c holds [0x0100c + 1,
// 0x0100c + 2]. 4-byte atoms hold 2 channels: surface 0 = c0, c1; surface 1 = c2 and a padding
// lane written as zero. Surface 0: w0 (0x0001, 0x0101), w1 (0x0002, 0x0102); surface 1: w0
// (0x0201, 0), w1 (0x0202, 0).
TEST(RubikMerge, PlanesToFeatureCubeWithZeroPadding) {
  VecMemory m(256);
  m.put(0, {0x01, 0x00, 0x02, 0x00});
  m.put(16, {0x01, 0x01, 0x02, 0x01});
  m.put(32, {0x01, 0x02, 0x02, 0x02});
  fill(m, 128, 32, 0xAA);
  RubikParams p;
  p.mode = RubikMode::kMerge;
  p.element_bytes = 2;
  p.atom_bytes = 4;
  p.width = 2, p.height = 1, p.in_channels = 3, p.out_channels = 3;
  p.in_line_stride = 64, p.in_planar_stride = 16;
  p.out_base = 128, p.out_line_stride = 8, p.out_surface_stride = 12;
  run_rubik(p, m, m);
  EXPECT_EQ(bytes_at(m, 128, 20), (std::vector<std::uint8_t>{
                                      0x01, 0x00, 0x01, 0x01, 0x02, 0x00, 0x02, 0x01, 0xAA, 0xAA,
                                      0xAA, 0xAA, 0x01, 0x02, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00}));
}

// Merge undoes split (32-byte atoms, INT8, 37 channels over two surfaces): every byte of the
// cube's real channels comes back; padding lanes come back as zero.
TEST(RubikSplitMerge, RoundTrip) {
  constexpr std::uint32_t W = 5, H = 3, C = 37;
  VecMemory m(1 << 16);
  std::mt19937 rng(7);
  const std::uint64_t line = W * 32, surf = line * H;
  for (std::uint64_t i = 0; i < 2 * surf; ++i) {
    m.put(i, {static_cast<std::uint8_t>(rng())});
  }
  RubikParams s;
  s.mode = RubikMode::kSplit;
  s.width = W, s.height = H, s.in_channels = C, s.out_channels = C;
  s.in_line_stride = line, s.in_surface_stride = surf;
  s.out_base = 0x4000, s.out_line_stride = 64, s.out_planar_stride = 256;
  run_rubik(s, m, m);
  RubikParams g = s;
  g.mode = RubikMode::kMerge;
  g.in_base = s.out_base, g.in_line_stride = 64, g.in_planar_stride = 256;
  g.out_base = 0x8000, g.out_line_stride = line, g.out_surface_stride = surf;
  run_rubik(g, m, m);
  for (std::uint64_t i = 0; i < 2 * surf; ++i) {
    const std::uint64_t lane = i % 32, sidx = i / surf;
    const std::uint8_t want = sidx * 32 + lane < C ? m.byte(i) : 0;
    ASSERT_EQ(m.byte(0x8000 + i), want) << "byte " << i;
  }
}

TEST(RubikCheck, RefusesWhatTheModesDoNotDefine) {
  RubikParams p;
  p.width = p.height = 1;
  p.in_channels = 64, p.out_channels = 32, p.x_stride = 2, p.y_stride = 1;
  EXPECT_NO_THROW(check_rubik(p));
  p.out_channels = 16;  // 16 x 2 != 64
  EXPECT_THROW(check_rubik(p), std::invalid_argument);
  p.in_channels = 32;  // 16 INT8 channels do not fill a 32-byte atom
  EXPECT_THROW(check_rubik(p), std::invalid_argument);
  p.element_bytes = 2;  // 16 INT16 channels do
  EXPECT_NO_THROW(check_rubik(p));
  p.element_bytes = 4;
  EXPECT_THROW(check_rubik(p), std::invalid_argument);
  p.element_bytes = 1;
  p.mode = RubikMode::kSplit;
  p.in_channels = 3, p.out_channels = 4;
  EXPECT_THROW(check_rubik(p), std::invalid_argument);
  p.mode = RubikMode::kMerge;
  EXPECT_THROW(check_rubik(p), std::invalid_argument);
  p.in_channels = 4;
  EXPECT_NO_THROW(check_rubik(p));
  p.width = 0;
  EXPECT_THROW(check_rubik(p), std::invalid_argument);
}

}  // namespace
}  // namespace octasim::models::ops
