// MemoryImage: sparse paged DRAM image with range checks against the address width.
#include "sim/core/memory_image.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace octasim {
namespace {

std::vector<std::uint8_t> read(const MemoryImage& m, std::uint64_t addr, std::size_t n) {
  std::vector<std::uint8_t> out(n, 0xcc);
  m.read(addr, out.data(), n);
  return out;
}

TEST(MemoryImage, UnwrittenMemoryReadsZeroAndMapsNothing) {
  const MemoryImage m(32);
  EXPECT_EQ(read(m, 0x80000000u, 16), std::vector<std::uint8_t>(16, 0));
  EXPECT_EQ(m.mapped_bytes(), 0u);
}

TEST(MemoryImage, WriteThenReadBack) {
  MemoryImage m(32);
  const std::vector<std::uint8_t> data{1, 2, 3, 4, 5};
  m.write(0x1000, data.data(), data.size());
  EXPECT_EQ(read(m, 0x1000, 5), data);
  EXPECT_EQ(read(m, 0x0fff, 7), (std::vector<std::uint8_t>{0, 1, 2, 3, 4, 5, 0}));
  EXPECT_EQ(m.mapped_bytes(), MemoryImage::kPageSize);
}

TEST(MemoryImage, AccessesCrossPageBoundaries) {
  MemoryImage m(32);
  const std::uint64_t boundary = 3 * MemoryImage::kPageSize;
  std::vector<std::uint8_t> data(10);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(0xa0 + i);
  m.write(boundary - 4, data.data(), data.size());
  EXPECT_EQ(read(m, boundary - 4, 10), data);
  EXPECT_EQ(read(m, boundary, 2), (std::vector<std::uint8_t>{0xa4, 0xa5}));
  EXPECT_EQ(m.mapped_bytes(), 2 * MemoryImage::kPageSize);
  // A read spanning a mapped page and an unmapped one.
  const auto r = read(m, boundary + MemoryImage::kPageSize - 2, 4);
  EXPECT_EQ(r, (std::vector<std::uint8_t>{0, 0, 0, 0}));
}

TEST(MemoryImage, WriteSpanningThreePages) {
  MemoryImage m(32);
  const std::size_t n = 2 * MemoryImage::kPageSize + 10;
  std::vector<std::uint8_t> data(n);
  for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<std::uint8_t>(i * 7 + 1);
  m.write(MemoryImage::kPageSize - 5, data.data(), n);
  EXPECT_EQ(read(m, MemoryImage::kPageSize - 5, n), data);
  EXPECT_EQ(m.mapped_bytes(), 4 * MemoryImage::kPageSize);
}

TEST(MemoryImage, FillSetsExactlyTheRange) {
  MemoryImage m(32);
  m.fill(MemoryImage::kPageSize - 2, 5, 0xff);
  EXPECT_EQ(read(m, MemoryImage::kPageSize - 3, 7),
            (std::vector<std::uint8_t>{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0}));
  m.fill(MemoryImage::kPageSize, 1, 0x00);
  EXPECT_EQ(read(m, MemoryImage::kPageSize - 1, 3), (std::vector<std::uint8_t>{0xff, 0, 0xff}));
}

TEST(MemoryImage, RangeChecksAgainstTheAddressWidth) {
  MemoryImage m(32);
  EXPECT_EQ(m.address_space_size(), 0x100000000u);
  EXPECT_TRUE(m.contains(0xffffffffu, 1));
  EXPECT_FALSE(m.contains(0xffffffffu, 2));
  EXPECT_TRUE(m.contains(0x100000000u, 0));
  EXPECT_FALSE(m.contains(0x100000000u, 1));
  EXPECT_FALSE(m.contains(0, 0x100000001u));
  EXPECT_FALSE(m.contains(0x10, ~std::uint64_t{0})) << "addr + size must not wrap";

  std::uint8_t b = 0x5a;
  m.write(0xffffffffu, &b, 1);
  EXPECT_EQ(read(m, 0xffffffffu, 1), std::vector<std::uint8_t>{0x5a});
  EXPECT_THROW(m.write(0xfffffffeu, std::vector<std::uint8_t>(4).data(), 4), std::out_of_range);
  std::uint8_t out[4];
  EXPECT_THROW(m.read(0x100000000u, out, 1), std::out_of_range);
  EXPECT_THROW(m.fill(0xffffff00u, 0x101, 0), std::out_of_range);
  EXPECT_EQ(read(m, 0xfffffffeu, 1), std::vector<std::uint8_t>{0})
      << "a failed write wrote nothing";
}

TEST(MemoryImage, OutOfRangeMessageNamesRangeAndSpace) {
  const MemoryImage m(16);
  try {
    m.check_range(0xfff0, 0x20);
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("0xfff0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("0x10000"), std::string::npos) << msg;
  }
}

TEST(MemoryImage, SixtyFourBitSpaceAcceptsHighAddresses) {
  MemoryImage m(64);
  const std::uint64_t high = 0xffff'0000'0000'0000u;
  const std::uint8_t v = 0x42;
  m.write(high, &v, 1);
  EXPECT_EQ(read(m, high, 1), std::vector<std::uint8_t>{0x42});
  EXPECT_EQ(read(m, high & 0xffffffffu, 1), std::vector<std::uint8_t>{0}) << "no aliasing";
}

TEST(MemoryImage, IsAModelsOpsMemory) {
  MemoryImage image(32);
  models::ops::Memory& m = image;
  const std::uint8_t v[2] = {7, 8};
  m.write(0x20, v, 2);
  std::uint8_t out[2] = {};
  m.read(0x20, out, 2);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[1], 8);
}

}  // namespace
}  // namespace octasim
