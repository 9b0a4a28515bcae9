#include "sim/core/stats.hpp"

#include <stdexcept>

namespace octasim::stats {

std::string_view unit_name(Unit unit) {
  switch (unit) {
    case Unit::kCycles:
      return "cycles";
    case Unit::kBytes:
      return "bytes";
    case Unit::kOps:
      return "ops";
    case Unit::kCount:
      break;
  }
  return "count";
}

Counter Group::add(std::string name, std::string description, Unit unit,
                   std::string register_name) {
  for (const auto& i : info_) {
    if (i.name == name) {
      throw std::logic_error("statistics counter " + path_ + "." + name + " registered twice");
    }
  }
  info_.push_back({std::move(name), std::move(description), unit, std::move(register_name)});
  values_.push_back(0);
  return Counter(&values_.back(), values_.size() - 1);
}

std::vector<std::uint64_t> Group::snapshot() const {
  return {values_.begin(), values_.end()};
}

std::vector<std::uint64_t> delta(const std::vector<std::uint64_t>& before,
                                 const std::vector<std::uint64_t>& after) {
  std::vector<std::uint64_t> d(after.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    d[i] = after[i] - (i < before.size() ? before[i] : 0);
  }
  return d;
}

std::uint32_t Timeline::track(std::string_view process, std::string_view thread) {
  for (std::size_t i = 0; i < tracks_.size(); ++i) {
    if (tracks_[i].process == process && tracks_[i].thread == thread) {
      return static_cast<std::uint32_t>(i);
    }
  }
  tracks_.push_back({std::string(process), std::string(thread)});
  last_dma_.push_back(0);
  return static_cast<std::uint32_t>(tracks_.size() - 1);
}

std::uint32_t Timeline::series(std::string_view process, std::string_view name) {
  for (std::size_t i = 0; i < series_.size(); ++i) {
    if (series_[i].process == process && series_[i].name == name) {
      return static_cast<std::uint32_t>(i);
    }
  }
  series_.push_back({std::string(process), std::string(name)});
  return static_cast<std::uint32_t>(series_.size() - 1);
}

void Timeline::slice(std::uint32_t track, Detail level, std::uint64_t start, std::uint64_t end,
                     std::string name, std::uint64_t bytes) {
  if (!wants(level) && !(level == Detail::kDma && detail_ == Detail::kTile)) return;
  if (end <= start) return;
  if (level == Detail::kDma && detail_ == Detail::kTile) {
    const std::size_t last = last_dma_[track];
    if (last != 0 && slices_[last - 1].end == start) {  // touches the previous burst: join
      Slice& s = slices_[last - 1];
      s.end = end;
      s.bytes += bytes;
      ++s.parts;
      return;
    }
  }
  slices_.push_back({track, start, end, std::move(name), bytes, 1, level});
  if (level == Detail::kDma) last_dma_[track] = slices_.size();
}

std::string_view detail_name(Detail detail) {
  switch (detail) {
    case Detail::kTile:
      return "tile";
    case Detail::kDma:
      return "dma";
    case Detail::kLayer:
      break;
  }
  return "layer";
}

}  // namespace octasim::stats
