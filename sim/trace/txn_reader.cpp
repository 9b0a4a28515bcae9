#include "sim/trace/txn_reader.hpp"
#include "sim/trace/text.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"
#include "sim/trace/txn_data.hpp"

namespace octasim::trace {
namespace {

// The nvdlav1 CSB address map: each unit's 4 KiB window (NVDLA's opendla_initial.h).
struct V1Unit {
  const char* unit;
  std::uint32_t base;
};
constexpr std::array<V1Unit, 16> kV1Units = {{
    {"GLB", 0x0000},
    {"MCIF", 0x2000},
    {"CVIF", 0x3000},
    {"BDMA", 0x4000},
    {"CDMA", 0x5000},
    {"CSC", 0x6000},
    {"CMAC_A", 0x7000},
    {"CMAC_B", 0x8000},
    {"CACC", 0x9000},
    {"SDP_RDMA", 0xa000},
    {"SDP", 0xb000},
    {"PDP_RDMA", 0xc000},
    {"PDP", 0xd000},
    {"CDP_RDMA", 0xe000},
    {"CDP", 0xf000},
    {"RBK", 0x10000},
}};
constexpr std::uint32_t kUnitWindow = 0x1000;

std::string read_text(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw TraceError(path, 0, fmt::format("cannot open {}", what));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool file_exists(const std::string& path) {
  return static_cast<bool>(std::ifstream(path));
}

// One line of a .txn trace: its words before the '#' comment, and what they must be.
class TxnLine {
 public:
  TxnLine(const std::string& path, int line, std::vector<std::string> words)
      : path_(path), line_(line), words_(std::move(words)) {}

  [[noreturn]] void fail(const std::string& msg) const { throw TraceError(path_, line_, msg); }
  [[nodiscard]] int line() const { return line_; }
  [[nodiscard]] const std::string& command() const { return words_[0]; }

  void expect(std::size_t args, const char* form) const {
    if (words_.size() != args + 1) {
      fail(fmt::format("{} expects {} argument{}: {}; got {}", command(), args,
                       args == 1 ? "" : "s", form, words_.size() - 1));
    }
  }
  // A number: 0x.. hex or decimal, below 2^64.
  [[nodiscard]] std::uint64_t number(std::size_t i, const char* what) const {
    const std::string& s = words_[i];
    std::size_t used = 0;
    std::uint64_t v = 0;
    try {
      if (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0])) != 0) {
        v = std::stoull(s, &used, s.size() > 1 && (s[1] == 'x' || s[1] == 'X') ? 16 : 10);
      }
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size()) {
      fail(fmt::format("bad {} '{}' (a number: 0x.. hex or decimal)", what, s));
    }
    return v;
  }
  [[nodiscard]] std::uint32_t u32(std::size_t i, const char* what) const {
    const std::uint64_t v = number(i, what);
    if (v > 0xffffffffu) fail(fmt::format("{} '{}' does not fit in 32 bits", what, words_[i]));
    return static_cast<std::uint32_t>(v);
  }
  // ADDR of write_reg / read_reg: 0xffffWWWW, the CSB word address WWWW on the v1 bus.
  [[nodiscard]] const regs::RegisterInfo* reg(std::size_t i) const {
    const std::uint64_t v = number(i, "register address");
    if ((v >> 16) != 0xffff) {
      fail(
          fmt::format("expected a CSB word address with the v1 bus's 0xffff prefix "
                      "(0xffffWWWW), got '{}'",
                      words_[i]));
    }
    const auto byte_addr = static_cast<std::uint32_t>((v & 0xffff) * 4);
    const regs::RegisterInfo* r = v1_register(byte_addr);
    if (r == nullptr) {
      fail(fmt::format("no NVDLA register at '{}' (CSB byte address 0x{:x} of the nvdlav1 map)",
                       words_[i], byte_addr));
    }
    return r;
  }
  [[nodiscard]] std::string data_file(std::size_t i, const std::string& dir) const {
    const std::string& name = words_[i];
    std::string path = name[0] == '/' ? name : dir + "/" + name;
    if (!file_exists(path)) fail(fmt::format("data file '{}' not found ({})", name, path));
    // A device or FIFO (/dev/zero, /dev/stdin) would be read forever.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      fail(fmt::format("data file '{}' is not a regular file ({})", name, path));
    }
    return path;
  }

 private:
  const std::string& path_;
  int line_;
  std::vector<std::string> words_;
};

