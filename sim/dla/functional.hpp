// Zero-time functional execution of one DLA operation: decode the unit's registers (the
// register group being executed) and run the models/ reference op over memory. The trace
// player's functional path and the cycle-level units both go through these, so the arithmetic
// of a layer is defined in exactly one place.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/ops/memory.hpp"
#include "sim/core/address_generator.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/lut_tables.hpp"

namespace octasim::dla {

// Reads the current value of a register by CSB byte address (the executing group's copy for
// D_ registers).
using RegRead = std::function<std::uint32_t(std::uint32_t addr)>;

using LutTables = octasim::LutTables;

// The surfaces an operation's DMAs move, on real addresses, in the order each DMA walks them
// (the timing models request these lines; see sim/core/address_generator.hpp).
struct DmaSurfaces {
  std::vector<SurfaceRegion> input;     // the main input: RDMA / CDMA data
  std::vector<SurfaceRegion> operands;  // SDP's BS/BN/EW operand streams (read after the input)
  std::vector<SurfaceRegion> weights;   // CDMA weights
  std::vector<SurfaceRegion> output;    // WDMA
};

// A feature cube of `width` atoms per line (NVDLA feature format, format.rst).
[[nodiscard]] inline SurfaceRegion feature_region(std::uint64_t base, std::uint64_t line_bytes,
                                                  std::uint32_t lines, std::uint32_t surfaces,
                                                  std::uint64_t line_stride,
                                                  std::uint64_t surface_stride) {
  return SurfaceRegion{base, line_bytes, lines, surfaces, line_stride, surface_stride};
}

// The registers of an operation decoded once: the functional op computed with it and the timing
// model reads it instead of the registers. One per unit: ConvDescriptor (conv_functional.hpp),
// SdpDescriptor (sdp_functional.hpp), PdpDescriptor (pdp_functional.hpp), CdpDescriptor
// (cdp_functional.hpp), BdmaDescriptor (bdma_functional.hpp), RubikDescriptor
// (rubik_functional.hpp) and the OCTAV unit's OctavDescriptor.
struct OperationDescriptor {
  OperationDescriptor() = default;
  OperationDescriptor(const OperationDescriptor&) = default;
  OperationDescriptor& operator=(const OperationDescriptor&) = default;
  virtual ~OperationDescriptor() = default;
};

// SDP's output cube on its way to PDP on the fly (SDP D_FEATURE_MODE_CFG.OUTPUT_DST=PDP): SDP's
// WDMA writes nothing, the cube streams into PDP. Held as PDP reads a surface: atoms of
// `atom_bytes`, a line's atoms packed, lines and then surfaces one after the other.
struct FlyingCube {
  std::uint32_t width = 0, height = 0, channels = 0;
  unsigned element_bytes = 1;  // SDP OUT_PRECISION: 1 (INT8) or 2 (INT16, FP16)
  unsigned atom_bytes = 8;     // memory_atomic_size
  std::vector<std::uint8_t> data;
};

struct OpResult {
  // Status/statistics registers the operation sets when it completes (CSB address, value),
  // e.g. SDP D_PERF_OUT_SATURATION, D_PERF_LUT_*_HIT, D_STATUS_NAN_INPUT_NUM.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> status;
  // What the operation did, for the timing model and reports.
  struct Cube {
    std::uint32_t width = 0, height = 0, channels = 0;
  };
  Cube in;   // main input cube (SDP: the MRDMA/flying input)
  Cube out;  // output cube
  std::uint32_t kernel_width = 1, kernel_height = 1;  // PDP pooling window
  std::uint32_t stride_width = 1, stride_height = 1;  // PDP strides
  std::uint32_t lrn_size = 1;                         // CDP local size (3, 5, 7 or 9)
  std::uint64_t bytes_read = 0;     // every DMA read (feature, operands, LUT excluded)
  std::uint64_t bytes_written = 0;  // output surface bytes
  // Bytes passed on the fly from SDP to PDP (OUTPUT_DST=PDP): what SDP handed over (SDP,
  // convolution) or what a flying PDP took (PDP); neither is in bytes_read or bytes_written.
  std::uint64_t bytes_on_the_fly = 0;
  std::uint64_t weight_bytes = 0;    // convolution: weight bytes CDMA fetched (in bytes_read)
  std::uint64_t macs = 0;            // convolution: multiply-accumulates of the layer
  std::uint32_t macs_per_cycle = 0;  // convolution: the MAC array's peak at the layer's precision
  DmaSurfaces dma;                   // where its DMAs read and write
  // The operation's decoded registers (OperationDescriptor): set by every DLA engine's run_*
  // (a convolution with SDP on the fly: its ConvDescriptor) and by the OCTAV unit's.
  std::shared_ptr<const OperationDescriptor> descriptor;
  // SDP's output when it goes to PDP on the fly (null: to memory); the device hands it to the
  // flying PDP it starts with this operation (run_pdp_on_the_fly).
  std::shared_ptr<const FlyingCube> to_pdp;
};

// Each throws std::runtime_error with one clear line for programming octasim cannot execute:
// a feature absent from the configuration ("SDP EW is not present in this configuration
// (nv_small)"), an unsupported mode, a surface outside memory. Never a crash.
// `regs` reads the unit's registers; for units with their own RDMA (SDP_RDMA, PDP_RDMA,
// CDP_RDMA) it reads those too — one function sees the whole CSB address space of the group.
// Shared decode helpers for the units' functional paths.
// A 64-bit DMA address from NVDLA's *_ADDR_HIGH / *_ADDR_LOW register pair.
[[nodiscard]] std::uint64_t read_address(const RegRead& regs, std::uint32_t high_addr,
                                         std::uint32_t low_addr);
// A surface's DMA address (sim/core/device_memory.hpp): the *_ADDR_HIGH/_LOW pair in the memory
// its *_RAM_TYPE field value `ram_type` selects (0 = CV: the CV-SRAM, 1 = MC: DRAM). A
// configuration without a secondary memory interface has no CVIF: every surface is in DRAM
// whatever its RAM_TYPE (NVDLA resets the fields to CV), as before the CV-SRAM was modelled.
[[nodiscard]] std::uint64_t read_address(const HwConfig& hw, const RegRead& regs,
                                         std::uint32_t high_addr, std::uint32_t low_addr,
                                         std::uint32_t ram_type);
// Throws the one-line error for programming that needs a feature `hw` leaves out.
[[noreturn]] void throw_not_present(const HwConfig& hw, const std::string& feature);

// The convolution pipeline: CDMA/CSC/CMAC/CACC decode, the models/ direct convolution, and the
// SDP (in flying mode) on its output; status registers of CACC, CDMA and SDP.
OpResult run_conv(const HwConfig& hw, const RegRead& regs, const LutTables& sdp_lut,
                  models::ops::Memory& mem);
OpResult run_sdp(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
                 models::ops::Memory& mem);
OpResult run_pdp(const HwConfig& hw, const RegRead& regs, models::ops::Memory& mem);
// A PDP in flying mode (D_OPERATION_MODE_CFG.FLYING_MODE=ON_FLYING) pooling SDP's output `in`
// (PDP_RDMA takes no part and is not read); writes the pooled surface to `mem`. Throws for a
// PDP input cube or precision that differs from SDP's output, or SPLIT_NUM != 0 (NVDLA splits
// the width only when PDP reads from memory).
OpResult run_pdp_on_the_fly(const HwConfig& hw, const RegRead& regs, const FlyingCube& in,
                            models::ops::Memory& mem);
OpResult run_cdp(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
                 models::ops::Memory& mem);

}  // namespace octasim::dla
