#include "models/numerics/crc32.hpp"

#include <array>

namespace octasim::models {
namespace {

// Slicing-by-4 tables: table[0] is the classic byte table; table[k] advances k more zero bytes.
using Tables = std::array<std::array<std::uint32_t, 256>, 4>;

constexpr Tables make_tables() {
  Tables t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0xedb88320u : c >> 1;
    t[0][i] = c;
  }
  for (std::uint32_t i = 0; i < 256; ++i) {
    for (std::size_t k = 1; k < 4; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xffu];
  }
  return t;
}

constexpr Tables kTables = make_tables();

std::uint32_t step_word(std::uint32_t crc, std::uint32_t word) {
  crc ^= word;  // little-endian word: its low byte is the first byte on the wire
  return kTables[3][crc & 0xffu] ^ kTables[2][(crc >> 8) & 0xffu] ^
         kTables[1][(crc >> 16) & 0xffu] ^ kTables[0][crc >> 24];
}

}  // namespace

void Crc32::update(const std::uint8_t* data, std::size_t size) {
  std::size_t i = 0;
  for (; i + 4 <= size; i += 4) {
    const std::uint32_t w = std::uint32_t{data[i]} | std::uint32_t{data[i + 1]} << 8 |
                            std::uint32_t{data[i + 2]} << 16 | std::uint32_t{data[i + 3]} << 24;
    state_ = step_word(state_, w);
  }
  for (; i < size; ++i) state_ = (state_ >> 8) ^ kTables[0][(state_ ^ data[i]) & 0xffu];
}

void Crc32::update_words(const std::uint32_t* words, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) state_ = step_word(state_, words[i]);
}

std::uint32_t crc32(const std::uint8_t* data, std::size_t size) {
  Crc32 c;
  c.update(data, size);
  return c.value();
}

std::uint32_t crc32_words(const std::uint32_t* words, std::size_t count) {
  Crc32 c;
  c.update_words(words, count);
  return c.value();
}

}  // namespace octasim::models
