// AddressGenerator: the walk that turns "the next n bytes of a DMA" into requests on the real
// addresses of a unit's surfaces. Every expected piece below is derived by hand from the
// layout rule line l of surface s = base + s * surface_stride + l * line_stride.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/core/address_generator.hpp"

namespace octasim {
namespace {

std::vector<DmaPiece> walk_all(AddressGenerator& gen, std::uint64_t bytes) {
  std::vector<DmaPiece> out;
  gen.next(bytes, out);
  return out;
}

void expect_pieces(const std::vector<DmaPiece>& got, const std::vector<DmaPiece>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].addr, want[i].addr) << "piece " << i;
    EXPECT_EQ(got[i].bytes, want[i].bytes) << "piece " << i;
  }
}

TEST(AddressGenerator, PackedSurfaceIsOneLinearPiece) {
  // 4 lines of 32 bytes with line stride 32, 2 surfaces with surface stride 128: packed, so
  // the 256 bytes are one request at the base.
  AddressGenerator gen({SurfaceRegion{0x1000, 32, 4, 2, 32, 128}});
  EXPECT_EQ(gen.total(), 256u);
  expect_pieces(walk_all(gen, 256), {{0x1000, 256}});
  EXPECT_EQ(gen.position(), 256u);
}

TEST(AddressGenerator, LinearHelperIsOnePiece) {
  AddressGenerator gen({SurfaceRegion::linear(0x40, 100)});
  EXPECT_EQ(gen.total(), 100u);
  expect_pieces(walk_all(gen, 100), {{0x40, 100}});
}

TEST(AddressGenerator, StridedLinesSplitAtLineEnds) {
  // 3 lines of 16 bytes, line stride 0x100: lines at 0x2000, 0x2100, 0x2200.
  AddressGenerator gen({SurfaceRegion{0x2000, 16, 3, 1, 0x100, 0x300}});
  EXPECT_EQ(gen.total(), 48u);
  expect_pieces(walk_all(gen, 48), {{0x2000, 16}, {0x2100, 16}, {0x2200, 16}});
}

TEST(AddressGenerator, SurfacesInOrderThenLines) {
  // 2 lines of 8 bytes (line stride 0x20), 3 surfaces (surface stride 0x1000): surface by
  // surface, line by line.
  AddressGenerator gen({SurfaceRegion{0x10000, 8, 2, 3, 0x20, 0x1000}});
  EXPECT_EQ(gen.total(), 48u);
  expect_pieces(
      walk_all(gen, 48),
      {{0x10000, 8}, {0x10020, 8}, {0x11000, 8}, {0x11020, 8}, {0x12000, 8}, {0x12020, 8}});
}

TEST(AddressGenerator, LinesPackedWithinSurfaceMergeButSurfacesSplit) {
  // Lines packed (stride = line bytes) but a gap between surfaces: one piece per surface.
  AddressGenerator gen({SurfaceRegion{0x0, 16, 4, 2, 16, 0x400}});
  expect_pieces(walk_all(gen, 128), {{0x0, 64}, {0x400, 64}});
}

TEST(AddressGenerator, MultipleRegionsInOrder) {
  // Region A: 2 lines of 4 bytes at 0x100 (stride 0x10). Region B: linear 10 bytes at 0x900.
  // Region C: 1 line of 6 bytes at 0x50 (below both: regions are walked in list order).
  AddressGenerator gen({SurfaceRegion{0x100, 4, 2, 1, 0x10, 0x20}, SurfaceRegion::linear(0x900, 10),
                        SurfaceRegion{0x50, 6, 1, 1, 6, 6}});
  EXPECT_EQ(gen.total(), 24u);
  expect_pieces(walk_all(gen, 24), {{0x100, 4}, {0x110, 4}, {0x900, 10}, {0x50, 6}});
}

TEST(AddressGenerator, AdjacentRegionsMerge) {
  // Region B starts where region A's last line ends: the two merge into one piece.
  AddressGenerator gen({SurfaceRegion::linear(0x200, 0x40), SurfaceRegion::linear(0x240, 0x20)});
  expect_pieces(walk_all(gen, 0x60), {{0x200, 0x60}});
}

