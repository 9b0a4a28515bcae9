#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"
#include "sim/trace/command_table.hpp"
#include "sim/trace/text.hpp"
#include "sim/trace/trace.hpp"

namespace octasim::trace {

TraceError::TraceError(std::string file, int line, const std::string& message)
    : std::runtime_error(line > 0 ? fmt::format("{}:{}: {}", file, line, message)
                                  : fmt::format("{}: {}", file, message)),
      file_(std::move(file)),
      line_(line) {}

const char* op_name(Op op) {
  const auto i = static_cast<std::size_t>(op);
  return i < kCommands.size() ? kCommands[i].name : "?";
}

namespace {

bool is_space(char ch) {
  return std::isspace(static_cast<unsigned char>(ch)) != 0;
}

// An unsigned number at the start of `s`: 0x/0X and hex digits, or decimal digits (a leading
// zero does not make it octal: NVDLA traces write hex as 0x.. and everything else in decimal).
// No sign, no leading space. Returns the characters used, 0 when there is no number or it does
// not fit in 64 bits.
std::size_t parse_number(std::string_view s, std::uint64_t& value) {
  int base = 10;
  std::size_t i = 0;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    i = 2;
  }
  const std::size_t first = i;
  std::uint64_t v = 0;
  for (; i < s.size(); ++i) {
    const char ch = s[i];
    unsigned d = 0;
    if (ch >= '0' && ch <= '9') {
      d = static_cast<unsigned>(ch - '0');
    } else if (base == 16 && ch >= 'a' && ch <= 'f') {
      d = static_cast<unsigned>(ch - 'a' + 10);
    } else if (base == 16 && ch >= 'A' && ch <= 'F') {
      d = static_cast<unsigned>(ch - 'A' + 10);
    } else {
      break;
    }
    if (v > (~std::uint64_t{0} - d) / static_cast<unsigned>(base)) return 0;
    v = v * static_cast<unsigned>(base) + d;
  }
  if (i == first) return 0;
  value = v;
  return i;
}

// `line` up to a "//" comment; "//" inside a quoted file name is not one.
std::string_view strip_comment(std::string_view line) {
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') {
      quoted = !quoted;
    } else if (!quoted && line[i] == '/' && i + 1 < line.size() && line[i + 1] == '/') {
      return line.substr(0, i);
    }
  }
  return line;
}

// Splits the text between the parentheses at commas outside quotes; each argument trimmed.
void split_args(std::string_view s, std::vector<std::string>& out) {
  out.clear();
  if (trim(s).empty()) return;
  std::size_t begin = 0;
  bool quoted = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') quoted = !quoted;
    if (s[i] == ',' && !quoted) {
      out.emplace_back(trim(s.substr(begin, i - begin)));
      begin = i + 1;
    }
  }
  out.emplace_back(trim(s.substr(begin)));
}

bool spelled(std::string_view spelling, std::string_view name) {
  if (!spelling.empty() && spelling.back() == '*') {
    spelling.remove_suffix(1);
    return name.substr(0, spelling.size()) == spelling;
  }
  return !spelling.empty() && name == spelling;
}

}  // namespace

const CommandSpec* find_command(std::string_view name) {
  for (const CommandSpec& spec : kCommands) {
    for (const std::string_view spelling : spec.spellings) {
      if (spelled(spelling, name)) return &spec;
    }
  }
  return nullptr;
}

void ArgReader::fail(const std::string& msg) const {
  throw TraceError(file_, line_, msg);
}

void ArgReader::expect_args(std::size_t n, const std::string& form) const {
  if (args_.size() != n) {
    fail(fmt::format("{} expects {} arguments: {}; got {}", name_, n, form, args_.size()));
  }
}

std::uint64_t ArgReader::u64(const std::string& s, const char* what) const {
  std::uint64_t v = 0;
  if (parse_number(s, v) != s.size() || s.empty()) {
    fail(fmt::format("expected {} (a number: 0x.. hex or decimal, below 2^64), got '{}'", what, s));
  }
  return v;
}

std::uint32_t ArgReader::u32(const std::string& s, const char* what) const {
  const std::uint64_t v = u64(s, what);
  if (v > 0xffffffffu) fail(fmt::format("{} '{}' does not fit in 32 bits", what, s));
  return static_cast<std::uint32_t>(v);
}

double ArgReader::positive_real(const std::string& s, const char* what) const {
  std::size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || !(v > 0.0) || !std::isfinite(v)) {
    fail(fmt::format("expected {} (a positive number), got '{}'", what, s));
  }
  return v;
}

double ArgReader::tolerance(const std::string& s, const char* what) const {
  std::size_t used = 0;
  double v = -1.0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || !(v >= 0.0) || !std::isfinite(v)) {
    fail(fmt::format("expected {} (a non-negative number), got '{}'", what, s));
  }
  return v;
}

