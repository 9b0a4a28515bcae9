// The PPU's built-in kernels (GEMM, implicit-GEMM convolution, element-wise, row reduction,
// softmax over an axis of a feature surface) as grids of CTAs: what a CTA loads per k-step, how
// many cycles its math takes on one SM, and the values it computes (models/ops arithmetic, tile by
// tile). No SystemC here: sim/ppu/sm.cpp turns these plans into TLM requests and wait()s.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "firmware/ppu/commands.hpp"
#include "models/ops/gemm.hpp"
#include "models/ops/split_gemm.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/ppu/cta_scheduler.hpp"

namespace octasim::ppu {

// What one launched kernel did (Ppu::kernels()).
struct KernelRecord {
  unsigned channel = 0;
  std::string kind;  // "gemm", "conv", "elementwise", "reduce", "softmax", "node"
  std::string
      type;  // models' GemmType name ("fp16_fp32", ...); "fp32" for elementwise/reduce,
             // "fp16" for softmax; node: "int8" when a place is an INT8 surface, else "fp16"
  // GEMM shape (conv: the implicit GEMM's M = N*OH*OW, N = K_out, K = R*S*C; elementwise:
  // count x 1 x 1; reduce: rows x 1 x cols; softmax: lines x 1 x line length, tiles: columns
  // per CTA x 1 x atoms per step; node: output elements x 1 x ops per element, tiles: output
  // elements per CTA x 1 x input bytes per step).
  unsigned m = 0, n = 0, k = 0;
  unsigned tile_m = 0, tile_n = 0, tile_k = 0;
  unsigned ctas = 0;
  unsigned occupancy = 0;  // CTAs of this kernel one SM holds at once
  // "tensor", "tensor (padded M 13->16, K 29->32: not multiples of 8)",
  // "fma (policy fallback: ...)", "tensor (split fp32: 3 bf16 products)", "fma (streaming)",
  // "fma (node Erf 'name')" / "tensor (node MatMul)" (the node's operator and name).
  std::string path;
  std::uint64_t start_cycle = 0, end_cycle = 0;     // LAUNCH decoded .. last CTA's stores acked
  std::uint64_t macs = 0;                           // real MACs (split: every partial product's)
  std::uint64_t bytes_read = 0, bytes_written = 0;  // by the SMs (line requests)
  double tensor_utilization = 0.0;    // macs / (cycles x peak MACs/cycle of the whole PPU)
  double arithmetic_intensity = 0.0;  // macs / compulsory bytes (operands once, D once)
  std::string bound;                  // "compute" or "memory" (roofline)
  std::uint64_t saturations = 0;      // INT32 accumulator saturations
  [[nodiscard]] std::uint64_t cycles() const { return end_cycle - start_cycle; }
};

struct Range {
  std::uint64_t addr = 0;
  std::uint64_t bytes = 0;
};

// The accumulators of one resident CTA (owned by its SM slot; reused).
struct CtaState {
  std::vector<std::vector<double>> acc;  // one tile per partial product (split: several)
  std::vector<double> row;               // conv: one row's accumulators
  std::vector<float> vals;               // elementwise / reduce
  std::uint64_t saturations = 0;
};

// A decoded, validated kernel with its operands read from the image at launch (stream order:
// everything before the LAUNCH has finished). Its D reaches the image in finish().
class Kernel {
 public:
  virtual ~Kernel() = default;
  [[nodiscard]] virtual unsigned ctas() const = 0;
  // The CTAs as a row-major grid (the CTA scheduler's view; default: ctas x 1).
  [[nodiscard]] virtual CtaGrid grid() const { return {ctas(), 1}; }
  [[nodiscard]] virtual unsigned steps(unsigned cta) const = 0;
  // Byte ranges CTA `cta` loads before its step `step` (appended to `out`).
  virtual void loads(unsigned cta, unsigned step, std::vector<Range>& out) const = 0;
  // Cycles the step's math occupies the SM's math pipe; `tensor` says which pipe it is.
  [[nodiscard]] virtual std::uint64_t math_cycles(unsigned cta, unsigned step) const = 0;
  [[nodiscard]] virtual bool tensor() const = 0;
  // MACs the step performs (GEMM/conv; 0 for the streaming kernels).
  [[nodiscard]] virtual std::uint64_t macs(unsigned /*cta*/, unsigned /*step*/) const { return 0; }
  virtual void begin(unsigned cta, CtaState& s) = 0;
  virtual void step(unsigned cta, unsigned step, CtaState& s) = 0;
  // Writes the CTA's results into the kernel's D buffer; the ranges it stores go to `stores`.
  virtual void end(unsigned cta, CtaState& s, std::vector<Range>& stores) = 0;
  // Writes D to the image.
  virtual void finish(MemoryImage& image) = 0;
  // K-steps whose loads are in flight ahead of the one computing (1: double buffering).
  [[nodiscard]] virtual unsigned prefetch_depth() const { return 1; }
  // Shared memory one CTA needs (double-buffered operand tiles).
  [[nodiscard]] std::uint64_t smem_bytes() const { return smem_bytes_; }
  // Peak MACs per cycle of the whole PPU's tensor cores in this kernel's format (FP32 and the
  // streaming kernels: the FMA lanes), the utilization's reference.
  [[nodiscard]] double peak_macs_per_cycle() const { return peak_macs_; }
  // Peak of the path the kernel runs on (tensor cores, or FMA lanes for a fallback): the
  // roofline's compute roof.
  [[nodiscard]] double path_peak_macs_per_cycle() const { return path_peak_macs_; }
  [[nodiscard]] std::uint64_t compulsory_bytes() const { return compulsory_bytes_; }

  KernelRecord record;  // filled at decode, completed by the Ppu

 protected:
  std::uint64_t smem_bytes_ = 0;
  double peak_macs_ = 0.0;
  double path_peak_macs_ = 0.0;
  std::uint64_t compulsory_bytes_ = 0;
};

struct DecodeResult {
  std::unique_ptr<Kernel> kernel;
  ppu_format::ErrorCode error = ppu_format::ErrorCode::kNone;
  std::string why;  // for an error
};

// Decodes the 32 descriptor words. Never throws: a descriptor the PPU cannot run gives
// kBadKernel, operands outside the image kBadAddress.
[[nodiscard]] DecodeResult decode_kernel(const std::uint32_t* words, const HwConfig& hw,
                                         const MemoryImage& image);

// Peak tensor-core MACs per cycle of the whole PPU for a GEMM type (FP32: the FMA lanes).
[[nodiscard]] double tensor_peak_macs_per_cycle(const HwConfig& hw, models::ops::GemmType type);

}  // namespace octasim::ppu
