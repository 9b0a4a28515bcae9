// The DLA's post-processing engines as the device sequences them: which register units make up
// an engine (core + its RDMA), when a programmed group may start, which interrupt it raises,
// and the functional operation that computes its result. The functional device and the
// cycle-level device share this table.
#pragma once

#include <array>
#include <string_view>

#include "sim/core/register_file.hpp"
#include "sim/dla/functional.hpp"

namespace octasim::dla {

struct Engine {
  std::string_view name;       // SDP, PDP, CDP
  std::string_view core_unit;  // register unit whose D_OP_ENABLE starts the engine
  std::string_view rdma_unit;  // its read DMA, enabled as well when it reads memory
  unsigned done_status_bit0;   // GLB S_INTR_STATUS bit of group 0 (group 1 is the next bit)
  // Whether the engine reads its input through its RDMA (not flying from the previous unit).
  bool (*uses_rdma)(const RegisterFile& regs, unsigned group);
  OpResult (*run)(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
                  models::ops::Memory& mem);
};

// SDP, PDP and CDP (conv-core engines join them in a later issue).
[[nodiscard]] const std::array<Engine, 3>& engines();

// True when `engine` has group `group` enabled on every unit it needs.
[[nodiscard]] bool ready_to_start(const Engine& engine, const RegisterFile& regs, unsigned group);

// The hardware starts `group`: the core unit's group (and its RDMA's, when it reads memory)
// becomes running.
void start_group(const Engine& engine, RegisterFile& regs, unsigned group);

// `group` has finished with `result`: its status registers are set, its D_OP_ENABLEs cleared
// (core and, when used, RDMA), the consumer pointers move on and its interrupt is raised.
void complete_group(const Engine& engine, RegisterFile& regs, unsigned group,
                    const OpResult& result);

}  // namespace octasim::dla
