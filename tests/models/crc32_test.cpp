#include "models/numerics/crc32.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace octasim::models {
namespace {

const std::uint8_t* bytes(const std::string& s) {
  return reinterpret_cast<const std::uint8_t*>(s.data());
}

// Bit-at-a-time CRC straight from the definition, as an independent reference.
std::uint32_t crc_by_definition(const std::uint8_t* p, std::size_t n) {
  std::uint32_t c = 0xffffffffu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

TEST(Crc32, StandardCheckValue) {
  EXPECT_EQ(crc32(bytes("123456789"), 9), 0xcbf43926u);  // the CRC-32 catalogue check value
  EXPECT_EQ(crc32(nullptr, 0), 0x00000000u);
  EXPECT_EQ(crc32(bytes("a"), 1), 0xe8b7be43u);
}

TEST(Crc32, LittleEndianWordsEqualBytesInMemoryOrder) {
  const std::uint32_t words[] = {0x34333231u, 0x38373635u};  // "12345678"
  EXPECT_EQ(crc32_words(words, 2), crc32(bytes("12345678"), 8));
}

TEST(Crc32, MatchesDefinitionOnEveryLengthAndSplit) {
  std::vector<std::uint8_t> data(300);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 37 + 11);
  for (std::size_t n = 0; n <= data.size(); ++n) {
    ASSERT_EQ(crc32(data.data(), n), crc_by_definition(data.data(), n)) << n;
  }
  Crc32 split;
  split.update(data.data(), 7);
  split.update(data.data() + 7, 293);
  EXPECT_EQ(split.value(), crc_by_definition(data.data(), 300));
}

}  // namespace
}  // namespace octasim::models
