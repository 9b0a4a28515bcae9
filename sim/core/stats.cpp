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

}  // namespace octasim::stats