int ArgReader::small_int(const std::string& s, const char* what) const {
  const bool negative = !s.empty() && s[0] == '-';
  const std::string digits = negative ? s.substr(1) : s;
  std::uint64_t v = 0;
  if (digits.empty() || parse_number(digits, v) != digits.size() || v > 1000) {
    fail(fmt::format("expected {} (an integer between -1000 and 1000), got '{}'", what, s));
  }
  return negative ? -static_cast<int>(v) : static_cast<int>(v);
}

std::string ArgReader::identifier(const std::string& s, const char* what) const {
  if (s.empty()) fail(fmt::format("expected {}, got nothing", what));
  for (const char ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') {
      fail(fmt::format("expected {} (letters, digits, '_'), got '{}'", what, s));
    }
  }
  return s;
}

std::string name_key(std::string_view written) {
  std::string key(written);
  for (char& c : key) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return key;
}

MemorySpace ArgReader::memory(const std::string& s) const {
  const std::string key = name_key(s);
  if (key == "PRI_MEM" || s == "1") return MemorySpace::kDram;
  if (key == "SEC_MEM") return MemorySpace::kCvSram;
  fail(fmt::format("unknown memory '{}' (expected pri_mem or 1: DRAM, sec_mem: the CV-SRAM)", s));
}

std::string ArgReader::data_file(const std::string& s) const {
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') {
    fail(fmt::format("expected a quoted file name, got '{}'", s));
  }
  std::string name = s.substr(1, s.size() - 2);
  std::string path = name.empty() || name[0] == '/' ? name : dir_ + "/" + name;
  if (!std::ifstream(path)) fail(fmt::format("data file '{}' not found ({})", name, path));
  // A device or FIFO (/dev/zero, /dev/stdin) would be read forever.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    fail(fmt::format("data file '{}' is not a regular file ({})", name, path));
  }
  return path;
}

const regs::RegisterInfo* ArgReader::reg(const std::string& s) const {
  const std::string key = name_key(s);
  const auto dot = key.find('.');
  if (dot == std::string::npos || key.rfind("NVDLA_", 0) != 0) {
    fail(fmt::format("expected a register as NVDLA_UNIT.REGISTER_0, got '{}'", s));
  }
  const std::string unit = key.substr(6, dot - 6);
  const std::string name = key.substr(dot + 1);
  const regs::RegisterInfo* r = regs::find_register(unit, name);
  if (r == nullptr) fail(fmt::format("unknown register '{}'", s));
  return r;
}

const regs::FieldInfo* ArgReader::field(const regs::RegisterInfo* r,
                                        const std::string& name) const {
  const std::string key = name_key(name);
  for (std::size_t i = 0; i < r->field_count; ++i) {
    if (key == r->fields[i].name) return &r->fields[i];
  }
  fail(fmt::format("register {}.{} has no field '{}'", r->unit, r->name, name));
}

Compare ArgReader::compare(const std::string& suffix) const {
  if (suffix == "equal") return Compare::kEqual;
  if (suffix == "greater") return Compare::kGreater;
  if (suffix == "less") return Compare::kLess;
  if (suffix == "not_equal") return Compare::kNotEqual;
  if (suffix == "not_greater" || suffix == "nt_greater") return Compare::kNotGreater;
  if (suffix == "not_less") return Compare::kNotLess;
  fail(
      fmt::format("unknown poll comparison in '{}' (expected equal, greater, less, not_equal, "
                  "not_greater or not_less)",
                  name_));
}

Interrupt ArgReader::interrupt(const std::string& s) const {
  // SDP_0 -> SDP_DONE_STATUS0, CDMA_DAT_1 -> CDMA_DAT_DONE_STATUS1, PPU_2 -> PPU_CH2_STATUS.
  const std::string key = name_key(s);
  const auto us = key.rfind('_');
  if (us != std::string::npos && us + 2 == key.size() &&
      std::isdigit(static_cast<unsigned char>(key.back()))) {
    const std::string field_name = key.rfind("PPU_", 0) == 0 && us == 3
                                       ? std::string("PPU_CH") + key.back() + "_STATUS"
                                       : key.substr(0, us) + "_DONE_STATUS" + key.back();
    const regs::RegisterInfo* status = regs::find_register(regs::GLB::S_INTR_STATUS::kAddr);
    for (std::size_t i = 0; status != nullptr && i < status->field_count; ++i) {
      if (field_name == status->fields[i].name) return {s, status->fields[i].field.lsb};
    }
  }
  fail(
      fmt::format("unknown interrupt '{}' (expected SDP_0, PDP_1, CDP_0, CACC_0, CDMA_DAT_0, "
                  "CDMA_WT_0, BDMA_0, RUBIK_0, OCTAV_0 or their _1 forms, or PPU_0 to PPU_3)",
                  s));
}