Command write_reg(const TxnLine& l) {
  l.expect(2, "write_reg ADDR DATA");
  const regs::RegisterInfo* r = l.reg(1);
  return {Op::kRegWrite, l.line(),
          RegWrite{r, l.u32(2, "register value"), r->addr != regs::GLB::S_INTR_STATUS::kAddr}};
}

Command read_reg(const TxnLine& l, const TxnOptions& o) {
  l.expect(3, "read_reg ADDR MASK DATA");
  const regs::RegisterInfo* r = l.reg(1);
  const std::uint32_t mask = l.u32(2, "mask");
  const std::uint32_t data = l.u32(3, "expected value");
  if ((data & ~mask) != 0) {
    l.fail(
        fmt::format("expected value 0x{:08x} has bits outside the mask 0x{:08x}: the "
                    "comparison (value & MASK) == DATA can never hold",
                    data, mask));
  }
  if (r->addr == regs::GLB::S_INTR_STATUS::kAddr) {
    Poll p;
    p.reg = r;
    p.value = data;
    p.mask = mask;
    p.max_reads = o.poll_reads;
    p.interrupt_wait = data != 0;
    return {Op::kPoll, l.line(), p};
  }
  return {Op::kRegReadCheck, l.line(), RegReadCheck{r, data, mask}};
}

// The testbench's wait for the interrupt line: until GLB S_INTR_STATUS has a bit set (the traces
// leave S_INTR_MASK at its reset value, so every status bit drives the line).
Command wait_interrupt(const TxnLine& l, const TxnOptions& o) {
  Poll p;
  p.reg = regs::find_register(regs::GLB::S_INTR_STATUS::kAddr);
  p.compare = Compare::kNotEqual;
  p.value = 0;
  p.max_reads = o.poll_reads;
  p.interrupt_wait = true;
  return {Op::kPoll, l.line(), p};
}

Command load_mem(const TxnLine& l, const std::string& dir) {
  l.expect(3, "load_mem ADDR SIZE FILE");
  MemLoad m;
  m.addr = l.number(1, "address");
  m.size = l.number(2, "size");
  m.path = l.data_file(3, dir);
  m.format = DataFormat::kV1Surface;
  m.space_by_address = true;
  try {
    (void)read_data_file(m.path, m.format, m.size);
  } catch (const TraceError& e) {
    l.fail(fmt::format("load_mem: {}", e.what()));
  }
  return {Op::kMemLoad, l.line(), m};
}

// The golden dump as a check of [addr, addr + size); the dump's header must name that region.
Command dump_check(const TxnLine& l, const std::string& path, std::uint64_t addr,
                   std::uint64_t size) {
  V1Dump dump;
  try {
    dump = read_v1_dump(path);
  } catch (const TraceError& e) {
    l.fail(fmt::format("{}: {}", l.command(), e.what()));
  }
  if (dump.start != addr || dump.size != size) {
    l.fail(fmt::format("{} 0x{:x}+0x{:x} does not match the golden {} (0x{:x}+0x{:x})", l.command(),
                       addr, size, path, dump.start, dump.size));
  }
  CheckFile c;
  c.format = DataFormat::kV1Dump;
  c.space_by_address = true;
  c.addr = addr;
  c.size = size;
  c.path = path;
  return {Op::kCheckFile, l.line(), c};
}

std::vector<std::string> words_of(std::string_view line) {
  std::vector<std::string> words;
  std::istringstream in{std::string(line.substr(0, line.find('#')))};
  for (std::string w; in >> w;) words.push_back(std::move(w));
  return words;
}

}  // namespace

bool is_txn_path(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".txn") == 0;
}

