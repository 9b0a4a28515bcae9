#include "sim/ppu/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <utility>

#include <fmt/format.h>

#include "models/ops/elementwise.hpp"

namespace octasim::ppu {
namespace {

using models::ops::gemm_type_info;
using models::ops::GemmOperands;
using models::ops::GemmType;
using ppu_format::ErrorCode;

constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 28;  // per operand (host memory guard)

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}
unsigned round_up(unsigned v, unsigned m) {
  return (v + m - 1) / m * m;
}

std::uint64_t address(const std::uint32_t* w, unsigned i) {
  return std::uint64_t{w[i]} | std::uint64_t{w[i + 1]} << 32;
}

// The bytes holding elements [first, first + count) of `bits`-bit elements at `base`.
Range element_range(std::uint64_t base, std::uint64_t first, std::uint64_t count, unsigned bits) {
  if (bits == 4) {
    const std::uint64_t b0 = first / 2, b1 = (first + count - 1) / 2;
    return {base + b0, b1 - b0 + 1};
  }
  return {base + first * (bits / 8), count * (bits / 8)};
}

class Failure {
 public:
  Failure(ErrorCode code, std::string why) : code_(code), why_(std::move(why)) {}
  ErrorCode code_;
  std::string why_;
};

std::vector<std::uint8_t> read_image(const MemoryImage& image, std::uint64_t addr,
                                     std::uint64_t bytes, const char* what) {
  if (!image.contains(addr, bytes)) {
    throw Failure(ErrorCode::kBadAddress,
                  fmt::format("{} [{:#x}, +{}) outside the address space", what, addr, bytes));
  }
  std::vector<std::uint8_t> v(bytes);
  image.read(addr, v.data(), bytes);
  return v;
}

void check_writable(const MemoryImage& image, std::uint64_t addr, std::uint64_t bytes,
                    const char* what) {
  if (!image.contains(addr, bytes)) {
    throw Failure(ErrorCode::kBadAddress,
                  fmt::format("{} [{:#x}, +{}) outside the address space", what, addr, bytes));
  }
}

void bad_kernel(const std::string& why) {
  throw Failure(ErrorCode::kBadKernel, why);
}

unsigned sms(const HwConfig& hw) {
  return hw.ppu_gpcs * hw.ppu_sms_per_gpc;
}

// ---- GEMM and implicit-GEMM convolution ------------------------------------------------------
class GemmKernel final : public Kernel {
 public:
  GemmKernel(const std::uint32_t* w, const HwConfig& hw, const MemoryImage& image, bool conv) {
    conv_ = conv;
    const unsigned type_index = w[1];
    if (type_index > 5) bad_kernel(fmt::format("type {} is not a GEMM type (0..5)", type_index));
    type_ = static_cast<GemmType>(type_index);
    const auto& info = gemm_type_info(type_);
    const std::uint32_t flags = w[2];
    if (conv) {
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
    } else {
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
      if (split_) {
        if (type_ != GemmType::kFp32) bad_kernel("split precision needs type fp32 (5)");
        if (has_c_) bad_kernel("split precision takes no C");
        if (w[G::kSplitFormat] > 1) bad_kernel("split format must be 0 (bf16) or 1 (fp16)");
        split_cfg_.format = w[G::kSplitFormat] == 0 ? models::ops::SplitFormat::kBf16
                                                    : models::ops::SplitFormat::kFp16;
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
    }
    if (m_ == 0 || n_ == 0 || k_ == 0) bad_kernel("empty GEMM shape");
    const unsigned policy = (flags >> 12) & 3u;
    if (policy > 1) bad_kernel(fmt::format("shape policy {} (0 pad, 1 fallback)", policy));

    // The tensor-core format this kernel runs in.
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
    std::string path = "tensor";
    if (!tensor_) {
      path = "fma (fp32: no tensor-core format)";
    } else {
      std::string bad, padded;
      const auto note = [&](char dim, unsigned v) {
        if (v % mult_ == 0) return;
        bad += fmt::format("{}{} {}", bad.empty() ? "" : ", ", dim, v);
        padded +=
            fmt::format("{}{} {}->{}", padded.empty() ? "" : ", ", dim, v, round_up(v, mult_));
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
    }

    // Tiles: defaults per input width, so double-buffered A and B k-tiles take 16 KiB.
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
    if (smem_bytes_ > hw.ppu_smem_bytes_per_sm) {
      bad_kernel(
          fmt::format("tile {}x{}x{} needs {} B of shared memory (double-buffered A and "
                      "B), an SM has {}",
                      tm_, tn_, tk_, smem_bytes_, hw.ppu_smem_bytes_per_sm));
    }
    const std::uint64_t a_elems =
        conv ? std::uint64_t{shape_.n} * shape_.h * shape_.w * shape_.c : std::uint64_t{m_} * k_;
    const std::uint64_t b_elems = std::uint64_t{k_} * n_;
    const std::uint64_t d_elems = std::uint64_t{m_} * n_;
    if (a_elems > kMaxElements || b_elems > kMaxElements || d_elems > kMaxElements ||
        (conv && std::uint64_t{m_} * k_ > kMaxElements)) {
      bad_kernel("operands larger than 2^28 elements");
    }
    tiles_m_ = static_cast<unsigned>(ceil_div(m_, tm_));
    tiles_n_ = static_cast<unsigned>(ceil_div(n_, tn_));
    ksteps_ = static_cast<unsigned>(ceil_div(k_, tk_));
    if (std::uint64_t{tiles_m_} * tiles_n_ > (1u << 24)) bad_kernel("more than 2^24 CTAs");

    tcs_ = std::max(1u, hw.ppu_tensor_cores_per_sm);
    const unsigned in_b = mi.input_bits;
    step_cycles_ = in_b == 16  ? hw.ppu_tc_fp16_step_cycles
                   : in_b == 8 ? hw.ppu_tc_int8_step_cycles
                               : hw.ppu_tc_int4_step_cycles;
    step_cycles_ = std::max(1u, step_cycles_);
    lanes_ = std::max(1u, hw.ppu_fma_lanes_per_sm);
    path_peak_macs_ =
        tensor_ ? tensor_peak_macs_per_cycle(hw, mma_type_) : static_cast<double>(sms(hw)) * lanes_;
    peak_macs_ = tensor_peak_macs_per_cycle(hw, mma_type_);

    // Operands (bounds first, so an address error wins over anything later).
    a_ = read_image(image, addr_a_, models::ops::gemm_input_bytes(type_, a_elems),
                    conv ? "input" : "A");
    b_ = read_image(image, addr_b_, models::ops::gemm_input_bytes(type_, b_elems),
                    conv ? "weights" : "B");
    if (has_c_) {
      const std::uint64_t c_elems = conv ? n_ : d_elems;
      c_ = read_image(image, addr_c_, c_elems * acc_bytes_, conv ? "bias" : "C");
    }
    const unsigned d_bytes_each = split_ ? 4 : acc_bytes_;
    check_writable(image, addr_d_, d_elems * d_bytes_each, conv ? "output" : "D");
    d_.assign(d_elems * d_bytes_each, 0);
    compulsory_bytes_ = a_.size() + b_.size() + c_.size() + d_.size();

    if (conv) {
      // B = the KRSC weights transposed (K x N); A = the im2col matrix (zero taps; float types
      // skip them per row in step(), as the reference does).
      const auto wv = models::ops::decode_gemm_input(type_, b_, b_elems);
      std::vector<double> bt(b_elems);
      for (std::uint64_t o = 0; o < n_; ++o) {
        for (std::uint64_t kk = 0; kk < k_; ++kk) bt[kk * n_ + o] = wv[o * k_ + kk];
      }
      b_gemm_ = models::ops::encode_gemm_input(type_, bt);
      a_gemm_ = models::ops::conv_im2col(type_, shape_, a_.data());
      if (has_c_) {
        c_gemm_.resize(d_elems * acc_bytes_);
        for (std::uint64_t m = 0; m < m_; ++m) {
          std::memcpy(c_gemm_.data() + m * n_ * acc_bytes_, c_.data(), n_ * acc_bytes_);
        }
      }
      ops_ = GemmOperands{
          type_, m_, n_, k_, a_gemm_.data(), b_gemm_.data(), has_c_ ? c_gemm_.data() : nullptr};
      int_type_ = type_ == GemmType::kInt8Int32 || type_ == GemmType::kInt4Int32;
    } else if (split_) {
      std::vector<float> af(a_elems), bf(b_elems);
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
    } else {
      ops_ = GemmOperands{type_, m_, n_, k_, a_.data(), b_.data(), has_c_ ? c_.data() : nullptr};
    }

    auto& r = record;
    r.kind = conv ? "conv" : "gemm";
    r.type = info.name;
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

// ---- Element-wise and reduction: streaming FP32 kernels on the FMA lanes ---------------------
constexpr unsigned kStreamStepElements = 1024;  // 4 KiB of each operand per step
constexpr unsigned kStreamCtaSteps = 4;
constexpr unsigned kStreamPrefetch = 3;  // steps in flight ahead: 4 buffers per operand

class ElementwiseKernel final : public Kernel {
 public:
  ElementwiseKernel(const std::uint32_t* w, const HwConfig& hw, const MemoryImage& image) {
    namespace E = ppu_format::elementwise;
    if (w[E::kOp] > 2)
      bad_kernel(fmt::format("elementwise op {} (0 add, 1 mul, 2 relu)", w[E::kOp]));
    op_ = static_cast<models::ops::ElementwiseOp>(w[E::kOp]);
    count_ = w[E::kCount];
    if (count_ == 0 || count_ > kMaxElements) bad_kernel("elementwise count 0 or > 2^28");
    binary_ = op_ != models::ops::ElementwiseOp::kRelu;
    addr_a_ = address(w, E::kA), addr_b_ = address(w, E::kB), addr_d_ = address(w, E::kD);
    a_ = read_image(image, addr_a_, std::uint64_t{count_} * 4, "A");
    if (binary_) b_ = read_image(image, addr_b_, std::uint64_t{count_} * 4, "B");
    check_writable(image, addr_d_, std::uint64_t{count_} * 4, "D");
    d_.assign(std::size_t{count_} * 4, 0);
    smem_bytes_ = (kStreamPrefetch + 1) * (binary_ ? 2 : 1) * kStreamStepElements * 4;
    lanes_ = std::max(1u, hw.ppu_fma_lanes_per_sm);
    peak_macs_ = path_peak_macs_ = static_cast<double>(sms(hw)) * lanes_;
    compulsory_bytes_ = a_.size() + b_.size() + d_.size();
    record.kind = "elementwise";
    record.type = "fp32";
    record.m = count_, record.n = 1, record.k = 1;
    record.tile_m = kStreamStepElements * kStreamCtaSteps, record.tile_n = 1, record.tile_k = 1;
    record.ctas = ctas();
    record.path =
        fmt::format("fma (streaming {})", op_ == models::ops::ElementwiseOp::kAdd   ? "add"
                                          : op_ == models::ops::ElementwiseOp::kMul ? "mul"
                                                                                    : "relu");
  }
  [[nodiscard]] unsigned ctas() const override {
    return static_cast<unsigned>(ceil_div(count_, kStreamStepElements * kStreamCtaSteps));
  }
  [[nodiscard]] unsigned steps(unsigned cta) const override {
    const std::uint64_t first = std::uint64_t{cta} * kStreamStepElements * kStreamCtaSteps;
    return static_cast<unsigned>(
        ceil_div(std::min<std::uint64_t>(count_ - first, kStreamStepElements * kStreamCtaSteps),
                 kStreamStepElements));
  }
  [[nodiscard]] bool tensor() const override { return false; }
  [[nodiscard]] unsigned prefetch_depth() const override { return kStreamPrefetch; }
  void loads(unsigned cta, unsigned step, std::vector<Range>& out) const override {
    const auto [first, n] = span(cta, step);
    out.push_back({addr_a_ + first * 4, n * 4});
    if (binary_) out.push_back({addr_b_ + first * 4, n * 4});
  }
  [[nodiscard]] std::uint64_t math_cycles(unsigned cta, unsigned step) const override {
    return ceil_div(span(cta, step).second, lanes_);
  }
  void begin(unsigned /*cta*/, CtaState& /*s*/) override {}
  void step(unsigned cta, unsigned step, CtaState& /*s*/) override {
    const auto [first, n] = span(cta, step);
    for (std::uint64_t i = first; i < first + n; ++i) {
      float a = 0.0f, b = 0.0f;
      std::memcpy(&a, a_.data() + i * 4, 4);
      if (binary_) std::memcpy(&b, b_.data() + i * 4, 4);
      const float d = models::ops::elementwise(op_, a, b);
      std::memcpy(d_.data() + i * 4, &d, 4);
    }
  }
  void end(unsigned cta, CtaState& /*s*/, std::vector<Range>& stores) override {
    const std::uint64_t first = std::uint64_t{cta} * kStreamStepElements * kStreamCtaSteps;
    const std::uint64_t n =
        std::min<std::uint64_t>(count_ - first, kStreamStepElements * kStreamCtaSteps);
    stores.push_back({addr_d_ + first * 4, n * 4});
  }
  void finish(MemoryImage& image) override { image.write(addr_d_, d_.data(), d_.size()); }

 private:
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> span(unsigned cta, unsigned step) const {
    const std::uint64_t first = std::uint64_t{cta} * kStreamStepElements * kStreamCtaSteps +
                                std::uint64_t{step} * kStreamStepElements;
    return {first, std::min<std::uint64_t>(count_ - first, kStreamStepElements)};
  }
  models::ops::ElementwiseOp op_ = models::ops::ElementwiseOp::kAdd;
  bool binary_ = true;
  unsigned count_ = 0, lanes_ = 1;
  std::uint64_t addr_a_ = 0, addr_b_ = 0, addr_d_ = 0;
  std::vector<std::uint8_t> a_, b_, d_;
};

constexpr unsigned kReduceRows = 8;    // rows per CTA
constexpr unsigned kReduceCols = 256;  // columns per step (1 KiB per row)

class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(const std::uint32_t* w, const HwConfig& hw, const MemoryImage& image) {
    namespace R = ppu_format::reduce;
    rows_ = w[R::kRows], cols_ = w[R::kCols];
    if (rows_ == 0 || cols_ == 0 || std::uint64_t{rows_} * cols_ > kMaxElements) {
      bad_kernel("reduce shape empty or > 2^28 elements");
    }
    addr_a_ = address(w, R::kA), addr_d_ = address(w, R::kD);
    a_ = read_image(image, addr_a_, std::uint64_t{rows_} * cols_ * 4, "A");
    check_writable(image, addr_d_, std::uint64_t{rows_} * 4, "D");
    d_.assign(std::size_t{rows_} * 4, 0);
    smem_bytes_ = (kStreamPrefetch + 1) * kReduceRows * kReduceCols * 4;
    lanes_ = std::max(1u, hw.ppu_fma_lanes_per_sm);
    peak_macs_ = path_peak_macs_ = static_cast<double>(sms(hw)) * lanes_;
    compulsory_bytes_ = a_.size() + d_.size();
    record.kind = "reduce";
    record.type = "fp32";
    record.m = rows_, record.n = 1, record.k = cols_;
    record.tile_m = kReduceRows, record.tile_n = 1, record.tile_k = kReduceCols;
    record.ctas = ctas();
    record.path = "fma (streaming row sums)";
  }
  [[nodiscard]] unsigned ctas() const override {
    return static_cast<unsigned>(ceil_div(rows_, kReduceRows));
  }
  [[nodiscard]] unsigned steps(unsigned /*cta*/) const override {
    return static_cast<unsigned>(ceil_div(cols_, kReduceCols));
  }
  [[nodiscard]] bool tensor() const override { return false; }
  [[nodiscard]] unsigned prefetch_depth() const override { return kStreamPrefetch; }
  void loads(unsigned cta, unsigned step, std::vector<Range>& out) const override {
    const unsigned r0 = cta * kReduceRows, r1 = std::min(rows_, r0 + kReduceRows);
    const unsigned c0 = step * kReduceCols, c1 = std::min(cols_, c0 + kReduceCols);
    for (unsigned r = r0; r < r1; ++r) {
      out.push_back({addr_a_ + (std::uint64_t{r} * cols_ + c0) * 4, std::uint64_t{c1 - c0} * 4});
    }
  }
  [[nodiscard]] std::uint64_t math_cycles(unsigned cta, unsigned step) const override {
    const unsigned r0 = cta * kReduceRows, r1 = std::min(rows_, r0 + kReduceRows);
    const unsigned c0 = step * kReduceCols, c1 = std::min(cols_, c0 + kReduceCols);
    return ceil_div(std::uint64_t{r1 - r0} * (c1 - c0), lanes_);
  }
  void begin(unsigned /*cta*/, CtaState& s) override { s.vals.assign(kReduceRows, 0.0f); }
  void step(unsigned cta, unsigned step, CtaState& s) override {
    const unsigned r0 = cta * kReduceRows, r1 = std::min(rows_, r0 + kReduceRows);
    const unsigned c0 = step * kReduceCols, c1 = std::min(cols_, c0 + kReduceCols);
    for (unsigned r = r0; r < r1; ++r) {
      float acc = s.vals[r - r0];
      for (unsigned c = c0; c < c1; ++c) {
        float a = 0.0f;
        std::memcpy(&a, a_.data() + (std::size_t{r} * cols_ + c) * 4, 4);
        acc = acc + a;  // models::ops::reduce_row_sum's order: columns ascending from +0
      }
      s.vals[r - r0] = acc;
    }
  }
  void end(unsigned cta, CtaState& s, std::vector<Range>& stores) override {
    const unsigned r0 = cta * kReduceRows, r1 = std::min(rows_, r0 + kReduceRows);
    std::memcpy(d_.data() + std::size_t{r0} * 4, s.vals.data(), std::size_t{r1 - r0} * 4);
    stores.push_back({addr_d_ + std::uint64_t{r0} * 4, std::uint64_t{r1 - r0} * 4});
  }
  void finish(MemoryImage& image) override { image.write(addr_d_, d_.data(), d_.size()); }

 private:
  unsigned rows_ = 0, cols_ = 0, lanes_ = 1;
  std::uint64_t addr_a_ = 0, addr_d_ = 0;
  std::vector<std::uint8_t> a_, d_;
};

}  // namespace

double tensor_peak_macs_per_cycle(const HwConfig& hw, GemmType type) {
  const auto& info = gemm_type_info(type);
  const double sm_count = static_cast<double>(sms(hw));
  if (type == GemmType::kFp32) return sm_count * std::max(1u, hw.ppu_fma_lanes_per_sm);
  const unsigned step = std::max(1u, info.input_bits == 16  ? hw.ppu_tc_fp16_step_cycles
                                     : info.input_bits == 8 ? hw.ppu_tc_int8_step_cycles
                                                            : hw.ppu_tc_int4_step_cycles);
  return sm_count * hw.ppu_tensor_cores_per_sm *
         static_cast<double>(info.mma_m * info.mma_n * info.mma_k) / step;
}

DecodeResult decode_kernel(const std::uint32_t* words, const HwConfig& hw,
                           const MemoryImage& image) {
  DecodeResult r;
  try {
    using K = ppu_format::KernelKind;
    switch (static_cast<K>(words[0])) {
      case K::kGemm:
        r.kernel = std::make_unique<GemmKernel>(words, hw, image, false);
        break;
      case K::kConv:
        r.kernel = std::make_unique<GemmKernel>(words, hw, image, true);
        break;
      case K::kElementwise:
        r.kernel = std::make_unique<ElementwiseKernel>(words, hw, image);
        break;
      case K::kReduce:
        r.kernel = std::make_unique<ReduceKernel>(words, hw, image);
        break;
      default:
        r.error = ErrorCode::kBadKernel;
        r.why = fmt::format("kernel kind {} (1 gemm, 2 conv, 3 elementwise, 4 reduce)", words[0]);
        return r;
    }
  } catch (const Failure& f) {
    r.kernel.reset();
    r.error = f.code_;
    r.why = f.why_;
  } catch (const std::exception& e) {  // a model refusing the operands (should not happen)
    r.kernel.reset();
    r.error = ErrorCode::kBadKernel;
    r.why = e.what();
  }
  return r;
}

}  // namespace octasim::ppu
