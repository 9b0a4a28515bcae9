// GEMM and implicit-GEMM convolution on the tensor cores (or the FMA lanes): a CTA per output
// tile, a k-step per K tile. The constructor decodes the descriptor, chooses the path, plans the
// tiling and the timing, then reads and lays out the operands; the values come from models/ops
// tile by tile, so D equals the references bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "models/ops/gemm.hpp"
#include "models/ops/split_gemm.hpp"
#include "sim/ppu/kernel_decode.hpp"

namespace octasim::ppu::detail {
namespace {

using models::ops::gemm_type_info;
using models::ops::GemmOperands;
using models::ops::GemmType;

class GemmKernel final : public Kernel {
 public:
  GemmKernel(const std::uint32_t* w, const HwConfig& hw, const MemoryImage& image, bool conv) {
    conv_ = conv;
    const unsigned type_index = w[1];
    if (type_index > 5) bad_kernel(fmt::format("type {} is not a GEMM type (0..5)", type_index));
    type_ = static_cast<GemmType>(type_index);
    const std::uint32_t flags = w[2];
    if (conv) {
      decode_conv(w, flags);
    } else {
      decode_gemm(w, flags);
    }
    if (m_ == 0 || n_ == 0 || k_ == 0) bad_kernel("empty GEMM shape");
    const unsigned policy = (flags >> 12) & 3u;
    if (policy > 1) bad_kernel(fmt::format("shape policy {} (0 pad, 1 fallback)", policy));
    const std::string path = choose_path(policy);
    plan_tiles(hw);
    plan_timing(hw);
    read_operands(image);
    lay_out_operands();

    auto& r = record;
    r.kind = conv ? "conv" : "gemm";
    r.type = gemm_type_info(type_).name;
    r.m = m_, r.n = n_, r.k = k_;
    r.tile_m = tm_, r.tile_n = tn_, r.tile_k = tk_;
    r.ctas = ctas();
    r.path = path;
    r.macs = std::uint64_t{m_} * n_ * k_ * products_;
  }

  [[nodiscard]] unsigned ctas() const override { return tiles_m_ * tiles_n_; }
  [[nodiscard]] CtaGrid grid() const override { return {tiles_m_, tiles_n_}; }
  [[nodiscard]] unsigned steps(unsigned /*cta*/) const override { return ksteps_; }
  [[nodiscard]] bool tensor() const override { return tensor_; }

  void loads(unsigned cta, unsigned step, std::vector<Range>& out) const override {
    const Tile t = tile(cta, step);
    if (conv_) {
      const unsigned c = shape_.c;
      for (unsigned m = t.m0; m < t.m1; ++m) {
        for (unsigned kk = t.k0; kk < t.k1;) {
          const unsigned seg_end = std::min(t.k1, (kk / c + 1) * c);
          const long long first = input_index(m, kk);
          if (first >= 0) {
            out.push_back(
                element_range(addr_a_, static_cast<std::uint64_t>(first), seg_end - kk, in_bits_));
          }
          kk = seg_end;
        }
      }
      for (unsigned o = t.n0; o < t.n1; ++o) {
        out.push_back(element_range(addr_b_, std::uint64_t{o} * k_ + t.k0, t.k1 - t.k0, in_bits_));
      }
      if (step == 0 && has_c_)
        out.push_back(
            {addr_c_ + std::uint64_t{t.n0} * acc_bytes_, std::uint64_t{t.n1 - t.n0} * acc_bytes_});
      return;
    }
    for (unsigned m = t.m0; m < t.m1; ++m) {
      out.push_back(element_range(addr_a_, std::uint64_t{m} * k_ + t.k0, t.k1 - t.k0, in_bits_));
    }
    for (unsigned kk = t.k0; kk < t.k1; ++kk) {
      out.push_back(element_range(addr_b_, std::uint64_t{kk} * n_ + t.n0, t.n1 - t.n0, in_bits_));
    }
    if (step == 0 && has_c_) {
      for (unsigned m = t.m0; m < t.m1; ++m) {
        out.push_back({addr_c_ + (std::uint64_t{m} * n_ + t.n0) * acc_bytes_,
                       std::uint64_t{t.n1 - t.n0} * acc_bytes_});
      }
    }
  }

