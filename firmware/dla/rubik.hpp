// Rubik (RBK) programming: NVDLA's reshape engine (v1_ias_programming_guide.rst "Rubik
// programming") described in user terms, programmed through Mmio, DRAM (MCIF) surfaces only.
//
// - Contract (the second phase of a deconvolution): a feature cube W x H x (sx * sy * C') whose
//   channel groups (x fastest) are the phase-I convolution outputs -> (W * sx) x (H * sy) x C'.
//   C' * element bytes must fill whole atoms; W * sx and H * sy at most 8192.
// - Split: a feature cube -> `planes` pitch-linear planes (the first `planes` channels).
// - Merge: planes -> a feature cube of as many channels.
// Planar surfaces: address, line stride and planar stride multiples of 64 bytes.
#pragma once

#include <cstdint>

#include "firmware/dla/surface.hpp"
#include "firmware/driver/mmio.hpp"
#include "models/ops/rubik.hpp"

namespace octasim::firmware {

// NVDLA's M-planar format (format.rst): plane p, line h, element w at
// address + p * planar_stride + h * line_stride + w * element bytes.
struct PlanarSurface {
  std::uint64_t address = 0;
  std::uint32_t width = 1, height = 1, planes = 1;
  std::uint32_t line_stride = 0;    // bytes, a multiple of 64
  std::uint32_t planar_stride = 0;  // bytes, a multiple of 64
};

// Planes packed as tightly as the 64-byte rule allows.
[[nodiscard]] PlanarSurface packed_planar(std::uint64_t address, std::uint32_t width,
                                          std::uint32_t height, std::uint32_t planes, Precision p);
// Bytes from the surface's address to the end of its last plane's last line.
[[nodiscard]] std::uint64_t planar_bytes(const PlanarSurface& s, Precision p);

struct RubikContract {
  Precision precision = Precision::kInt8;
  FeatureSurface src;                   // W x H x (x_stride * y_stride * C')
  FeatureSurface dst;                   // (W * x_stride) x (H * y_stride) x C'
  unsigned x_stride = 2, y_stride = 2;  // 1..32
};

struct RubikSplit {
  Precision precision = Precision::kInt8;
  FeatureSurface src;
  PlanarSurface dst;  // same width and height, planes <= src.channels
};

struct RubikMerge {
  Precision precision = Precision::kInt8;
  PlanarSurface src;
  FeatureSurface dst;  // same width and height, channels == src.planes
};

// Each programs register group `group` of RBK: S_POINTER, the D_ registers, D_OP_ENABLE. Returns
// the GLB S_INTR_STATUS bit of its completion (RUBIK_DONE_STATUS<group>). Throws FirmwareError,
// before any register is written, for an operation it cannot program.
[[nodiscard]] unsigned program_rubik(Mmio& mmio, const RubikContract& op, unsigned group,
                                     unsigned atom_bytes);
[[nodiscard]] unsigned program_rubik(Mmio& mmio, const RubikSplit& op, unsigned group,
                                     unsigned atom_bytes);
[[nodiscard]] unsigned program_rubik(Mmio& mmio, const RubikMerge& op, unsigned group,
                                     unsigned atom_bytes);

// The same operations as models/ describes them (models::ops::run_rubik).
[[nodiscard]] models::ops::RubikParams rubik_model_params(const RubikContract& op,
                                                          unsigned atom_bytes);
[[nodiscard]] models::ops::RubikParams rubik_model_params(const RubikSplit& op,
                                                          unsigned atom_bytes);
[[nodiscard]] models::ops::RubikParams rubik_model_params(const RubikMerge& op,
                                                          unsigned atom_bytes);

}  // namespace octasim::firmware
