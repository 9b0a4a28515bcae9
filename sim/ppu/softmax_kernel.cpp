// The softmax kernel (kSoftmax) on the FMA lanes: softmax over one axis of an FP16 feature
// surface in NVDLA's format; the values are models/ops/softmax.hpp's (softmax_surface_line).
//
// Work is cut into columns: the atoms that hold whole lines along the axis — axis C: the S
// atoms of one (w, h) position (one line); axis H: the H atoms of one (surface, w) (C' lines);
// axis W: the W atoms of one (surface, h) (C' lines). Consecutive columns are neighbours in
// memory (w ascending for axes C and H, h for W).
//
// Cost model (like the other streaming kernels: bytes through the SM's port, work on the FMA
// lanes): a CTA streams its atoms in steps of kStepBytes with kPrefetch steps of loads ahead.
// - One pass, when a column fits kResidentBytes: a CTA holds as many whole columns as fit in
//   kResidentBytes of shared memory (fewer when that would leave SMs without a CTA) and reads
//   each atom once; a column's math (max, exp and
//   sum, divide: kOpsPerElement FMA-lane operations per real element) is charged in the step
//   that loads its last atom.
// - Three passes, for longer columns: one column per CTA, streamed three times in steps (max,
//   then exp and sum, then divide and store: kMaxOps, kExpSumOps and kDivideOps per element),
//   shared memory holding only the step buffers.
// A step's math takes ceil(ops / FMA lanes) cycles. Every output atom (padding lanes +0) is
// stored when the CTA ends.
#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "models/ops/softmax.hpp"
#include "sim/ppu/kernel_decode.hpp"

namespace octasim::ppu::detail {
namespace {

using models::ops::SoftmaxAxis;
using models::ops::SoftmaxShape;
using models::ops::SoftmaxSurface;

constexpr std::uint64_t kStepBytes = 4096;       // input bytes per step (one step buffer)
constexpr std::uint64_t kResidentBytes = 32768;  // shared memory of a one-pass CTA's columns
constexpr unsigned kPrefetch = 3;                // steps of loads in flight ahead
constexpr unsigned kMaxOps = 1, kExpSumOps = 6, kDivideOps = 2;  // subtract 1, exp 4, add 1
constexpr unsigned kOpsPerElement = kMaxOps + kExpSumOps + kDivideOps;

const char* axis_name(SoftmaxAxis a) {
  return a == SoftmaxAxis::kC ? "C" : a == SoftmaxAxis::kH ? "H" : "W";
}

// Appends [addr, +bytes) to `out`, extending the last range when it ends at addr.
void add_range(std::vector<Range>& out, std::uint64_t addr, std::uint64_t bytes) {
  if (!out.empty() && out.back().addr + out.back().bytes == addr) {
    out.back().bytes += bytes;
  } else {
    out.push_back({addr, bytes});
  }
}

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(const std::uint32_t* w, const HwConfig& hw, const MemoryImage& image) {
    decode(w);
    in_bytes_ = read_image(image, in_.address, models::ops::softmax_surface_bytes(shape_, in_),
                           "softmax input");
    const std::uint64_t out_bytes = models::ops::softmax_surface_bytes(shape_, out_);
    check_writable(image, out_.address, out_bytes, "softmax output");
    out_bytes_.assign(out_bytes, 0);  // padding lanes stay +0
    plan(hw);
    const std::uint64_t atoms =
        std::uint64_t{shape_.surfaces()} * shape_.height * shape_.width * shape_.atom_bytes;
    compulsory_bytes_ = 2 * atoms;
    record.kind = "softmax";
    record.type = "fp16";
    record.m = static_cast<unsigned>(shape_.lines()), record.n = 1, record.k = shape_.line_length();
    record.tile_m = static_cast<unsigned>(cols_per_cta_), record.tile_n = 1;
    record.tile_k = static_cast<unsigned>(atoms_per_step_);
    record.ctas = ctas();
    record.path = passes_ == 1 ? fmt::format("fma (streaming softmax over {}, one pass)",
                                             axis_name(shape_.axis))
                               : fmt::format(
                                     "fma (streaming softmax over {}, three passes: "
                                     "{}-byte columns exceed {} bytes of shared memory)",
                                     axis_name(shape_.axis), column_bytes_, resident_);
  }
  [[nodiscard]] unsigned ctas() const override {
    return static_cast<unsigned>(ceil_div(columns_, cols_per_cta_));
  }
  [[nodiscard]] unsigned steps(unsigned cta) const override {
    return static_cast<unsigned>(passes_ * ceil_div(cta_atoms(cta), atoms_per_step_));
  }
  [[nodiscard]] bool tensor() const override { return false; }
  [[nodiscard]] unsigned prefetch_depth() const override { return kPrefetch; }
  void loads(unsigned cta, unsigned step, std::vector<Range>& out) const override {
    const auto [f0, f1] = flat_range(cta, step);
    const std::uint64_t first = first_column(cta);
    for (std::uint64_t f = f0; f < f1; ++f) {
      add_range(out, in_.address + atom_offset(in_, first + f / along_, f % along_),
                shape_.atom_bytes);
    }
  }
  [[nodiscard]] std::uint64_t math_cycles(unsigned cta, unsigned step) const override {
    const auto [f0, f1] = flat_range(cta, step);
    const std::uint64_t first = first_column(cta);
    std::uint64_t ops = 0;
    if (passes_ == 1) {
      for (std::uint64_t c = f0 / along_; c < f1 / along_; ++c) {
        ops += kOpsPerElement * elements(first + c, 0, along_);
      }
    } else {
      const unsigned pass = step / steps_per_pass(cta);
      const unsigned per = pass == 0 ? kMaxOps : pass == 1 ? kExpSumOps : kDivideOps;
      ops = per * elements(first, f0, f1);
    }
    return ceil_div(ops, lanes_);
  }
  void begin(unsigned /*cta*/, CtaState& /*s*/) override {}
  void step(unsigned cta, unsigned step, CtaState& /*s*/) override {
    const std::uint64_t first = first_column(cta);
    if (passes_ == 1) {
      const auto [f0, f1] = flat_range(cta, step);
      for (std::uint64_t c = f0 / along_; c < f1 / along_; ++c) compute_column(first + c);
    } else if (step + 1 == steps(cta)) {
      compute_column(first);
    }
  }
  void end(unsigned cta, CtaState& /*s*/, std::vector<Range>& stores) override {
    const std::uint64_t first = first_column(cta);
    const std::uint64_t last = std::min(columns_, first + cols_per_cta_);
    for (std::uint64_t c = first; c < last; ++c) {
      for (std::uint32_t j = 0; j < along_; ++j) {
        add_range(stores, out_.address + atom_offset(out_, c, j), shape_.atom_bytes);
      }
    }
  }
  void finish(MemoryImage& image) override {
    // Only the atoms (one run of W atoms per surface line): stride gaps are not written.
    const std::uint64_t run = std::uint64_t{shape_.width} * shape_.atom_bytes;
    for (std::uint32_t s = 0; s < shape_.surfaces(); ++s) {
      for (std::uint32_t h = 0; h < shape_.height; ++h) {
        const std::uint64_t off =
            std::uint64_t{s} * out_.surface_stride + std::uint64_t{h} * out_.line_stride;
        image.write(out_.address + off, out_bytes_.data() + off, run);
      }
    }
  }