  [[nodiscard]] std::uint64_t math_cycles(unsigned cta, unsigned step) const override {
    const Tile t = tile(cta, step);
    const unsigned rows = t.m1 - t.m0, cols = t.n1 - t.n0, kc = t.k1 - t.k0;
    if (!tensor_) return ceil_div(std::uint64_t{rows} * cols * kc * products_, lanes_);
    const std::uint64_t mma_steps = std::uint64_t{round_up(rows, mult_) / mma_m_} *
                                    (round_up(cols, mult_) / mma_n_) *
                                    (round_up(kc, mult_) / mma_k_) * products_;
    return ceil_div(mma_steps, tcs_) * step_cycles_;
  }

  [[nodiscard]] std::uint64_t macs(unsigned cta, unsigned step) const override {
    const Tile t = tile(cta, step);
    return std::uint64_t{t.m1 - t.m0} * (t.n1 - t.n0) * (t.k1 - t.k0) * products_;
  }

  void begin(unsigned cta, CtaState& s) override {
    const Tile t = tile(cta, 0);
    s.acc.resize(products_);
    s.saturations = 0;
    if (split_) {
      for (unsigned p = 0; p < products_; ++p) {
        models::ops::gemm_load_c(pair_ops_[p], t.m0, t.m1, t.n0, t.n1, s.acc[p]);
      }
    } else {
      models::ops::gemm_load_c(ops_, t.m0, t.m1, t.n0, t.n1, s.acc[0]);
    }
  }

  void step(unsigned cta, unsigned step, CtaState& s) override {
    const Tile t = tile(cta, step);
    if (split_) {
      for (unsigned p = 0; p < products_; ++p) {
        (void)models::ops::gemm_accumulate(pair_ops_[p], t.m0, t.m1, t.n0, t.n1, t.k0, t.k1,
                                           s.acc[p]);
      }
    } else if (conv_ && !int_type_) {
      // Float types skip padded taps (a +0 product could turn an accumulator of -0 into +0):
      // each row accumulates over its valid (r, s) segments, in ascending kk.
      const unsigned cols = t.n1 - t.n0, c = shape_.c;
      for (unsigned m = t.m0; m < t.m1; ++m) {
        double* row = s.acc[0].data() + std::size_t{m - t.m0} * cols;
        s.row.assign(row, row + cols);
        for (unsigned kk = t.k0; kk < t.k1;) {
          unsigned end = kk;
          while (end < t.k1 && input_index(m, end) >= 0) end = std::min(t.k1, (end / c + 1) * c);
          if (end > kk) {
            s.saturations +=
                models::ops::gemm_accumulate(ops_, m, m + 1, t.n0, t.n1, kk, end, s.row);
            kk = end;
          } else {
            kk = std::min(t.k1, (kk / c + 1) * c);
          }
        }
        std::copy(s.row.begin(), s.row.end(), row);
      }
    } else {
      s.saturations +=
          models::ops::gemm_accumulate(ops_, t.m0, t.m1, t.n0, t.n1, t.k0, t.k1, s.acc[0]);
    }
  }

  void end(unsigned cta, CtaState& s, std::vector<Range>& stores) override {
    const Tile t = tile(cta, 0);
    if (split_) {
      // models::split_gemm's order: from the last selected product back to (0,0), in FP32.
      std::vector<double>& out = s.row;
      out.assign(s.acc[0].size(), 0.0);
      for (std::size_t e = 0; e < out.size(); ++e) {
        float d = 0.0f;
        for (unsigned p = products_; p-- > 0;) {
          const float v = std::ldexp(static_cast<float>(s.acc[p][e]), unscale_[p]);
          d = p + 1 == products_ ? v : d + v;
        }
        out[e] = static_cast<double>(d);
      }
      models::ops::gemm_store_d(ops_, t.m0, t.m1, t.n0, t.n1, out, d_.data());
    } else {
      models::ops::gemm_store_d(ops_, t.m0, t.m1, t.n0, t.n1, s.acc[0], d_.data());
    }
    record.saturations += s.saturations;
    const unsigned d_bytes = split_ ? 4 : acc_bytes_;
    for (unsigned m = t.m0; m < t.m1; ++m) {
      stores.push_back({addr_d_ + (std::uint64_t{m} * n_ + t.n0) * d_bytes,
                        std::uint64_t{t.n1 - t.n0} * d_bytes});
    }
  }

