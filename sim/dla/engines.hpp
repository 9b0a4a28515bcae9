// The DLA's engines as the device sequences them: which register units make up an operation
// (the convolution pipeline CDMA..CACC with SDP in flying mode; SDP, PDP, CDP with their RDMAs;
// octasim's OCTAV unit, sim/octav; the BDMA, whose operations come from its command queue),
// when a programmed operation may start, which interrupts it raises, the functional operation
// that computes its result, the cycle-level model that times it and its roofline peak. The
// functional device, the SoC (sim/soc) and the report share this table; a new engine is one
// entry here.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string_view>

#include "sim/core/register_file.hpp"
#include "sim/dla/bdma_functional.hpp"
#include "sim/dla/functional.hpp"
#include "sim/dla/rubik_functional.hpp"
#include "sim/octav/octav_functional.hpp"

namespace sc_core {
class sc_time;
}

namespace octasim {
class MemorySystem;
}

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

class EngineModel;

// Where an engine's timing model is built: its module name, the configuration, the clock and
// the memory system its DMA sockets bind to.
struct ModelSite {
  const char* name;
  const HwConfig& hw;
  const sc_core::sc_time& clock_period;
  MemorySystem& memory;
};

struct Engine {
  std::string_view name;      // CONV, SDP, CDP, PDP, OCTAV, BDMA
  std::string_view lut_unit;  // whose LUT the operation reads (SDP or CDP; empty: none)
  // The units taking part in an operation programmed as `regs` reads (the core unit first).
  UnitList (*units)(const RegRead& regs);
  // Whether an operation so programmed is this engine's: an SDP group in flying mode runs as
  // part of the convolution, not on its own.
  bool (*owns)(const RegRead& regs);
  std::array<EngineInterrupt, 4> interrupts;
  std::size_t interrupt_count;
  OpResult (*run)(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
                  models::ops::Memory& mem);
  // Builds the engine's cycle-level model (ConvCore, StreamEngine, OctavCore) with its DMA
  // sockets bound to the memory system.
  std::unique_ptr<EngineModel> (*make_model)(const ModelSite& site);
  // The roofline's compute peak of operation `op` (ops per cycle): a MAC is two ops; SDP, PDP,
  // CDP count one op per element processed (OCTAV: per pass), at the configured throughput.
  double (*peak_ops_per_cycle)(const HwConfig& hw, const OpResult& op);
};

// The parts of the table below (engines.cpp).
namespace engine_parts {
UnitList conv_units(const RegRead& regs);
UnitList sdp_units(const RegRead& regs);
UnitList cdp_units(const RegRead& regs);
UnitList pdp_units(const RegRead& regs);
UnitList octav_units(const RegRead& regs);
UnitList bdma_units(const RegRead& regs);
UnitList rubik_units(const RegRead& regs);
bool sdp_flying(const RegRead& regs);
bool sdp_alone(const RegRead& regs);
bool pdp_from_memory(const RegRead& regs);
bool always(const RegRead& regs);
OpResult pdp(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
             models::ops::Memory& mem);
std::unique_ptr<EngineModel> conv_model(const ModelSite& site);
std::unique_ptr<EngineModel> sdp_model(const ModelSite& site);
std::unique_ptr<EngineModel> pdp_model(const ModelSite& site);
std::unique_ptr<EngineModel> cdp_model(const ModelSite& site);
std::unique_ptr<EngineModel> octav_model(const ModelSite& site);
std::unique_ptr<EngineModel> bdma_model(const ModelSite& site);
std::unique_ptr<EngineModel> rubik_model(const ModelSite& site);
double mac_peak(const HwConfig& hw, const OpResult& op);
double sdp_peak(const HwConfig& hw, const OpResult& op);
double cdp_peak(const HwConfig& hw, const OpResult& op);
double pdp_peak(const HwConfig& hw, const OpResult& op);
double octav_peak(const HwConfig& hw, const OpResult& op);
double bdma_peak(const HwConfig& hw, const OpResult& op);
double rubik_peak(const HwConfig& hw, const OpResult& op);
}  // namespace engine_parts