TEST(AddressGenerator, ChunkedCallsCrossLineBoundaries) {
  // 3 lines of 10 bytes at 0x1000, stride 0x40: lines 0x1000..0x1009, 0x1040..0x1049,
  // 0x1080..0x1089. Chunks of 7, 7, 7, 9 bytes.
  AddressGenerator gen({SurfaceRegion{0x1000, 10, 3, 1, 0x40, 0xC0}});
  std::vector<DmaPiece> out;
  gen.next(7, out);  // bytes 0..6 of line 0
  expect_pieces(out, {{0x1000, 7}});
  EXPECT_EQ(gen.position(), 7u);
  gen.next(7, out);  // bytes 7..9 of line 0, 0..3 of line 1
  expect_pieces(out, {{0x1007, 3}, {0x1040, 4}});
  gen.next(7, out);  // bytes 4..9 of line 1, byte 0 of line 2
  expect_pieces(out, {{0x1044, 6}, {0x1080, 1}});
  gen.next(9, out);  // bytes 1..9 of line 2
  expect_pieces(out, {{0x1081, 9}});
  EXPECT_EQ(gen.position(), 30u);
}

TEST(AddressGenerator, ChunkEndingExactlyAtLineEnd) {
  AddressGenerator gen({SurfaceRegion{0x0, 8, 2, 1, 0x100, 0x200}});
  std::vector<DmaPiece> out;
  gen.next(8, out);
  expect_pieces(out, {{0x0, 8}});
  gen.next(8, out);
  expect_pieces(out, {{0x100, 8}});
}

TEST(AddressGenerator, BytesBeyondRegionsContinueLinearly) {
  // 2 lines of 4 bytes at 0x300, stride 0x80: the last line ends at 0x384; 6 more bytes
  // continue at 0x384 (merged with the last line's piece).
  AddressGenerator gen({SurfaceRegion{0x300, 4, 2, 1, 0x80, 0x100}});
  expect_pieces(walk_all(gen, 14), {{0x300, 4}, {0x380, 10}});
  std::vector<DmaPiece> out;
  gen.next(5, out);  // still linear past the end
  expect_pieces(out, {{0x38A, 5}});
  EXPECT_EQ(gen.position(), 19u);
}

TEST(AddressGenerator, BytesBeyondSurfacesContinueAfterLastLine) {
  // The last line walked is line 1 of surface 1: 0x4000 + 0x1000 + 0x40 = 0x5040, ends 0x5048.
  AddressGenerator gen({SurfaceRegion{0x4000, 8, 2, 2, 0x40, 0x1000}});
  std::vector<DmaPiece> out;
  gen.next(32, out);
  expect_pieces(out, {{0x4000, 8}, {0x4040, 8}, {0x5000, 8}, {0x5040, 8}});
  gen.next(4, out);
  expect_pieces(out, {{0x5048, 4}});
}

TEST(AddressGenerator, NoRegionsUsesFallback) {
  AddressGenerator gen({}, 0x7000);
  EXPECT_EQ(gen.total(), 0u);
  std::vector<DmaPiece> out;
  gen.next(16, out);
  expect_pieces(out, {{0x7000, 16}});
  gen.next(16, out);
  expect_pieces(out, {{0x7010, 16}});
}

TEST(AddressGenerator, ZeroByteRegionsSkipped) {
  // Empty regions (no line bytes, no lines, no surfaces) between real ones are dropped.
  AddressGenerator gen(
      {SurfaceRegion{0xA000, 0, 4, 1, 0x10, 0x40}, SurfaceRegion{0x100, 4, 2, 1, 0x10, 0x20},
       SurfaceRegion{0xB000, 8, 0, 1, 0x10, 0x40}, SurfaceRegion{0xC000, 8, 2, 0, 0x10, 0x40},
       SurfaceRegion::linear(0x800, 4)});
  EXPECT_EQ(gen.total(), 12u);
  expect_pieces(walk_all(gen, 12), {{0x100, 4}, {0x110, 4}, {0x800, 4}});
}

TEST(AddressGenerator, OnlyZeroByteRegionsFallBack) {
  AddressGenerator gen({SurfaceRegion{0xA000, 0, 4, 1, 0x10, 0x40}}, 0x600);
  EXPECT_EQ(gen.total(), 0u);
  expect_pieces(walk_all(gen, 8), {{0x600, 8}});
}

TEST(AddressGenerator, ZeroBytesAppendsNothing) {
  AddressGenerator gen({SurfaceRegion::linear(0x0, 16)});
  std::vector<DmaPiece> out{{0x1, 1}};
  gen.next(0, out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(gen.position(), 0u);
}

}  // namespace
}  // namespace octasim