  void finish(MemoryImage& image) override { image.write(addr_d_, d_.data(), d_.size()); }

 private:
  struct Tile {
    unsigned m0, m1, n0, n1, k0, k1;
  };

  // Descriptor decoding: shape, flags, tiles and addresses (conv: the implicit GEMM's).
  void decode_conv(const std::uint32_t* w, std::uint32_t flags) {
    if ((flags & ~(1u | 3u << 12)) != 0) {
      bad_kernel(fmt::format("conv flags {:#x}: only bits 0, 12-13", flags));
    }
    namespace C = ppu_format::conv;
    shape_.n = w[C::kN], shape_.h = w[C::kH], shape_.w = w[C::kW], shape_.c = w[C::kC];
    shape_.k_out = w[C::kKOut], shape_.r = w[C::kR], shape_.s = w[C::kS];
    shape_.stride_h = w[C::kStrideH], shape_.stride_w = w[C::kStrideW];
    shape_.pad_h = w[C::kPadH], shape_.pad_w = w[C::kPadW];
    if (shape_.n == 0 || shape_.h == 0 || shape_.w == 0 || shape_.c == 0 || shape_.k_out == 0 ||
        shape_.r == 0 || shape_.s == 0 || shape_.out_h() == 0 || shape_.out_w() == 0) {
      bad_kernel("conv shape empty or stride 0");
    }
    m_ = shape_.gemm_m(), n_ = shape_.k_out, k_ = shape_.gemm_k();
    has_c_ = (flags & 1u) != 0;
    tm_ = w[C::kTileM], tn_ = w[C::kTileN], tk_ = w[C::kTileK];
    addr_a_ = address(w, C::kInput), addr_b_ = address(w, C::kWeights);
    addr_c_ = address(w, C::kBias), addr_d_ = address(w, C::kOutput);
  }

  void decode_gemm(const std::uint32_t* w, std::uint32_t flags) {
    namespace G = ppu_format::gemm;
    if ((flags & ~(1u | 3u << 12 | 1u << 16)) != 0) {
      bad_kernel(fmt::format("gemm flags {:#x}: only bits 0, 12-13, 16", flags));
    }
    m_ = w[G::kM], n_ = w[G::kN], k_ = w[G::kK];
    has_c_ = (flags & 1u) != 0;
    split_ = (flags & 1u << 16) != 0;
    tm_ = w[G::kTileM], tn_ = w[G::kTileN], tk_ = w[G::kTileK];
    addr_a_ = address(w, G::kA), addr_b_ = address(w, G::kB);
    addr_c_ = address(w, G::kC), addr_d_ = address(w, G::kD);
    if (!split_) return;
    if (type_ != GemmType::kFp32) bad_kernel("split precision needs type fp32 (5)");
    if (has_c_) bad_kernel("split precision takes no C");
    if (w[G::kSplitFormat] > 1) bad_kernel("split format must be 0 (bf16) or 1 (fp16)");
    split_cfg_.format =
        w[G::kSplitFormat] == 0 ? models::ops::SplitFormat::kBf16 : models::ops::SplitFormat::kFp16;
    split_cfg_.parts = w[G::kSplitParts];
    split_cfg_.products = w[G::kSplitProducts];
    split_cfg_.residual_scale_log2 = static_cast<std::int32_t>(w[G::kSplitScaleLog2]);
    const auto& c = split_cfg_;
    const bool ok = c.parts >= 1 && c.parts <= 3 &&
                    (c.products == 1 || (c.products == 3 && c.parts >= 2) ||
                     (c.products == 6 && c.parts == 3)) &&
                    c.residual_scale_log2 >= -64 && c.residual_scale_log2 <= 64;
    if (!ok) {
      bad_kernel(
          fmt::format("split parts {} products {} scale 2^{}: need parts 1..3, "
                      "products 1, 3 (parts >= 2) or 6 (parts 3), |scale| <= 64",
                      c.parts, c.products, c.residual_scale_log2));
    }
  }

