#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"
#include "sim/trace/trace.hpp"

namespace octasim::trace {

TraceError::TraceError(std::string file, int line, const std::string& message)
    : std::runtime_error(line > 0 ? fmt::format("{}:{}: {}", file, line, message)
                                  : fmt::format("{}: {}", file, message)),
      file_(std::move(file)),
      line_(line) {}

const char* op_name(Op op) {
  switch (op) {
    case Op::kRegWrite:
      return "reg_write";
    case Op::kRegRead:
      return "reg_read";
    case Op::kRegReadCheck:
      return "reg_read_check";
    case Op::kPoll:
      return "poll";
    case Op::kMemInit:
      return "mem_init";
    case Op::kMemLoad:
      return "mem_load";
    case Op::kIntrNotify:
      return "intr_notify";
    case Op::kSyncNotify:
      return "sync_notify";
    case Op::kSyncWait:
      return "sync_wait";
    case Op::kCheckCrc:
      return "check_crc";
    case Op::kCheckFile:
      return "check_file";
    case Op::kCheckNothing:
      return "check_nothing";
    case Op::kPpuSubmit:
      return "ppu_submit";
  }
  return "?";
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

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

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

class LineParser {
 public:
  LineParser(const std::string& file, int line, std::string dir)
      : file_(file), line_(line), dir_(std::move(dir)) {}

  [[noreturn]] void fail(const std::string& msg) const { throw TraceError(file_, line_, msg); }

  Command parse(std::string_view text) {
    const auto open = text.find('(');
    const auto close = text.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      fail(fmt::format("expected 'command(arguments);', got '{}'", text));
    }
    const std::string_view rest = trim(text.substr(close + 1));
    if (rest != ";" && !rest.empty()) fail(fmt::format("unexpected '{}' after ')'", rest));
    name_ = std::string(trim(text.substr(0, open)));
    args_ = split_args(text.substr(open + 1, close - open - 1));

    Command c{};
    c.line = line_;
    if (name_ == "reg_write") {
      expect_args(2, "reg_write(NVDLA_UNIT.REGISTER_0, value)");
      c.op = Op::kRegWrite;
      c.reg = reg(args_[0]);
      c.value = u32(args_[1], "register value");
    } else if (name_ == "reg_read") {
      expect_args(2, "reg_read(NVDLA_UNIT.REGISTER_0, name)");
      c.op = Op::kRegRead;
      c.reg = reg(args_[0]);
      c.target = args_[1];
    } else if (name_ == "reg_read_check" || name_ == "reg_read_expected") {
      expect_args(2, name_ + "(NVDLA_UNIT.REGISTER_0, expected_value)");
      c.op = Op::kRegReadCheck;
      c.reg = reg(args_[0]);
      c.value = u32(args_[1], "expected value");
    } else if (name_.rfind("poll_reg_", 0) == 0) {
      c.op = Op::kPoll;
      c.compare = compare(name_.substr(9));
      // poll_reg_x(REG, value) or, as in NVDLA's guide, poll_reg_x(target, REG, value).
      if (args_.size() != 2 && args_.size() != 3) {
        fail(fmt::format("{} takes (NVDLA_UNIT.REGISTER_0, value), got {} arguments", name_,
                         args_.size()));
      }
      c.reg = reg(args_[args_.size() - 2]);
      c.value = u32(args_.back(), "expected value");
    } else if (name_.rfind("poll_field_", 0) == 0) {
      c.op = Op::kPoll;
      c.compare = compare(name_.substr(11));
      // poll_field_x(REG.FIELD, value), (REG, FIELD, value) or (target, REG, FIELD, value).
      if (args_.size() == 2) {
        const auto dot = args_[0].rfind('.');
        if (dot == std::string::npos || args_[0].find('.') == dot) {
          fail(fmt::format("expected NVDLA_UNIT.REGISTER_0.FIELD, got '{}'", args_[0]));
        }
        c.reg = reg(args_[0].substr(0, dot));
        c.field = field(c.reg, args_[0].substr(dot + 1));
      } else if (args_.size() == 3 || args_.size() == 4) {
        c.reg = reg(args_[args_.size() - 3]);
        c.field = field(c.reg, args_[args_.size() - 2]);
      } else {
        fail(fmt::format("{} takes (NVDLA_UNIT.REGISTER_0, FIELD, value), got {} arguments", name_,
                         args_.size()));
      }
      c.value = u32(args_.back(), "expected value");
    } else if (name_ == "mem_init") {
      if (args_.size() != 4 && args_.size() != 5) {
        fail("mem_init takes (pri_mem, address, size, ALL_ZERO|ALL_ONE|RANDOM[, seed])");
      }
      c.op = Op::kMemInit;
      memory(args_[0]);
      c.addr = u64(args_[1], "address");
      c.size = u64(args_[2], "size");
      const std::string& p = args_[3];
      if (p == "ALL_ZERO") {
        c.pattern = MemPattern::kAllZero;
      } else if (p == "ALL_ONE") {
        c.pattern = MemPattern::kAllOne;
      } else if (p == "RANDOM") {
        c.pattern = MemPattern::kRandom;
      } else {
        fail(
            fmt::format("unknown mem_init pattern '{}' (expected ALL_ZERO, ALL_ONE or RANDOM)", p));
      }
      if (args_.size() == 5) {
        if (c.pattern != MemPattern::kRandom) fail("only RANDOM takes a seed");
        c.seed = u32(args_[4], "seed");
      }
    } else if (name_ == "mem_load") {
      expect_args(3, "mem_load(pri_mem, address, \"file.dat\")");
      c.op = Op::kMemLoad;
      memory(args_[0]);
      c.addr = u64(args_[1], "address");
      c.path = data_file(args_[2]);
    } else if (name_ == "ppu_submit") {
      expect_args(4, "ppu_submit(channel, pri_mem, address, \"pushbuffer.dat\")");
      c.op = Op::kPpuSubmit;
      c.channel = u32(args_[0], "channel");
      if (c.channel >= ppu_format::kChannels) {
        fail(fmt::format("PPU channel {} does not exist (channels 0 to {})", c.channel,
                         ppu_format::kChannels - 1));
      }
      memory(args_[1]);
      c.addr = u64(args_[2], "address");
      if (c.addr % 4 != 0)
        fail(fmt::format("push buffer address 0x{:x} is not 4-byte aligned", c.addr));
      c.path = data_file(args_[3]);
    } else if (name_ == "intr_notify") {
      expect_args(2, "intr_notify(INTERRUPT, sync_id)");
      c.op = Op::kIntrNotify;
      c.interrupt = interrupt(args_[0]);
      c.sync_id = identifier(args_[1], "sync id");
    } else if (name_ == "sync_notify" || name_ == "sync_wait") {
      expect_args(2, name_ + "(target, sync_id)");
      c.op = name_ == "sync_notify" ? Op::kSyncNotify : Op::kSyncWait;
      c.target = identifier(args_[0], "target");
      c.sync_id = identifier(args_[1], "sync id");
    } else if (name_ == "check_crc") {
      expect_args(5, "check_crc(sync_id, pri_mem, address, size, crc)");
      c.op = Op::kCheckCrc;
      c.sync_id = identifier(args_[0], "sync id");
      memory(args_[1]);
      c.addr = u64(args_[2], "address");
      c.size = u64(args_[3], "size");
      c.crc = u32(args_[4], "crc");
    } else if (name_ == "check_file") {
      check_file_args(c);
    } else if (name_ == "check_nothing") {
      expect_args(1, "check_nothing(sync_id)");
      c.op = Op::kCheckNothing;
      c.sync_id = identifier(args_[0], "sync id");
    } else {
      fail(fmt::format("unknown command '{}'", name_));
    }
    return c;
  }

 private:
  static std::vector<std::string> split_args(std::string_view s) {
    std::vector<std::string> out;
    if (trim(s).empty()) return out;
    std::string cur;
    bool quoted = false;
    for (const char ch : s) {
      if (ch == '"') quoted = !quoted;
      if (ch == ',' && !quoted) {
        out.emplace_back(trim(cur));
        cur.clear();
      } else {
        cur += ch;
      }
    }
    out.emplace_back(trim(cur));
    return out;
  }

  // check_file(sync_id, pri_mem, address, size, "golden.dat"[, FP16_SDP |
  //            , FP16_CC_DIRECT, R*S*C, scale, max_exp | "max_exp.dat" |
  //            , FP32_TOL, abs_tol, rel_tol | , FP16_TOL, abs_tol, rel_tol]).
  void check_file_args(Command& c) const {
    static const char* const kForms =
        "check_file(sync_id, pri_mem, address, size, \"golden.dat\"[, FP16_SDP | , "
        "FP16_CC_DIRECT, R*S*C, scale, max_exp or \"max_exp.dat\" | , FP32_TOL, abs_tol, "
        "rel_tol | , FP16_TOL, abs_tol, rel_tol])";
    if (args_.size() != 5 && args_.size() != 6 && args_.size() != 8 && args_.size() != 9) {
      fail(fmt::format("check_file expects 5, 6, 8 or 9 arguments: {}; got {}", kForms,
                       args_.size()));
    }
    c.op = Op::kCheckFile;
    c.sync_id = identifier(args_[0], "sync id");
    memory(args_[1]);
    c.addr = u64(args_[2], "address");
    c.size = u64(args_[3], "size");
    c.path = data_file(args_[4]);
    if (args_.size() == 5) return;
    const std::string& rule = args_[5];
    if (rule == "FP16_SDP" && args_.size() == 6) {
      c.file_compare = FileCompare::kFp16Sdp;
    } else if (rule == "FP16_CC_DIRECT" && args_.size() == 9) {
      c.file_compare = FileCompare::kFp16CcDirect;
      c.cc_terms = u32(args_[6], "R*S*C");
      if (c.cc_terms == 0) fail("R*S*C of FP16_CC_DIRECT must be positive");
      c.cc_scale = positive_real(args_[7], "scale");
      if (!args_[8].empty() && args_[8].front() == '"') {
        c.max_exp_path = data_file(args_[8]);
      } else {
        c.max_exp = small_int(args_[8], "max_exp");
      }
    } else if ((rule == "FP32_TOL" || rule == "FP16_TOL") && args_.size() == 8) {
      c.file_compare = rule == "FP32_TOL" ? FileCompare::kFp32Tol : FileCompare::kFp16Tol;
      c.abs_tol = tolerance(args_[6], "abs_tol");
      c.rel_tol = tolerance(args_[7], "rel_tol");
    } else {
      fail(fmt::format("unknown check_file comparison '{}' with {} arguments: {}", rule,
                       args_.size(), kForms));
    }
    const unsigned element = c.file_compare == FileCompare::kFp32Tol ? 4 : 2;
    if (c.size % element != 0 || c.addr % element != 0) {
      fail(fmt::format("{} compares {}-byte elements: address 0x{:x} and size 0x{:x} must be {}",
                       rule, element, c.addr, c.size, element == 2 ? "even" : "multiples of 4"));
    }
  }

  double positive_real(const std::string& s, const char* what) const {
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

  double tolerance(const std::string& s, const char* what) const {
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

  int small_int(const std::string& s, const char* what) const {
    const bool negative = !s.empty() && s[0] == '-';
    const std::string digits = negative ? s.substr(1) : s;
    std::uint64_t v = 0;
    if (digits.empty() || parse_number(digits, v) != digits.size() || v > 1000) {
      fail(fmt::format("expected {} (an integer between -1000 and 1000), got '{}'", what, s));
    }
    return negative ? -static_cast<int>(v) : static_cast<int>(v);
  }

  void expect_args(std::size_t n, const std::string& form) const {
    if (args_.size() != n) {
      fail(fmt::format("{} expects {} arguments: {}; got {}", name_, n, form, args_.size()));
    }
  }

  std::uint64_t u64(const std::string& s, const char* what) const {
    std::uint64_t v = 0;
    if (parse_number(s, v) != s.size() || s.empty()) {
      fail(fmt::format("expected {} (a number: 0x.. hex or decimal, below 2^64), got '{}'", what,
                       s));
    }
    return v;
  }

  std::uint32_t u32(const std::string& s, const char* what) const {
    const std::uint64_t v = u64(s, what);
    if (v > 0xffffffffu) fail(fmt::format("{} '{}' does not fit in 32 bits", what, s));
    return static_cast<std::uint32_t>(v);
  }

  std::string identifier(const std::string& s, const char* what) const {
    if (s.empty()) fail(fmt::format("expected {}, got nothing", what));
    for (const char ch : s) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') {
        fail(fmt::format("expected {} (letters, digits, '_'), got '{}'", what, s));
      }
    }
    return s;
  }

  void memory(const std::string& s) const {
    if (s != "pri_mem" && s != "1") {
      fail(fmt::format("unknown memory '{}' (expected pri_mem or 1; octasim has one DRAM)", s));
    }
  }

  std::string data_file(const std::string& s) const {
    if (s.size() < 2 || s.front() != '"' || s.back() != '"') {
      fail(fmt::format("expected a quoted file name, got '{}'", s));
    }
    std::string name = s.substr(1, s.size() - 2);
    std::string path = name.empty() || name[0] == '/' ? name : dir_ + "/" + name;
    if (!std::ifstream(path)) fail(fmt::format("data file '{}' not found ({})", name, path));
    return path;
  }

  const regs::RegisterInfo* reg(const std::string& s) const {
    const auto dot = s.find('.');
    if (dot == std::string::npos || s.rfind("NVDLA_", 0) != 0) {
      fail(fmt::format("expected a register as NVDLA_UNIT.REGISTER_0, got '{}'", s));
    }
    const std::string unit = s.substr(6, dot - 6);
    const std::string name = s.substr(dot + 1);
    const regs::RegisterInfo* r = regs::find_register(unit, name);
    if (r == nullptr) fail(fmt::format("unknown register '{}'", s));
    return r;
  }

  const regs::FieldInfo* field(const regs::RegisterInfo* r, const std::string& name) const {
    for (std::size_t i = 0; i < r->field_count; ++i) {
      if (name == r->fields[i].name) return &r->fields[i];
    }
    fail(fmt::format("register {}.{} has no field '{}'", r->unit, r->name, name));
  }

  Compare compare(const std::string& suffix) const {
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

  Interrupt interrupt(const std::string& s) const {
    // SDP_0 -> SDP_DONE_STATUS0, CDMA_DAT_1 -> CDMA_DAT_DONE_STATUS1, PPU_2 -> PPU_CH2_STATUS.
    const auto us = s.rfind('_');
    if (us != std::string::npos && us + 2 == s.size() &&
        std::isdigit(static_cast<unsigned char>(s.back()))) {
      const std::string field_name = s.rfind("PPU_", 0) == 0 && us == 3
                                         ? std::string("PPU_CH") + s.back() + "_STATUS"
                                         : s.substr(0, us) + "_DONE_STATUS" + s.back();
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

  const std::string& file_;
  int line_;
  std::string dir_;
  std::string name_;
  std::vector<std::string> args_;
};

}  // namespace

Trace parse_trace(const std::string& text, const std::string& path) {
  Trace t;
  t.path = path;
  const std::string dir = directory_of(path);
  std::istringstream in(text);
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    const std::string_view line = trim(strip_comment(raw));
    if (line.empty()) continue;
    t.commands.push_back(LineParser(path, line_no, dir).parse(line));
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