// The engine registry: one entry per engine, everything the devices, the SoC and the report
// know of it. GLB S_INTR_STATUS: SDP 0/1, CDP 2/3, PDP 4/5, CDMA_DAT 16/17, CDMA_WT 18/19,
// BDMA 6/7, RUBIK 8/9, CACC 20/21; octasim's OCTAV 22/23.
inline constexpr std::array kEngines{
    Engine{"CONV",
           "SDP",
           engine_parts::conv_units,
           engine_parts::sdp_flying,
           {{{"CDMA", 16}, {"CDMA", 18}, {"CACC", 20}, {"SDP", 0}}},
           4,
           run_conv,
           engine_parts::conv_model,
           engine_parts::mac_peak},
    Engine{"SDP",
           "SDP",
           engine_parts::sdp_units,
           engine_parts::sdp_alone,
           {{{"SDP", 0}}},
           1,
           run_sdp,
           engine_parts::sdp_model,
           engine_parts::sdp_peak},
    Engine{"CDP",
           "CDP",
           engine_parts::cdp_units,
           engine_parts::always,
           {{{"CDP", 2}}},
           1,
           run_cdp,
           engine_parts::cdp_model,
           engine_parts::cdp_peak},
    Engine{"PDP",
           "",
           engine_parts::pdp_units,
           engine_parts::pdp_from_memory,
           {{{"PDP", 4}}},
           1,
           engine_parts::pdp,
           engine_parts::pdp_model,
           engine_parts::pdp_peak},
    Engine{"OCTAV",
           "SDP",
           engine_parts::octav_units,
           engine_parts::always,
           {{{"OCTAV", 22}}},
           1,
           octav::run_octav,
           engine_parts::octav_model,
           engine_parts::octav_peak},
    Engine{"BDMA",
           "",
           engine_parts::bdma_units,
           engine_parts::always,
           {{{"BDMA", 6}}},
           1,
           run_bdma,
           engine_parts::bdma_model,
           engine_parts::bdma_peak},
    Engine{"RUBIK",
           "",
           engine_parts::rubik_units,
           engine_parts::always,
           {{{"RBK", 8}}},
           1,
           run_rubik,
           engine_parts::rubik_model,
           engine_parts::rubik_peak},
};

inline constexpr std::size_t kEngineCount = kEngines.size();

// CONV, SDP, CDP, PDP, OCTAV, BDMA, RUBIK.
[[nodiscard]] inline const std::array<Engine, kEngineCount>& engines() {
  return kEngines;
}

// The index of the engine named `name` in engines(); std::runtime_error naming it for a name
// octasim has no engine of (a report written by another octasim, a corrupted file).
[[nodiscard]] std::size_t engine_index(std::string_view name);

// The LUT `engine`'s operation reads (an empty one when it reads none).
[[nodiscard]] const LutTables& lut_of(const Engine& engine, const RegisterFile& regs);

// Reads registers as the hardware executing `groups` sees them.
[[nodiscard]] RegRead group_reader(const RegisterFile& regs, const RegisterFile::Groups& groups);

// SDP -> PDP on the fly (NVDLA's flying mode). An operation whose SDP sends its output to PDP
// (SDP D_FEATURE_MODE_CFG.OUTPUT_DST=PDP: the SDP engine, or the convolution with SDP) and a PDP
// group programmed FLYING_MODE=ON_FLYING pair up: the producer starts only once PDP's next group
// is enabled and in flying mode (whichever of the two is enabled first waits for the other),
// and that PDP starts with it (a flying PDP never starts on its own). Each raises its own
// interrupt: SDP's (and CACC's, CDMA's) when SDP has handed over its output, PDP's when the
// pooled output is written.
[[nodiscard]] bool feeds_pdp(const Engine& engine, const RegRead& regs);
// The PDP engine in engines().
[[nodiscard]] const Engine& pdp_engine();
// Whether PDP's next group (in `groups`) is enabled and programmed ON_FLYING.
[[nodiscard]] bool flying_pdp_ready(const RegisterFile& regs, const RegisterFile::Groups& groups);

// True when `engine` owns the operation the units' next groups hold, every unit it needs has
// that group enabled and, when its SDP output goes to PDP, a flying PDP is ready.
[[nodiscard]] bool ready_to_start(const Engine& engine, const RegisterFile& regs,
                                  const RegisterFile::Groups& groups);

// The hardware starts the operation: each unit's group becomes running.
void start_group(const Engine& engine, RegisterFile& regs, const RegisterFile::Groups& groups);

// The operation has finished with `result`: its status registers are set, the units'
// D_OP_ENABLEs cleared, their consumer pointers move on and the interrupts are raised — except
// those whose bit in `raised_early` (by index into Engine::interrupts) says a stage already
// raised it (EngineModel::on_stage_done).
void complete_group(const Engine& engine, RegisterFile& regs, const RegisterFile::Groups& groups,
                    const OpResult& result, std::uint32_t raised_early = 0);

// GLB S_INTR_STATUS bit of the engine's interrupt `index` for the running groups.
[[nodiscard]] unsigned interrupt_bit(const Engine& engine, const RegisterFile& regs,
                                     const RegisterFile::Groups& groups, std::size_t index);

}  // namespace octasim::dla