  // The tensor-core format the kernel runs in and its path: tensor cores, padded to the
  // format's shape multiple (policy 0), or the FMA lanes (FP32, or policy 1 for a shape that
  // is not a multiple). Returns the record's path text.
  std::string choose_path(unsigned policy) {
    const auto& info = gemm_type_info(type_);
    mma_type_ = type_;
    if (split_) {
      mma_type_ = split_cfg_.format == models::ops::SplitFormat::kBf16 ? GemmType::kBf16Fp32
                                                                       : GemmType::kFp16Fp32;
    }
    const auto& mi = gemm_type_info(mma_type_);
    mma_m_ = mi.mma_m, mma_n_ = mi.mma_n, mma_k_ = mi.mma_k, mult_ = mi.shape_multiple;
    products_ = split_ ? split_cfg_.products : 1;
    in_bits_ = info.input_bits;
    acc_bytes_ = info.acc_bytes;
    tensor_ = type_ != GemmType::kFp32 || split_;
    if (!tensor_) return "fma (fp32: no tensor-core format)";
    std::string path = "tensor";
    std::string bad, padded;
    const auto note = [&](char dim, unsigned v) {
      if (v % mult_ == 0) return;
      bad += fmt::format("{}{} {}", bad.empty() ? "" : ", ", dim, v);
      padded += fmt::format("{}{} {}->{}", padded.empty() ? "" : ", ", dim, v, round_up(v, mult_));
    };
    note('M', m_), note('N', n_), note('K', k_);
    if (!bad.empty()) {
      if (policy == 0) {
        path = fmt::format("tensor (padded {}: not multiples of {})", padded, mult_);
      } else {
        tensor_ = false;
        path = fmt::format("fma (policy fallback: {} not multiples of {})", bad, mult_);
      }
    }
    if (split_) {
      path += fmt::format(" (split fp32: {} {} products of {} parts, residual scale 2^{})",
                          products_, mi.name, split_cfg_.parts, split_cfg_.residual_scale_log2);
    }
    return path;
  }

  [[nodiscard]] std::uint64_t a_elements() const {
    return conv_ ? std::uint64_t{shape_.n} * shape_.h * shape_.w * shape_.c
                 : std::uint64_t{m_} * k_;
  }
  [[nodiscard]] std::uint64_t b_elements() const { return std::uint64_t{k_} * n_; }
  [[nodiscard]] std::uint64_t d_elements() const { return std::uint64_t{m_} * n_; }

  // Tiles (descriptor-given or the defaults: double-buffered A and B k-tiles take 16 KiB), the
  // shared memory a CTA needs, and the grid.
  void plan_tiles(const HwConfig& hw) {
    const unsigned bits = in_bits_;  // split precision: type fp32, read as FP32
    if (tm_ == 0) tm_ = 64;
    if (tn_ == 0) tn_ = 64;
    if (tk_ == 0) tk_ = bits == 4 ? 128 : bits == 8 ? 64 : bits == 16 ? 32 : 16;
    const unsigned tile_multiple = std::max(mult_, mma_k_);
    if (tm_ % mult_ != 0 || tn_ % mult_ != 0 || tk_ % tile_multiple != 0 || tm_ > 4096 ||
        tn_ > 4096 || tk_ > 4096) {
      bad_kernel(
          fmt::format("tile {}x{}x{}: M and N tiles must be multiples of {}, the K tile "
                      "of {} (and <= 4096)",
                      tm_, tn_, tk_, mult_, tile_multiple));
    }
    smem_bytes_ = 2 * models::ops::gemm_input_bytes(
                          type_, std::uint64_t{tm_} * tk_ + std::uint64_t{tk_} * tn_);
    if (smem_bytes_ > hw.ppu.smem_bytes_per_sm) {
      bad_kernel(
          fmt::format("tile {}x{}x{} needs {} B of shared memory (double-buffered A and "
                      "B), an SM has {}",
                      tm_, tn_, tk_, smem_bytes_, hw.ppu.smem_bytes_per_sm));
    }
    if (a_elements() > kMaxElements || b_elements() > kMaxElements || d_elements() > kMaxElements ||
        (conv_ && std::uint64_t{m_} * k_ > kMaxElements)) {
      bad_kernel("operands larger than 2^28 elements");
    }
    tiles_m_ = static_cast<unsigned>(ceil_div(m_, tm_));
    tiles_n_ = static_cast<unsigned>(ceil_div(n_, tn_));
    ksteps_ = static_cast<unsigned>(ceil_div(k_, tk_));
    if (std::uint64_t{tiles_m_} * tiles_n_ > (1u << 24)) bad_kernel("more than 2^24 CTAs");
  }