const regs::RegisterInfo* v1_register(std::uint32_t v1_addr) {
  for (const V1Unit& u : kV1Units) {
    if (v1_addr < u.base || v1_addr - u.base >= kUnitWindow) continue;
    // The unit's window in octasim's map: that of its first register.
    for (const regs::RegisterInfo& r : regs::nvdla_registers()) {
      if (std::string_view(r.unit) != u.unit) continue;
      const regs::RegisterInfo* found =
          regs::find_register((r.addr & ~(kUnitWindow - 1)) + (v1_addr - u.base));
      return found != nullptr && std::string_view(found->unit) == u.unit ? found : nullptr;
    }
    return nullptr;
  }
  return nullptr;
}

TxnOptions parse_plusargs(const std::string& text, const std::string& path) {
  TxnOptions o;
  std::istringstream in(text);
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    for (const std::string& arg : words_of(raw)) {
      const std::string key = "+read_reg_poll_retries=";
      if (arg == "+continue_on_fail") continue;  // a failed check never stops a run
      if (arg.rfind(key, 0) == 0) {
        const TxnLine l(path, line_no, {"plusargs", arg.substr(key.size())});
        o.poll_reads = l.number(1, "read_reg_poll_retries");
        if (o.poll_reads == 0) l.fail("+read_reg_poll_retries must be at least 1");
        continue;
      }
      throw TraceError(path, line_no,
                       fmt::format("unknown plusarg '{}' (expected +read_reg_poll_retries=N or "
                                   "+continue_on_fail)",
                                   arg));
    }
  }
  return o;
}

Trace parse_txn(const std::string& text, const std::string& path, const TxnOptions& options) {
  Trace t;
  t.path = path;
  const std::string dir = directory_of(path);
  std::istringstream in(text);
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    std::vector<std::string> words = words_of(raw);
    if (words.empty()) continue;
    const TxnLine l(path, line_no, std::move(words));
    const std::string& cmd = l.command();
    if (cmd == "write_reg") {
      t.commands.push_back(write_reg(l));
    } else if (cmd == "read_reg") {
      t.commands.push_back(read_reg(l, options));
    } else if (cmd == "load_mem") {
      t.commands.push_back(load_mem(l, dir));
    } else if (cmd == "dump_mem") {
      l.expect(3, "dump_mem ADDR SIZE FILE");
      t.commands.push_back(
          dump_check(l, l.data_file(3, dir), l.number(1, "address"), l.number(2, "size")));
    } else if (cmd == "wait") {
      l.expect(0, "wait");
      t.commands.push_back(wait_interrupt(l, options));
    } else {
      l.fail(
          fmt::format("unknown command '{}' (expected load_mem, write_reg, read_reg, wait or "
                      "dump_mem)",
                      cmd));
    }
  }
  return t;
}

Trace parse_txn_file(const std::string& path) {
  const std::string text = read_text(path, "trace file");
  const std::string dir = directory_of(path);
  TxnOptions options;
  if (const std::string plusargs = dir + "/plusargs.txt"; file_exists(plusargs)) {
    options = parse_plusargs(read_text(plusargs, "plusargs file"), plusargs);
  }
  Trace t = parse_txn(text, path, options);
  const std::string golden = dir + "/output_feature_map.dat";
  bool named = false;
  for (const Command& c : t.commands) {
    if (c.op == Op::kCheckFile && c.as<CheckFile>().path == golden) named = true;
  }
  if (!named && file_exists(golden)) {
    const int end_line = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
    V1Dump dump;
    try {
      dump = read_v1_dump(golden);
    } catch (const TraceError& e) {
      throw TraceError(path, end_line, fmt::format("the golden output: {}", e.what()));
    }
    t.commands.push_back(dump_check(TxnLine(path, end_line, {"output_feature_map.dat"}), golden,
                                    dump.start, dump.size));
  }
  return t;
}

Trace read_trace_file(const std::string& path) {
  return is_txn_path(path) ? parse_txn_file(path) : parse_trace_file(path);
}

}  // namespace octasim::trace