// "name(arguments);" -> the command its row parses; the name and arguments are reused buffers.
Trace parse_trace(const std::string& text, const std::string& path) {
  Trace t;
  t.path = path;
  const std::string dir = directory_of(path);
  std::string name;
  std::vector<std::string> args;
  std::istringstream in(text);
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    const std::string_view line = trim(strip_comment(raw));
    if (line.empty()) continue;
    const auto open = line.find('(');
    const auto close = line.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      throw TraceError(path, line_no,
                       fmt::format("expected 'command(arguments);', got '{}'", line));
    }
    const std::string_view rest = trim(line.substr(close + 1));
    if (rest != ";" && !rest.empty()) {
      throw TraceError(path, line_no, fmt::format("unexpected '{}' after ')'", rest));
    }
    name.assign(trim(line.substr(0, open)));
    split_args(line.substr(open + 1, close - open - 1), args);
    const CommandSpec* spec = find_command(name);
    if (spec == nullptr) throw TraceError(path, line_no, fmt::format("unknown command '{}'", name));
    t.commands.push_back(
        {spec->op, line_no, spec->parse(ArgReader(path, line_no, dir, name, args))});
  }
  return t;
}

Trace parse_trace_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TraceError(path, 0, "cannot open trace file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_trace(ss.str(), path);
}

namespace {

const char* const kPacketForm = "expected {offset:0x.., size:N, payload:0x.. 0x..}";

// Errors of a .dat file: "file:line: message".
class DatLine {
 public:
  DatLine(const std::string& path, int line) : path_(path), line_(line) {}
  [[noreturn]] void fail(const std::string& msg) const { throw TraceError(path_, line_, msg); }

 private:
  const std::string& path_;
  int line_;
};

// One packet's text between its braces: "offset:0x20, size:4, payload:0x00 0x10 0x20 0x30".
DatPacket parse_packet(std::string_view body, const DatLine& at) {
  const std::string form = kPacketForm;
  const auto off_pos = body.find("offset:");
  const auto size_pos = body.find("size:");
  const auto pay_pos = body.find("payload:");
  if (off_pos == std::string_view::npos || size_pos == std::string_view::npos ||
      pay_pos == std::string_view::npos) {
    at.fail(form);
  }
  // A field's number, then the end of the packet or a comma.
  const auto number = [&](std::size_t pos, const char* what) {
    std::string_view rest = body.substr(pos);
    while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
    std::uint64_t v = 0;
    const std::size_t used = parse_number(rest, v);
    std::string_view after = rest.substr(used);
    while (!after.empty() && is_space(after.front())) after.remove_prefix(1);
    if (used == 0 || (!after.empty() && after.front() != ',')) {
      at.fail(fmt::format("bad {} '{}' (a number: 0x.. hex or decimal, below 2^64): {}", what,
                          trim(rest.substr(0, rest.find(','))), form));
    }
    return v;
  };
  const std::uint64_t offset = number(off_pos + 7, "offset");
  const std::uint64_t size = number(size_pos + 5, "size");
  DatPacket p{offset, {}};
  std::string_view payload = body.substr(pay_pos + 8);
  payload = payload.substr(0, payload.find(','));
  std::istringstream bytes{std::string(payload)};
  std::string tok;
  while (bytes >> tok) {
    std::uint64_t v = 0;
    if (tok.size() < 3 || tok[0] != '0' || (tok[1] != 'x' && tok[1] != 'X') ||
        parse_number(tok, v) != tok.size() || v > 0xff) {
      at.fail(fmt::format("payload byte '{}' is not 0x00..0xff", tok));
    }
    p.payload.push_back(static_cast<std::uint8_t>(v));
  }
  if (p.payload.size() != size) {
    at.fail(
        fmt::format("packet says size:{} but carries {} payload bytes", size, p.payload.size()));
  }
  return p;
}

}  // namespace

// NVDLA's memory surface file: "{", packets "{offset:.., size:.., payload:..}" joined by commas,
// "}". A packet lies on one line; a line may hold several, and "//" starts a comment.
std::vector<DatPacket> read_dat_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TraceError(path, 0, "cannot open data file");
  std::vector<DatPacket> packets;
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    const DatLine at(path, line_no);
    std::string_view line = raw;
    for (;;) {
      while (!line.empty() && (is_space(line.front()) || line.front() == ',')) {
        line.remove_prefix(1);
      }
      if (line.empty() || line.rfind("//", 0) == 0) break;
      if (line.front() == '}') {  // the file's closing brace
        line.remove_prefix(1);
        continue;
      }
      const std::string form = kPacketForm;
      if (line.front() != '{') at.fail(fmt::format("{}, got '{}'", form, line));
      const std::string_view inner = trim(line.substr(1));
      if (inner.empty() || inner.front() == '{' || inner.rfind("//", 0) == 0) {
        line.remove_prefix(1);  // the file's opening brace
        continue;
      }
      const auto close = line.find('}');
      if (close == std::string_view::npos) at.fail(form + " on one line");
      const std::string_view body = line.substr(1, close - 1);
      if (body.find('{') != std::string_view::npos) at.fail(form + " on one line");
      packets.push_back(parse_packet(body, at));
      line.remove_prefix(close + 1);
    }
  }
  return packets;
}

}  // namespace octasim::trace