  // The math pipe's rates (tensor-core step cycles of the format, FMA lanes) and the peaks.
  void plan_timing(const HwConfig& hw) {
    tcs_ = std::max(1u, hw.ppu.tensor_cores_per_sm);
    const unsigned in_b = gemm_type_info(mma_type_).input_bits;
    step_cycles_ = in_b == 16  ? hw.ppu.tc_fp16_step_cycles
                   : in_b == 8 ? hw.ppu.tc_int8_step_cycles
                               : hw.ppu.tc_int4_step_cycles;
    step_cycles_ = std::max(1u, step_cycles_);
    lanes_ = std::max(1u, hw.ppu.fma_lanes_per_sm);
    path_peak_macs_ =
        tensor_ ? tensor_peak_macs_per_cycle(hw, mma_type_) : static_cast<double>(sms(hw)) * lanes_;
    peak_macs_ = tensor_peak_macs_per_cycle(hw, mma_type_);
  }

  // Operands (bounds first, so an address error wins over anything later).
  void read_operands(const MemoryImage& image) {
    a_ = read_image(image, addr_a_, models::ops::gemm_input_bytes(type_, a_elements()),
                    conv_ ? "input" : "A");
    b_ = read_image(image, addr_b_, models::ops::gemm_input_bytes(type_, b_elements()),
                    conv_ ? "weights" : "B");
    if (has_c_) {
      const std::uint64_t c_elems = conv_ ? n_ : d_elements();
      c_ = read_image(image, addr_c_, c_elems * acc_bytes_, conv_ ? "bias" : "C");
    }
    const unsigned d_bytes_each = split_ ? 4 : acc_bytes_;
    check_writable(image, addr_d_, d_elements() * d_bytes_each, conv_ ? "output" : "D");
    d_.assign(d_elements() * d_bytes_each, 0);
    compulsory_bytes_ = a_.size() + b_.size() + c_.size() + d_.size();
  }

  // The GemmOperands models/ops reads: the operands as given, the conv's implicit GEMM, or the
  // split parts' pairs.
  void lay_out_operands() {
    if (conv_) {
      lay_out_conv();
    } else if (split_) {
      lay_out_split();
    } else {
      ops_ = GemmOperands{type_, m_, n_, k_, a_.data(), b_.data(), has_c_ ? c_.data() : nullptr};
    }
  }

  // B = the KRSC weights transposed (K x N); A = the im2col matrix (zero taps; float types skip
  // them per row in step(), as the reference does); C = the bias in every row.
  void lay_out_conv() {
    const auto wv = models::ops::decode_gemm_input(type_, b_, b_elements());
    std::vector<double> bt(b_elements());
    for (std::uint64_t o = 0; o < n_; ++o) {
      for (std::uint64_t kk = 0; kk < k_; ++kk) bt[kk * n_ + o] = wv[o * k_ + kk];
    }
    b_gemm_ = models::ops::encode_gemm_input(type_, bt);
    a_gemm_ = models::ops::conv_im2col(type_, shape_, a_.data());
    if (has_c_) {
      c_gemm_.resize(d_elements() * acc_bytes_);
      for (std::uint64_t m = 0; m < m_; ++m) {
        std::memcpy(c_gemm_.data() + m * n_ * acc_bytes_, c_.data(), n_ * acc_bytes_);
      }
    }
    ops_ = GemmOperands{
        type_, m_, n_, k_, a_gemm_.data(), b_gemm_.data(), has_c_ ? c_gemm_.data() : nullptr};
    int_type_ = type_ == GemmType::kInt8Int32 || type_ == GemmType::kInt4Int32;
  }

