// Statistics: counters a module registers once, with a name, a description and a unit, in a group
// named after the module's path (`dla.CONV`, `mem.dram.ch0`), so that one counter is the single
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

// What each unit did when, for a timeline viewer (Perfetto, chrome://tracing): slices of time on
// one track per unit and sampled counters. Recorded only when a timeline was asked for (modules
// hold a null pointer otherwise), into plain vectors; times are cycles.
enum class Detail : std::uint8_t {
  kLayer = 0,  // one slice per layer on each engine's layer track
  kTile = 1,   // plus one per stripe (CSC, CACC) or line step (RDMA, core, WDMA)
  kDma = 2,    // plus one per DMA burst (CDMA requests, DRAM transfers)
};

class Timeline {
 public:
  struct Track {
    std::string process;  // CONV, SDP, PDP, CDP, DRAM
    std::string thread;   // CSC, RDMA, ... (the track)
  };
  struct Slice {
    std::uint32_t track;
    std::uint64_t start, end;  // cycles, end exclusive
    std::string name;
    std::uint64_t bytes = 0;
    std::uint32_t parts = 1;  // DMA bursts joined into this slice (tile detail)
    Detail level = Detail::kLayer;
  };
  struct Series {
    std::string process;
    std::string name;
  };
  struct Sample {
    std::uint32_t series;
    std::uint64_t cycle;
    double value;
  };
  struct Transfer {  // one DRAM data-bus transfer (for the bandwidth counter)
    std::uint64_t start, end, bytes;
  };

  explicit Timeline(Detail detail) : detail_(detail) {}
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  [[nodiscard]] Detail detail() const { return detail_; }
  [[nodiscard]] bool wants(Detail level) const { return level <= detail_; }
  // The track (or counter series) of that name, created on first use; order of creation is the
  // order shown.
  std::uint32_t track(std::string_view process, std::string_view thread);
  std::uint32_t series(std::string_view process, std::string_view name);
  // Records [start, end) on `track` when `level` is wanted. At tile detail a DMA-level slice
  // that starts where the track's previous DMA-level slice ended joins it (same busy total).
  void slice(std::uint32_t track, Detail level, std::uint64_t start, std::uint64_t end,
             std::string name, std::uint64_t bytes = 0);
  void sample(std::uint32_t series, std::uint64_t cycle, double value) {
    samples_.push_back({series, cycle, value});
  }
  void transfer(std::uint64_t start, std::uint64_t end, std::uint64_t bytes) {
    transfers_.push_back({start, end, bytes});
  }

  [[nodiscard]] const std::vector<Track>& tracks() const { return tracks_; }
  [[nodiscard]] const std::vector<Series>& series() const { return series_; }
  [[nodiscard]] const std::vector<Slice>& slices() const { return slices_; }
  [[nodiscard]] const std::vector<Sample>& samples() const { return samples_; }
  [[nodiscard]] const std::vector<Transfer>& transfers() const { return transfers_; }

 private:
  Detail detail_;
  std::vector<Track> tracks_;
  std::vector<std::size_t> last_dma_;  // per track: index of its last DMA-level slice + 1, or 0
  std::vector<Series> series_;
  std::vector<Slice> slices_;
  std::vector<Sample> samples_;
  std::vector<Transfer> transfers_;
};

[[nodiscard]] std::string_view detail_name(Detail detail);

}  // namespace octasim::stats
