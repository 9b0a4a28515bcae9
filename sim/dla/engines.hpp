// The DLA's engines as the device sequences them: which register units make up an operation
// (the convolution pipeline CDMA..CACC with SDP in flying mode; SDP, PDP, CDP with their RDMAs;
// octasim's OCTAV unit, sim/octav),
// when a programmed operation may start, which interrupts it raises, and the functional
// operation that computes its result. The functional device and the cycle-level device share
// this table.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "sim/core/register_file.hpp"
#include "sim/dla/functional.hpp"

namespace octasim::dla {

// A short list of register unit names (at most the seven of a convolution).
struct UnitList {
  std::array<std::string_view, 7> names{};
  std::size_t size = 0;

  void add(std::string_view unit) { names[size++] = unit; }
  [[nodiscard]] const std::string_view* begin() const { return names.data(); }
  [[nodiscard]] const std::string_view* end() const { return names.data() + size; }
};

struct EngineInterrupt {
  std::string_view unit;  // whose register group (0/1) selects the bit
  unsigned status_bit0;   // GLB S_INTR_STATUS bit for group 0; group 1 is the next bit
};

struct Engine {
  std::string_view name;      // CONV, SDP, CDP, PDP, OCTAV
  std::string_view lut_unit;  // whose LUT the operation reads (SDP or CDP)
  // The units taking part in an operation programmed as `regs` reads (the core unit first).
  UnitList (*units)(const RegRead& regs);
  // Whether an operation so programmed is this engine's: an SDP group in flying mode runs as
  // part of the convolution, not on its own.
  bool (*owns)(const RegRead& regs);
  std::array<EngineInterrupt, 4> interrupts;
  std::size_t interrupt_count;
  OpResult (*run)(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
                  models::ops::Memory& mem);
};

inline constexpr std::size_t kEngineCount = 5;

// CONV, SDP, CDP, PDP, OCTAV.
[[nodiscard]] const std::array<Engine, kEngineCount>& engines();

// Reads registers as the hardware executing `groups` sees them.
[[nodiscard]] RegRead group_reader(const RegisterFile& regs, const RegisterFile::Groups& groups);

// True when `engine` owns the operation the units' next groups hold and every unit it needs has
// that group enabled.
[[nodiscard]] bool ready_to_start(const Engine& engine, const RegisterFile& regs,
                                  const RegisterFile::Groups& groups);

// The hardware starts the operation: each unit's group becomes running.
void start_group(const Engine& engine, RegisterFile& regs, const RegisterFile::Groups& groups);

// The operation has finished with `result`: its status registers are set, the units'
// D_OP_ENABLEs cleared, their consumer pointers move on and the interrupts are raised.
void complete_group(const Engine& engine, RegisterFile& regs, const RegisterFile::Groups& groups,
                    const OpResult& result);

}  // namespace octasim::dla