  // A and B split into parts in the MMA format; one GemmOperands per selected product.
  void lay_out_split() {
    std::vector<float> af(a_elements()), bf(b_elements());
    std::memcpy(af.data(), a_.data(), a_.size());
    std::memcpy(bf.data(), b_.data(), b_.size());
    const auto ap = models::ops::split_fp32(af, split_cfg_);
    const auto bp = models::ops::split_fp32(bf, split_cfg_);
    for (const auto& p : ap) {
      a_parts_.push_back(models::ops::encode_gemm_input(mma_type_, {p.begin(), p.end()}));
    }
    for (const auto& p : bp) {
      b_parts_.push_back(models::ops::encode_gemm_input(mma_type_, {p.begin(), p.end()}));
    }
    static constexpr std::pair<unsigned, unsigned> kPairs[] = {{0, 0}, {0, 1}, {1, 0},
                                                               {0, 2}, {1, 1}, {2, 0}};
    for (unsigned p = 0; p < products_; ++p) {
      const auto [i, j] = kPairs[p];
      pair_ops_.push_back(
          GemmOperands{mma_type_, m_, n_, k_, a_parts_[i].data(), b_parts_[j].data(), nullptr});
      unscale_.push_back(-static_cast<int>(i + j) * split_cfg_.residual_scale_log2);
    }
    ops_ = GemmOperands{GemmType::kFp32, m_, n_, k_, a_.data(), b_.data(), nullptr};
  }

  [[nodiscard]] Tile tile(unsigned cta, unsigned step) const {
    const unsigned tmi = cta / tiles_n_, tni = cta % tiles_n_;
    return {tmi * tm_,  std::min(m_, (tmi + 1) * tm_), tni * tn_, std::min(n_, (tni + 1) * tn_),
            step * tk_, std::min(k_, (step + 1) * tk_)};
  }
  // Conv: the input element of output row m, reduction index kk; -1 for a padded tap.
  [[nodiscard]] long long input_index(unsigned m, unsigned kk) const {
    const auto& sh = shape_;
    const unsigned ow = sh.out_w(), oh = sh.out_h();
    const unsigned x = m % ow, y = (m / ow) % oh, ni = m / (ow * oh);
    const unsigned ci = kk % sh.c, si = (kk / sh.c) % sh.s, ri = kk / (sh.c * sh.s);
    const long long iy = static_cast<long long>(y) * sh.stride_h + ri - sh.pad_h;
    const long long ix = static_cast<long long>(x) * sh.stride_w + si - sh.pad_w;
    if (iy < 0 || ix < 0 || iy >= sh.h || ix >= sh.w) return -1;
    return ((static_cast<long long>(ni) * sh.h + iy) * sh.w + ix) * sh.c + ci;
  }

  bool conv_ = false, split_ = false, has_c_ = false, tensor_ = true, int_type_ = false;
  GemmType type_ = GemmType::kFp32, mma_type_ = GemmType::kFp32;
  models::ops::ConvGemmShape shape_;
  models::ops::SplitConfig split_cfg_;
  unsigned m_ = 0, n_ = 0, k_ = 0, tm_ = 0, tn_ = 0, tk_ = 0;
  unsigned tiles_m_ = 0, tiles_n_ = 0, ksteps_ = 0;
  unsigned mma_m_ = 1, mma_n_ = 1, mma_k_ = 1, mult_ = 1, products_ = 1;
  unsigned in_bits_ = 32, acc_bytes_ = 4;
  unsigned tcs_ = 1, step_cycles_ = 1, lanes_ = 1;
  std::uint64_t addr_a_ = 0, addr_b_ = 0, addr_c_ = 0, addr_d_ = 0;
  std::vector<std::uint8_t> a_, b_, c_, d_;
  std::vector<std::uint8_t> a_gemm_, b_gemm_, c_gemm_;  // conv: im2col, weights^T, bias rows
  std::vector<std::vector<std::uint8_t>> a_parts_, b_parts_;
  std::vector<GemmOperands> pair_ops_;
  std::vector<int> unscale_;
  GemmOperands ops_;
};

}  // namespace

std::unique_ptr<Kernel> make_gemm_kernel(const std::uint32_t* w, const HwConfig& hw,
                                         const MemoryImage& image, bool conv) {
  return std::make_unique<GemmKernel>(w, hw, image, conv);
}

}  // namespace octasim::ppu::detail
