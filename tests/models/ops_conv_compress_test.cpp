// models/ops/conv_compress: NVDLA's sparse weight compression (format.rst "Sparse Compression
// option"). Expected WMB/WGS/data bytes are derived by hand from the rules: one mask bit per
// element, LSB first, groups' bits back to back; stored elements packed; one little-endian
// 32-bit WGS per group; every surface padded to 128 bytes.
#include "models/ops/conv_compress.hpp"
#include "tests/models/vec_memory.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

namespace octasim::models::ops {
namespace {

using test::VecMemory;
using Bytes = std::vector<std::uint8_t>;

Bytes padded(Bytes b, std::size_t size) {
  b.resize(size, 0);
  return b;
}

// INT8, one group of 10 elements; non-zero at 1, 4 and 8: WMB 0b00010010, 0b00000001.
TEST(ConvCompress, Int8OneGroupByHand) {
  const Bytes dense{0, 5, 0, 0, 0xff, 0, 0, 0, 7, 0};
  const CompressedWeights c = compress_weights(dense, {10}, 1);
  EXPECT_EQ(c.wmb, padded({0x12, 0x01}, 128));
  EXPECT_EQ(c.data, padded({5, 0xff, 7}, 128));
  EXPECT_EQ(c.wgs, padded({3, 0, 0, 0}, 128));
  EXPECT_EQ(c.group_sizes, (std::vector<std::uint32_t>{3}));
}

// Two INT8 groups of 3 and 6 elements: group 1's mask starts at bit 3 of WMB byte 0, not at a
// new byte. Non-zero elements 0, 2 (group 0) and 4, 8 (group 1): bits 0, 2, 4 | 8.
TEST(ConvCompress, GroupMasksAreNotByteAligned) {
  const Bytes dense{1, 0, 2, 0, 3, 0, 0, 0, 4};
  const CompressedWeights c = compress_weights(dense, {3, 6}, 1);
  EXPECT_EQ(c.wmb, padded({0x15, 0x01}, 128));
  EXPECT_EQ(c.data, padded({1, 2, 3, 4}, 128));  // groups packed back to back
  EXPECT_EQ(c.wgs, padded({2, 0, 0, 0, 2, 0, 0, 0}, 128));
}

// INT16/FP16: one bit per 2-byte element. Elements 0x0000, 0x0100, 0x8000 (FP16 -0.0, kept),
// 0x0000: bits 1 and 2; the data keeps both bytes of each stored element; WGS counts bytes.
TEST(ConvCompress, TwoByteElementsOneBitEach) {
  const Bytes dense{0, 0, 0, 1, 0, 0x80, 0, 0};
  const CompressedWeights c = compress_weights(dense, {8}, 2);
  EXPECT_EQ(c.wmb, padded({0x06}, 128));
  EXPECT_EQ(c.data, padded({0, 1, 0, 0x80}, 128));
  EXPECT_EQ(c.wgs, padded({4, 0, 0, 0}, 128));
  EXPECT_EQ(decompress_weights(c.wmb, c.data, c.group_sizes, {8}, 2), dense);
}

// Sizes above 128 bytes and a WGS value above 255 (little-endian bytes).
TEST(ConvCompress, SurfacesPadTo128AndWgsIsLittleEndian) {
  Bytes dense(1200, 0);
  for (std::size_t i = 0; i < 300; ++i) dense[i] = static_cast<std::uint8_t>(i % 255 + 1);
  const CompressedWeights c = compress_weights(dense, {1000, 200}, 1);
  EXPECT_EQ(c.wmb.size(), 256u);   // 150 mask bytes
  EXPECT_EQ(c.data.size(), 384u);  // 300 stored bytes
  EXPECT_EQ(c.wgs.size(), 128u);
  EXPECT_EQ(c.group_sizes, (std::vector<std::uint32_t>{300, 0}));
  EXPECT_EQ(c.wgs[0], 0x2c);  // 300 = 0x012c
  EXPECT_EQ(c.wgs[1], 0x01);
  EXPECT_EQ(c.wmb[36], 0xff);  // elements 288..295
  EXPECT_EQ(c.wmb[37], 0x0f);  // elements 296..299 -> bits 0..3 of byte 37
  EXPECT_EQ(c.wmb[38], 0x00);
}

TEST(ConvCompress, DecompressRestoresTheDenseBytes) {
  std::mt19937 rng(7);
  for (unsigned bpe : {1u, 2u}) {
    Bytes dense(4608);
    for (auto& b : dense) b = rng() % 3 == 0 ? static_cast<std::uint8_t>(rng()) : 0;
    const std::vector<std::uint64_t> groups{768, 768, 768, 768, 768 * 2};
    const CompressedWeights c = compress_weights(dense, groups, bpe);
    EXPECT_LT(c.data.size(), dense.size());
    EXPECT_EQ(decompress_weights(c.wmb, c.data, c.group_sizes, groups, bpe), dense);
  }
}

TEST(ConvCompress, InconsistentSurfacesAreRefused) {
  const Bytes dense{1, 0, 2, 0, 3, 0, 0, 0, 4};
  const CompressedWeights c = compress_weights(dense, {3, 6}, 1);
  // A WGS that disagrees with the mask bits.
  EXPECT_THROW((void)decompress_weights(c.wmb, c.data, {2, 3}, {3, 6}, 1), std::runtime_error);
  try {
    (void)decompress_weights(c.wmb, c.data, {1, 3}, {3, 6}, 1);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "compressed weights: WGS of kernel group 0 is 1 bytes but its mask bits mark 2");
  }
  // Data shorter than the mask bits say.
  EXPECT_THROW((void)decompress_weights(c.wmb, Bytes{1, 2, 3}, {2, 2}, {3, 6}, 1),
               std::runtime_error);
  // A mask shorter than the elements.
  EXPECT_THROW((void)decompress_weights(Bytes{0x15}, c.data, {2, 2}, {3, 6}, 1),
               std::runtime_error);
  // Groups beyond the dense bytes, a group of half an element.
  EXPECT_THROW((void)compress_weights(dense, {3, 7}, 1), std::runtime_error);
  EXPECT_THROW((void)compress_weights(Bytes(8, 1), {3, 5}, 2), std::runtime_error);
}

TEST(ConvCompress, GroupAndSurfaceSizes) {
  // nv_full INT16: 16 kernels a group; 40 kernels of 18 bytes.
  EXPECT_EQ(weight_group_bytes({64, 32, ConvPrecision::kInt16}, 40, 18),
            (std::vector<std::uint64_t>{288, 288, 144}));
  EXPECT_EQ(weight_group_bytes({64, 32, ConvPrecision::kInt8}, 40, 9),
            (std::vector<std::uint64_t>{288, 72}));
  EXPECT_EQ(wmb_surface_bytes(1024), 128u);
  EXPECT_EQ(wmb_surface_bytes(1025), 256u);
  EXPECT_EQ(wgs_fetch_bytes(3, 32), 32u);
  EXPECT_EQ(wgs_fetch_bytes(9, 32), 64u);
  EXPECT_EQ(parse_wgs(Bytes{0x2c, 0x01, 0, 0, 4, 0, 0, 0x80}.data(), 2),
            (std::vector<std::uint32_t>{300, 0x80000004u}));
}

// Groups of 1 and 2 kernels of 3 elements storing 2 and 2 bytes, in 128-byte surfaces: group 0
// takes 2 data bytes + WMB byte 0; group 1 takes 2 + WMB byte 1 (its bits 3..7 of byte 0 came
// with group 0) + the padding of both surfaces (124 + 126).
TEST(ConvCompress, FetchBytesPerGroup) {
  const std::vector<std::uint64_t> v = compressed_group_fetch_bytes({2, 2}, {1, 2}, 3, 128, 128);
  EXPECT_EQ(v, (std::vector<std::uint64_t>{3, 253}));
  // Byte-aligned groups of 16 elements: 2 mask bytes each, the padding on the last.
  EXPECT_EQ(compressed_group_fetch_bytes({5, 0, 7}, {2, 2, 2}, 8, 128, 128),
            (std::vector<std::uint64_t>{7, 2, 9 + 116 + 122}));
}

// Weights in NVDLA's direct-convolution format, compressed into three surfaces in memory, read
// back through read_compressed_weights: the same weights, and corrupted WGS is refused.
TEST(ConvCompress, ReadCompressedWeightsRoundTrip) {
  std::mt19937 rng(11);
  for (ConvPrecision p : {ConvPrecision::kInt8, ConvPrecision::kInt16}) {
    const ConvWeightLayout layout{64, 32, p};
    ConvWeights w(37, 3, 2, 70);
    for (auto& v : w.data) {
      v = rng() % 4 == 0 ? static_cast<std::int32_t>(rng() % 200) - 100 : 0;
    }
    VecMemory dense_mem(1 << 16);
    const std::uint64_t dense_bytes = write_weights(w, 0, layout, dense_mem);
    Bytes dense(static_cast<std::size_t>(dense_bytes));
    dense_mem.read(0, dense.data(), dense.size());
    const unsigned bpe = conv_element_bytes(p);
    const std::vector<std::uint64_t> groups = weight_group_bytes(layout, 37, 3 * 2 * 70 * bpe);
    const CompressedWeights c = compress_weights(dense, groups, bpe);

    VecMemory mem(1 << 16);
    CompressedWeightSurfaces s;
    s.data_base = 0x1000;
    s.wmb_base = 0xa000;
    s.wgs_base = 0xe000;
    s.data_bytes = c.data.size();
    s.wmb_bytes = c.wmb.size();
    mem.put(s.data_base, c.data);
    mem.put(s.wmb_base, c.wmb);
    mem.put(s.wgs_base, c.wgs);
    const ConvWeights r = read_compressed_weights(s, 37, 3, 2, 70, layout, mem);
    EXPECT_EQ(r.data, w.data);

    Bytes wgs = c.wgs;
    wgs[4] = static_cast<std::uint8_t>(wgs[4] + bpe);  // group 1 claims one element more
    mem.put(s.wgs_base, wgs);
    EXPECT_THROW((void)read_compressed_weights(s, 37, 3, 2, 70, layout, mem), std::runtime_error);
    s.data_bytes = 0;  // WGS larger than WEIGHT_BYTES
    mem.put(s.wgs_base, c.wgs);
    EXPECT_THROW((void)read_compressed_weights(s, 37, 3, 2, 70, layout, mem), std::runtime_error);
  }
}

}  // namespace
}  // namespace octasim::models::ops
