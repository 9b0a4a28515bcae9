// The trace command table (internal to sim/trace): one row per command — the names a trace
// spells it with, how its arguments are read and checked, and what the player does with it.
// Adding a command is adding its argument struct to trace.hpp (a member of Args, with an Op
// of the same position) and its row to kCommands in commands.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"

namespace octasim::trace {

// Names in the trace syntax — registers and their units, fields, interrupts, memories, mem_init
// patterns — are case-insensitive, as NVDLA's traces use them (nv_large's write
// intr_notify(cdma_dat_0, ...)): every lookup compares this key of the written name (its ASCII
// upper case) with the canonical spelling. Errors and reports keep the name as written.
[[nodiscard]] std::string name_key(std::string_view written);

// The arguments of one trace line, and the readers that check them: each failure throws a
// TraceError "file:line: what was expected".
class ArgReader {
 public:
  ArgReader(const std::string& file, int line, const std::string& dir, const std::string& name,
            const std::vector<std::string>& args)
      : file_(file), line_(line), dir_(dir), name_(name), args_(args) {}

  [[noreturn]] void fail(const std::string& msg) const;

  // The command's name as the trace spells it (reg_read_expected, poll_field_not_less, ...).
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] std::size_t size() const { return args_.size(); }
  [[nodiscard]] const std::string& operator[](std::size_t i) const { return args_[i]; }
  [[nodiscard]] const std::string& back() const { return args_.back(); }

  // Fails with "<name> expects <n> arguments: <form>; got <count>" unless there are `n`.
  void expect_args(std::size_t n, const std::string& form) const;

  [[nodiscard]] std::uint64_t u64(const std::string& s, const char* what) const;
  [[nodiscard]] std::uint32_t u32(const std::string& s, const char* what) const;
  [[nodiscard]] double positive_real(const std::string& s, const char* what) const;
  [[nodiscard]] double tolerance(const std::string& s, const char* what) const;
  [[nodiscard]] int small_int(const std::string& s, const char* what) const;
  [[nodiscard]] std::string identifier(const std::string& s, const char* what) const;
  // pri_mem or 1: DRAM; sec_mem: the CV-SRAM (whether the configuration has one is checked
  // when the command plays).
  [[nodiscard]] MemorySpace memory(const std::string& s) const;
  [[nodiscard]] std::string data_file(const std::string& s) const;
  [[nodiscard]] const regs::RegisterInfo* reg(const std::string& s) const;
  [[nodiscard]] const regs::FieldInfo* field(const regs::RegisterInfo* r,
                                             const std::string& name) const;
  // The comparison a poll_reg_ / poll_field_ name ends with.
  [[nodiscard]] Compare compare(const std::string& suffix) const;
  [[nodiscard]] Interrupt interrupt(const std::string& s) const;

 private:
  const std::string& file_;
  int line_;
  const std::string& dir_;
  const std::string& name_;
  const std::vector<std::string>& args_;
};

// A trace being played: the device, what the checks found and the sync points raised so far.
class Player {
 public:
  Player(const Trace& t, Device& d, const PlayerOptions& o) : trace_(t), dev_(d), opt_(o) {}

  [[nodiscard]] PlayResult run();

  [[nodiscard]] Device& device() { return dev_; }
  [[nodiscard]] const Device& device() const { return dev_; }
  [[nodiscard]] const PlayerOptions& options() const { return opt_; }
  [[nodiscard]] const std::string& trace_path() const { return trace_.path; }
  [[nodiscard]] PlayResult& result() { return result_; }

  [[noreturn]] void fail(const Command& c, const std::string& msg) const;
  void report(const std::string& line) const;
  // Records a check's outcome and reports "PASS line N: description" / "FAIL line N: ...".
  void check(const Command& c, std::string description, bool pass, std::string detail);

  // A register write that counts towards the trace's timing (first and last write cycles).
  void write_register(std::uint32_t addr, std::uint32_t value);
  [[nodiscard]] std::uint64_t last_write_cycle() const { return last_write_cycle_; }

  void notify(const std::string& sync_id) { notified_.insert(sync_id); }
  // Fails unless an earlier intr_notify or sync_notify raised `sync_id`.
  void require_notified(const Command& c, const std::string& sync_id) const;

 private:
  const Trace& trace_;
  Device& dev_;
  const PlayerOptions& opt_;
  PlayResult result_;
  std::set<std::string> notified_;
  bool wrote_ = false;
  std::uint64_t last_write_cycle_ = 0;
};

// One row of the command table.
struct CommandSpec {
  Op op;
  const char* name;  // op_name(): how the player's messages name the command
  // How traces spell it; a trailing '*' matches any suffix (poll_reg_equal, poll_reg_less, ...).
  std::array<std::string_view, 2> spellings;
  // A valid line per spelling, in the command's shortest form (without one of its arguments it
  // is malformed): the tests play every row from these.
  std::array<std::string_view, 2> examples;
  Args (*parse)(const ArgReader& args);
  void (*play)(Player& player, const Command& c);
};

template <class T, std::size_t I = 0>
constexpr std::size_t args_index() {
  static_assert(I < std::variant_size_v<Args>, "not an alternative of trace::Args");
  if constexpr (std::is_same_v<std::variant_alternative_t<I, Args>, T>) {
    return I;
  } else {
    return args_index<T, I + 1>();
  }
}

// A row from typed functions: `Parse(const ArgReader&)` returns the command's argument struct
// T, `Play(Player&, const Command&, const T&)` runs it; its Op is T's position in Args.
template <auto Parse, auto Play>
constexpr CommandSpec command(const char* name, std::array<std::string_view, 2> spellings,
                              std::array<std::string_view, 2> examples) {
  using T = decltype(Parse(std::declval<const ArgReader&>()));
  return {static_cast<Op>(args_index<T>()),
          name,
          spellings,
          examples,
          [](const ArgReader& a) -> Args { return Parse(a); },
          [](Player& p, const Command& c) { Play(p, c, *std::get_if<T>(&c.args)); }};
}

// The table, in Op order.
extern const std::array<CommandSpec, std::variant_size_v<Args>> kCommands;

// The row whose spelling matches `name`, or nullptr.
[[nodiscard]] const CommandSpec* find_command(std::string_view name);

// check_file (check_file.cpp): its arguments and its comparisons.
[[nodiscard]] CheckFile parse_check_file(const ArgReader& a);
// The memory of an access in a .txn trace, which names none: NVDLA's first-release test bench
// has one address map with the CV-SRAM at its own addresses, so an access inside the CV-SRAM's
// range (on a configuration with one; hw.mem.cvsram_base) is the CV-SRAM's, any other DRAM's.
[[nodiscard]] MemorySpace memory_space_at(Device& device, std::uint64_t addr, std::uint64_t size);
// `declared`, or memory_space_at when `by_address`.
[[nodiscard]] inline MemorySpace access_space(Device& device, MemorySpace declared, bool by_address,
                                              std::uint64_t addr, std::uint64_t size) {
  return by_address ? memory_space_at(device, addr, size) : declared;
}
void play_check_file(Player& p, const Command& c, const CheckFile& a);
// A region a command initialises or checks: inside `mem` (std::out_of_range otherwise) and at
// most kMaxRegionBytes (std::length_error), checked before anything is allocated or read.
void check_region(const MemoryImage& mem, std::uint64_t addr, std::uint64_t size);

}  // namespace octasim::trace
