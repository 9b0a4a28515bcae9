// Input channel folding: the first convolution of a network, which reads the graph input's few
// channels (an RGB image: 3 of atomic-C's 64 lanes on nv_full), made efficient by the host, which
// writes that input anyway and can lay it out as another convolution's input computing exactly
// the same sums. This is NVDLA's "channel post-extension" of image input done in software.
//
//   columns  the kernel's columns become channels. Folded pixel (j, y) holds the original pixels
//            (sx j + dx - pad_left, y) for dx = 0..kw-1, channel dx C + c; positions in the
//            horizontal padding hold zero. The folded input is out_w x H x (kw C); the folded
//            convolution has a 1 x kh kernel, stride (1, sy), no horizontal padding, the
//            vertical padding of the original.
//   full     rows too (im2col): folded pixel (j, i) holds the original pixels (sx j + dx - pl,
//            sy i + dy - pt), channel (dy kw + dx) C + c, zero in the padding: out_w x out_h x
//            (kh kw C), a 1 x 1 kernel, stride 1, no padding.
// In both, weight (k, r, s, c) of the K x R x S x C layout (models/ops/conv.hpp) keeps its index:
// the folded K x R x 1 x (S C) and K x 1 x 1 x (R S C) layouts flatten in the same order. The
// zero the host writes is the code of 0 (INT8 codes are symmetric) or FP16 +0, the value the
// unfolded convolution pads with; integer networks (whose padding is the input's zero point) are
// not folded. Every product of the unfolded convolution appears once in the folded one and no
// other (a zero in the padding times a weight), so INT8 sums are equal and FP16 sums, exact
// until one FP32 rounding (run_conv_fp16), round to the same value: the outputs are bit-exact.
//
// Which layout (FoldMode::kAuto): the one of {unfolded, columns, full} with the least modelled
// cycles, where a candidate that issues no fewer CSC packages than the unfolded layer is not
// taken (folding pays only where lanes are wasted; deep inputs are left alone):
//   CSC      kernel groups x output pixels x packages per output pixel, a package being one
//            kernel position x one block of atomic-C channels (sim/dla/conv_core.cpp issues one
//            per cycle per output atom of a stripe)
//   input    the bytes CDMA reads — every band's input lines when the layer is split in height
//            (split.hpp), overlap included, and the weight fetches — divided by what CDMA's data
//            client sustains: min(DRAM bandwidth, one request per cycle, its latency buffer over
//            the memory latency) — DRAM's, even where placement (placement.hpp) later moves the
//            input to the CV-SRAM. The host writes the same surface once: more bytes to write
//            too. The CSC starts once a band's input is in CBUF, so the two add.
// Ties go to the fewer bytes, then to the unfolded, then columns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "firmware/dla/conv.hpp"
#include "firmware/net/plan.hpp"
#include "firmware/net/quant.hpp"
#include "models/ops/conv.hpp"

namespace octasim {
struct HwConfig;
}

namespace octasim::firmware::net {

enum class FoldKind : std::uint8_t { kNone, kColumns, kFull };
[[nodiscard]] const char* fold_kind_name(FoldKind k);  // "none", "columns", "full"

// How the graph input of a folded first convolution is laid out.
struct InputFold {
  FoldKind kind = FoldKind::kColumns;
  Cube original;  // the graph input as ONNX holds it (W x H x C)
  // The original convolution's geometry (dilation 1).
  std::uint32_t kernel_w = 1, kernel_h = 1, stride_x = 1, stride_y = 1;
  std::uint32_t pad_left = 0, pad_top = 0;
  Cube folded;  // the cube the host writes

  [[nodiscard]] std::string describe() const;  // "columns: 227x227x3 -> 55x227x33"
};

// The fold of kind `kind` of an input `in` read by a convolution of these attributes (whose
// output is `out`).
[[nodiscard]] InputFold make_input_fold(FoldKind kind, const Cube& in, const ConvAttrs& a,
                                        const Cube& out);

// The folded cube from the original one (models::ops::ConvCube, W x H x C); padding positions
// hold `zero`.
[[nodiscard]] models::ops::ConvCube fold_input_cube(const InputFold& f,
                                                    const models::ops::ConvCube& original,
                                                    std::int32_t zero = 0);

// Turns `conv` (the original convolution, reading the folded surface as its src) into the
// folded one, and `w` (K x R x S x C) into its weights. Throws FirmwareError when `conv` is not
// the convolution `f` was made for.
void fold_conv_layer(const InputFold& f, ConvLayer& conv, models::ops::ConvWeights& w);

// The modelled cost of one convolution (the layer, split in height as split_conv would).
struct ConvCost {
  bool feasible = false;          // split_conv accepts it
  std::uint64_t packages = 0;     // CSC packages per atomic operation and kernel group
                                  // (direct: one output pixel; Winograd: four)
  std::uint64_t csc_cycles = 0;   // kernel groups x output pixels x packages
  std::uint64_t input_bytes = 0;  // the input surface the host writes
  std::uint64_t read_bytes = 0;   // what CDMA reads: band lines and weight fetches
  std::uint64_t cycles = 0;       // csc_cycles + read_bytes / read bandwidth
};
// `layer` needs its geometry, precision, src and dst surfaces (addresses may be 0) and
// kernels; `read_bytes_per_cycle` > 0.
[[nodiscard]] ConvCost conv_cost(const ConvLayer& layer, const ConvHardware& hw,
                                 double read_bytes_per_cycle);

// What CDMA's data client sustains on `hw` in bytes per cycle (see above).
[[nodiscard]] double cdma_read_bytes_per_cycle(const HwConfig& hw);

// The three candidates' costs for the convolution `a` reading `in` with `kernels` kernels, and
// the chosen layout.
struct FoldChoice {
  ConvCost cost[3];  // by FoldKind
  FoldKind chosen = FoldKind::kNone;
};
[[nodiscard]] FoldChoice choose_input_fold(const Cube& in, const ConvAttrs& a, const Cube& out,
                                           std::uint32_t kernels, Precision precision,
                                           FoldMode mode, const ConvHardware& hw,
                                           double read_bytes_per_cycle);

}  // namespace octasim::firmware::net
