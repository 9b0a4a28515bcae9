// Statistics: counters a module registers once, with a name, a description and a unit, in a group
// named after the module's path (`dla.CONV`, `dla.dram`), so that one counter is the single
// source of every number printed, written to a report or read back through a register.
//
// A counter only ever grows (a cumulative 64-bit count). Like NVDLA's D_PERF registers, which
// the hardware clears when a layer starts, a group can mark the start of a layer and answer
// "how much since then"; snapshots give the values at any instant for other deltas.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace octasim::stats {

enum class Unit : std::uint8_t { kCount, kCycles, kBytes, kOps };
[[nodiscard]] std::string_view unit_name(Unit unit);

struct CounterInfo {
  std::string name;         // within its group: busy_cycles
  std::string description;  // one sentence: what is counted, and when
  Unit unit;
  std::string register_name;  // the NVDLA register it feeds (NVDLA_CDMA.D_PERF_DAT_READ_STALL_0)
};

class Group;

// A handle to a registered counter: cheap to copy, cheap to add to.
class Counter {
 public:
  Counter() = default;
  Counter& operator+=(std::uint64_t n) {
    *value_ += n;
    return *this;
  }
  Counter& operator++() {
    ++*value_;
    return *this;
  }
  [[nodiscard]] std::uint64_t value() const { return *value_; }
  [[nodiscard]] std::size_t index() const { return index_; }

 private:
  friend class Group;
  Counter(std::uint64_t* value, std::size_t index) : value_(value), index_(index) {}
  std::uint64_t* value_ = nullptr;
  std::size_t index_ = 0;
};

class Group {
 public:
  explicit Group(std::string path) : path_(std::move(path)) {}
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  // Registers a counter (a name may be registered once per group; a second time is a logic
  // error). `register_name` names the NVDLA register the counter's per-layer value is read
  // through, if any.
  Counter add(std::string name, std::string description, Unit unit, std::string register_name = {});

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::size_t size() const { return info_.size(); }
  [[nodiscard]] const CounterInfo& info(std::size_t i) const { return info_[i]; }
  [[nodiscard]] std::uint64_t value(std::size_t i) const { return values_[i]; }
  // `path.name`, e.g. dla.CONV.busy_cycles.
  [[nodiscard]] std::string full_name(std::size_t i) const { return path_ + "." + info_[i].name; }

  // The values now, in registration order.
  [[nodiscard]] std::vector<std::uint64_t> snapshot() const;
  // A layer starts: what NVDLA does to its D_PERF registers (they count from zero again).
  void begin_layer() { layer_base_ = snapshot(); }
  // The counter's growth since the last begin_layer() (its value if there was none).
  [[nodiscard]] std::uint64_t since_layer(const Counter& c) const { return since_layer(c.index()); }
  [[nodiscard]] std::uint64_t since_layer(std::size_t i) const {
    return values_[i] - (i < layer_base_.size() ? layer_base_[i] : 0);
  }

 private:
  std::string path_;
  std::deque<CounterInfo> info_;
  std::deque<std::uint64_t> values_;  // a deque: handles keep pointing at their element
  std::vector<std::uint64_t> layer_base_;
};

// The growth of every counter of a group between two snapshots (`after` - `before`).
[[nodiscard]] std::vector<std::uint64_t> delta(const std::vector<std::uint64_t>& before,
                                               const std::vector<std::uint64_t>& after);

}  // namespace octasim::stats
