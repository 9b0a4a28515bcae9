// The streaming FP32 kernels on the FMA lanes: element-wise (add, mul, relu) and row
// reduction. Each CTA streams its span in steps with kStreamPrefetch steps of loads in flight.
#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "models/ops/elementwise.hpp"
#include "sim/ppu/kernel_decode.hpp"

namespace octasim::ppu::detail {
namespace {

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
    lanes_ = std::max(1u, hw.ppu.fma_lanes_per_sm);
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
    lanes_ = std::max(1u, hw.ppu.fma_lanes_per_sm);
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

std::unique_ptr<Kernel> make_elementwise_kernel(const std::uint32_t* w, const HwConfig& hw,
                                                const MemoryImage& image) {
  return std::make_unique<ElementwiseKernel>(w, hw, image);
}

std::unique_ptr<Kernel> make_reduce_kernel(const std::uint32_t* w, const HwConfig& hw,
                                           const MemoryImage& image) {
  return std::make_unique<ReduceKernel>(w, hw, image);
}

}  // namespace octasim::ppu::detail
