#include "sim/trace/txn_data.hpp"
#include "sim/trace/text.hpp"

#include <cctype>
#include <fstream>
#include <sstream>
#include <string_view>

#include <fmt/core.h>

#include "sim/trace/trace.hpp"

namespace octasim::trace {
namespace {

// "0x.." with one or two hex digits; false for anything else.
bool parse_byte(std::string_view tok, std::uint8_t& out) {
  if (tok.size() < 3 || tok.size() > 4 || tok[0] != '0' || (tok[1] != 'x' && tok[1] != 'X')) {
    return false;
  }
  unsigned v = 0;
  for (const char ch : tok.substr(2)) {
    if (std::isxdigit(static_cast<unsigned char>(ch)) == 0) return false;
    v = v * 16 +
        static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(ch)) != 0
                                  ? ch - '0'
                                  : std::tolower(static_cast<unsigned char>(ch)) - 'a' + 10);
  }
  out = static_cast<std::uint8_t>(v);
  return true;
}

bool is_byte_line(std::string_view line) {
  return line.size() >= 2 && line[0] == '0' && (line[1] == 'x' || line[1] == 'X');
}

// Appends the bytes of one line of 0x.. tokens; a token that is not one is an error.
void append_bytes(std::string_view line, const std::string& path, int line_no,
                  std::vector<std::uint8_t>& out) {
  std::istringstream in{std::string(line)};
  std::string tok;
  while (in >> tok) {
    std::uint8_t b = 0;
    if (!parse_byte(tok, b)) {
      throw TraceError(path, line_no, fmt::format("expected a byte 0x00..0xff, got '{}'", tok));
    }
    out.push_back(b);
  }
}

std::ifstream open_data(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TraceError(path, 0, "cannot open data file");
  return in;
}

// A hexadecimal or decimal number filling all of `s`.
bool parse_u64(std::string_view s, std::uint64_t& out) {
  const std::string text(trim(s));
  if (text.empty() || text[0] == '-' || text[0] == '+') return false;
  std::size_t used = 0;
  try {
    out = std::stoull(text, &used, 0);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size();
}

}  // namespace

V1Surface read_v1_surface(const std::string& path) {
  std::ifstream in = open_data(path);
  V1Surface s;
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    if (is_byte_line(line)) {
      append_bytes(line, path, line_no, s.bytes);
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string_view::npos || !s.bytes.empty()) {
      throw TraceError(path, line_no,
                       fmt::format("expected a 'Key = value' header line{} or 0x.. bytes, got '{}'",
                                   s.bytes.empty() ? "" : " (only before the bytes)", line));
    }
    std::string_view value = line.substr(eq + 1);
    value = trim(value.substr(0, value.find('#')));
    s.header[std::string(trim(line.substr(0, eq)))] = std::string(value);
  }
  s.last_line = line_no;
  if (const auto it = s.header.find("Data_size"); it != s.header.end()) {
    std::uint64_t size = 0;
    if (!parse_u64(it->second, size)) {
      throw TraceError(path, 0, fmt::format("Data_size '{}' is not a number", it->second));
    }
    if (s.bytes.size() < size) {
      throw TraceError(path, line_no,
                       fmt::format("truncated: Data_size = 0x{:x} but the file holds 0x{:x} bytes",
                                   size, s.bytes.size()));
    }
  }
  return s;
}

V1Dump read_v1_dump(const std::string& path) {
  std::ifstream in = open_data(path);
  V1Dump d;
  std::string raw;
  int line_no = 0;
  bool header = false;
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string_view line = trim(raw);
    if (line.empty()) continue;
    if (!header) {
      const std::string_view form = "dumped memory,start_address=0x.. size=0x..";
      const auto a = line.find("start_address=");
      const auto z = line.find(" size=");
      if (line.rfind("dumped memory,", 0) != 0 || a == std::string_view::npos ||
          z == std::string_view::npos || z < a ||
          !parse_u64(line.substr(a + 14, z - a - 14), d.start) ||
          !parse_u64(line.substr(z + 6), d.size)) {
        throw TraceError(path, line_no, fmt::format("expected '{}', got '{}'", form, line));
      }
      header = true;
    } else if (is_byte_line(line)) {
      append_bytes(line, path, line_no, d.bytes);
    } else if (line.rfind("memory type:", 0) != 0 && line.find_first_not_of('=') != line.npos &&
               line != "dump done") {
      throw TraceError(path, line_no, fmt::format("expected 0x.. bytes, got '{}'", line));
    }
  }
  if (!header) throw TraceError(path, 0, "empty dump (expected 'dumped memory,start_address=..')");
  if (d.bytes.size() != d.size) {
    throw TraceError(
        path, line_no,
        fmt::format("the dump says size=0x{:x} but holds 0x{:x} bytes", d.size, d.bytes.size()));
  }
  return d;
}

std::vector<DatPacket> read_data_file(const std::string& path, DataFormat format,
                                      std::uint64_t size) {
  switch (format) {
    case DataFormat::kPackets:
      return read_dat_file(path);
    case DataFormat::kV1Surface: {
      V1Surface s = read_v1_surface(path);
      if (s.bytes.size() < size) {
        throw TraceError(path, s.last_line,
                         fmt::format("truncated: load_mem asks for 0x{:x} bytes but the file "
                                     "holds 0x{:x}",
                                     size, s.bytes.size()));
      }
      s.bytes.resize(static_cast<std::size_t>(size));
      return {DatPacket{0, std::move(s.bytes)}};
    }
    case DataFormat::kV1Dump:
      return {DatPacket{0, read_v1_dump(path).bytes}};
  }
  return {};
}

}  // namespace octasim::trace
