// The PPU's CTA scheduling policy: which GPC's pending pool each CTA of a launched kernel joins.
// Each GPC's dispatcher then takes its pool in order (ascending CTA index within a kernel) and
// puts the CTA on the SM of its GPC with the fewest busy slots (sim/ppu/ppu.cpp). Policies are
// registered by name in cta_scheduler.cpp and chosen by the configuration key
// ppu_cta_scheduler.
//
//   round_robin  CTA i of every kernel goes to the next GPC in turn; the turn carries over from
//                one kernel to the next (the PPU's original deal).
//   locality     CTAs that share operand tiles go to the same GPC, in contiguous chunks, so the
//                SMs of a GPC reuse each other's lines in L2. The grid is rows x cols CTAs,
//                row-major (a GEMM's row r of output tiles shares A's row block r). With at
//                least as many rows as GPCs, whole rows are split into contiguous chunks: row r
//                goes to GPC floor(r x gpcs / rows). With fewer rows than GPCs, the CTAs in
//                row-major order are split instead: CTA i goes to GPC floor(i x gpcs / ctas).
//                Chunks differ in size by at most one row (one CTA); every kernel starts over.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace octasim::ppu {

// A kernel's CTAs as a row-major grid: CTA i is row i / cols, column i % cols. A GEMM's grid is
// its output tiles (rows: tiles along M, cols: tiles along N); a 1-D grid is ctas x 1.
struct CtaGrid {
  unsigned rows = 1;
  unsigned cols = 1;
  [[nodiscard]] unsigned ctas() const { return rows * cols; }
};

class CtaScheduler {
 public:
  virtual ~CtaScheduler() = default;
  // The GPC (0 .. gpcs - 1) of each CTA of a launched kernel's grid, indexed by CTA. Called once
  // per launch, in launch order.
  [[nodiscard]] virtual std::vector<unsigned> assign(const CtaGrid& grid, unsigned gpcs) = 0;
};

// The registered policy names, sorted.
[[nodiscard]] std::vector<std::string> cta_scheduler_names();
// A new scheduler of the policy `name`. An unknown name throws std::runtime_error naming the
// key (ppu_cta_scheduler), the value and the valid names.
[[nodiscard]] std::unique_ptr<CtaScheduler> make_cta_scheduler(const std::string& name);

}  // namespace octasim::ppu