 private:
  void decode(const std::uint32_t* w) {
    namespace S = ppu_format::softmax;
    if (w[S::kType] != S::kTypeFp16) {
      bad_kernel(fmt::format("softmax element type {} (only 2, FP16)", w[S::kType]));
    }
    if (w[S::kAxis] > 2) bad_kernel(fmt::format("softmax axis {} (0 C, 1 H, 2 W)", w[S::kAxis]));
    shape_.axis = static_cast<SoftmaxAxis>(w[S::kAxis]);
    shape_.width = w[S::kWidth], shape_.height = w[S::kHeight], shape_.channels = w[S::kChannels];
    shape_.atom_bytes = w[S::kAtomBytes];
    in_ = {address(w, S::kInput), w[S::kInputLineStride], w[S::kInputSurfaceStride]};
    out_ = {address(w, S::kOutput), w[S::kOutputLineStride], w[S::kOutputSurfaceStride]};
    const std::string why = models::ops::softmax_layout_error(shape_, in_, out_);
    if (!why.empty()) bad_kernel("softmax " + why);
  }
  // Columns, passes and the CTA tiling (the cost model above).
  void plan(const HwConfig& hw) {
    const std::uint64_t s = shape_.surfaces();
    switch (shape_.axis) {
      case SoftmaxAxis::kC:
        columns_ = std::uint64_t{shape_.height} * shape_.width, along_ = shape_.surfaces();
        break;
      case SoftmaxAxis::kH:
        columns_ = s * shape_.width, along_ = shape_.height;
        break;
      case SoftmaxAxis::kW:
        columns_ = s * shape_.height, along_ = shape_.width;
        break;
    }
    column_bytes_ = std::uint64_t{along_} * shape_.atom_bytes;
    atoms_per_step_ = kStepBytes / shape_.atom_bytes;
    resident_ = std::min<std::uint64_t>(kResidentBytes, hw.ppu.smem_bytes_per_sm);
    if (column_bytes_ <= resident_) {
      passes_ = 1;
      // As many columns as fit, but no fewer CTAs than SMs while there are columns to share.
      cols_per_cta_ = std::max<std::uint64_t>(
          1, std::min(resident_ / column_bytes_, ceil_div(columns_, sms(hw))));
      smem_bytes_ = std::min(cols_per_cta_, columns_) * column_bytes_;
    } else {
      passes_ = 3;
      cols_per_cta_ = 1;
      smem_bytes_ = (kPrefetch + 1) * kStepBytes;
    }
    lanes_ = std::max(1u, hw.ppu.fma_lanes_per_sm);
    peak_macs_ = path_peak_macs_ = static_cast<double>(sms(hw)) * lanes_;
  }
  [[nodiscard]] std::uint64_t first_column(unsigned cta) const { return cta * cols_per_cta_; }
  [[nodiscard]] std::uint64_t cta_atoms(unsigned cta) const {
    return (std::min(columns_, first_column(cta) + cols_per_cta_) - first_column(cta)) * along_;
  }
  [[nodiscard]] std::uint64_t steps_per_pass(unsigned cta) const {
    return ceil_div(cta_atoms(cta), atoms_per_step_);
  }
  // The CTA's atoms the step loads, as indices into its columns' atoms (column-major).
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> flat_range(unsigned cta,
                                                                   unsigned step) const {
    const std::uint64_t k = step % steps_per_pass(cta);
    return {k * atoms_per_step_, std::min(cta_atoms(cta), (k + 1) * atoms_per_step_)};
  }
  // Byte offset of atom j (along the axis) of column `col` in surface `s`.
  [[nodiscard]] std::uint64_t atom_offset(const SoftmaxSurface& s, std::uint64_t col,
                                          std::uint32_t j) const {
    const std::uint64_t a = shape_.atom_bytes, ls = s.line_stride, ss = s.surface_stride;
    switch (shape_.axis) {
      case SoftmaxAxis::kC:
        return j * ss + col / shape_.width * ls + col % shape_.width * a;
      case SoftmaxAxis::kH:
        return col / shape_.width * ss + j * ls + col % shape_.width * a;
      case SoftmaxAxis::kW:
        return col / shape_.height * ss + col % shape_.height * ls + j * a;
    }
    return 0;
  }
  // Channels [c0, c1) the column's lines run through (axis C: the one line's, all of them).
  [[nodiscard]] std::pair<std::uint32_t, std::uint32_t> lanes(std::uint64_t col) const {
    const std::uint32_t cpa = shape_.channels_per_atom();
    const std::uint32_t surface = static_cast<std::uint32_t>(
        col / (shape_.axis == SoftmaxAxis::kH ? shape_.width : shape_.height));
    return {surface * cpa, std::min(shape_.channels, (surface + 1) * cpa)};
  }
  // Real elements in atoms [j0, j1) of the column.
  [[nodiscard]] std::uint64_t elements(std::uint64_t col, std::uint64_t j0,
                                       std::uint64_t j1) const {
    const std::uint64_t cpa = shape_.channels_per_atom();
    if (shape_.axis == SoftmaxAxis::kC) {
      return std::min<std::uint64_t>(shape_.channels, j1 * cpa) - j0 * cpa;
    }
    const auto [c0, c1] = lanes(col);
    return std::uint64_t{c1 - c0} * (j1 - j0);
  }
  void compute_column(std::uint64_t col) {
    const auto run = [&](std::uint64_t line) {
      models::ops::softmax_surface_line(shape_, in_, in_bytes_.data(), out_, out_bytes_.data(),
                                        line, scratch_);
    };
    if (shape_.axis == SoftmaxAxis::kC) {
      run(col);  // line h * W + w
      return;
    }
    const auto [c0, c1] = lanes(col);
    const std::uint64_t per = shape_.axis == SoftmaxAxis::kH ? shape_.width : shape_.height;
    for (std::uint32_t c = c0; c < c1; ++c) run(std::uint64_t{c} * per + col % per);
  }

  SoftmaxShape shape_;
  SoftmaxSurface in_, out_;
  std::vector<std::uint8_t> in_bytes_, out_bytes_;
  std::uint64_t columns_ = 0, cols_per_cta_ = 1, column_bytes_ = 0, atoms_per_step_ = 1;
  std::uint64_t resident_ = 0;
  std::uint32_t along_ = 1;
  unsigned passes_ = 1, lanes_ = 1;
  models::ops::SoftmaxScratch scratch_;
};

}  // namespace

std::unique_ptr<Kernel> make_softmax_kernel(const std::uint32_t* w, const HwConfig& hw,
                                            const MemoryImage& image) {
  return std::make_unique<SoftmaxKernel>(w, hw, image);
}

}  // namespace octasim::ppu::detail
