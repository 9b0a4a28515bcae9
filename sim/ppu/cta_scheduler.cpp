#include "sim/ppu/cta_scheduler.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

namespace octasim::ppu {
namespace {

class RoundRobinScheduler final : public CtaScheduler {
 public:
  std::vector<unsigned> assign(const CtaGrid& grid, unsigned gpcs) override {
    std::vector<unsigned> gpc(grid.ctas());
    for (unsigned& g : gpc) {
      g = next_ % gpcs;
      next_ = (g + 1) % gpcs;
    }
    return gpc;
  }

 private:
  unsigned next_ = 0;  // carries over between kernels
};

class LocalityScheduler final : public CtaScheduler {
 public:
  std::vector<unsigned> assign(const CtaGrid& grid, unsigned gpcs) override {
    const unsigned ctas = grid.ctas();
    std::vector<unsigned> gpc(ctas);
    for (unsigned i = 0; i < ctas; ++i) {
      gpc[i] = grid.rows >= gpcs ? chunk(i / grid.cols, grid.rows, gpcs) : chunk(i, ctas, gpcs);
    }
    return gpc;
  }

 private:
  // Item `i` of `n` split into `parts` contiguous chunks.
  static unsigned chunk(unsigned i, unsigned n, unsigned parts) {
    return static_cast<unsigned>(std::uint64_t{i} * parts / n);
  }
};

struct Policy {
  const char* name;
  std::unique_ptr<CtaScheduler> (*make)();
};

// Every policy, by name (sorted).
const Policy kPolicies[] = {
    {"locality", [] { return std::unique_ptr<CtaScheduler>(new LocalityScheduler); }},
    {"round_robin", [] { return std::unique_ptr<CtaScheduler>(new RoundRobinScheduler); }},
};

}  // namespace

std::vector<std::string> cta_scheduler_names() {
  std::vector<std::string> names;
  for (const Policy& p : kPolicies) names.emplace_back(p.name);
  return names;
}

std::unique_ptr<CtaScheduler> make_cta_scheduler(const std::string& name) {
  for (const Policy& p : kPolicies) {
    if (name == p.name) return p.make();
  }
  std::string valid;
  for (const Policy& p : kPolicies)
    valid += fmt::format("{}\"{}\"", valid.empty() ? "" : ", ", p.name);
  throw std::runtime_error(fmt::format(
      "\"ppu_cta_scheduler\" is \"{}\", not a CTA scheduling policy (valid: {})", name, valid));
}

}  // namespace octasim::ppu
