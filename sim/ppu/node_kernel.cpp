// The node kernel (kNode): one ONNX node of the operator registry from a kernel image
// (models/ops/ppu_node.hpp); the values are models::ops::run_node's, so the simulator and the
// golden agree bit for bit.
//
// Values. At LAUNCH (stream order: everything before it has finished) the kernel reads and
// decodes the image and runs run_node against the memory image through an overlay that keeps its
// writes: a node the registry's kernel refuses is kBadKernel there, never an exception in the
// simulation; finish() writes the overlay's bytes (the output atoms, no stride gaps) to memory.
//
// Cost model (models::ops::node_cost, like the other streaming kernels: bytes through the SM's
// port, math on a pipe): a grid of CTAs over the output elements, kCtaElements each, halved (down
// to kMinCtaElements) while a CTA's MACs and FMA ops exceed kCtaOps (a MatMul's outputs spread
// over the SMs as tiles would). Every input
// and output is a stream of bytes (a surface's line runs of W atoms, strides skipped; a dense
// array's elements); CTA i owns the same fraction of every stream as of the output elements and
// loads its share of each input in steps of about kStepBytes (kPrefetch steps in flight), then
// stores its share of each output. A step's math is its share of the CTA's
// output elements x ops_per_element on the FMA lanes (ceil(ops / lanes) cycles) and, for a node
// with MACs (MatMul, Gemm, Conv), its share of the MACs on the tensor cores at the FP16 rate, or
// the INT8 rate for an INT8 matrix product (NodeCost::int8_macs: --precision mixed)
// (tensor_peak_macs_per_cycle / SMs per cycle), the two one after the other on the tensor pipe.
// Simplifications: every byte is loaded once (a broadcast operand, a matrix product's reused
// operand or a convolution's overlapping windows are not re-read, as a cache would mostly
// serve them); a CTA's share of an input is a byte fraction, not the bytes its outputs depend on
// (a Transpose or a reduction reads other addresses than the fraction); a channel-mapped output's
// read-modify-write of its atoms is not loaded; no MMA tiling or padding is modelled.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <utility>

#include <fmt/format.h>

#include "models/graph/op_registry.hpp"
#include "models/ops/ppu_node.hpp"
#include "sim/ppu/kernel_decode.hpp"

namespace octasim::ppu::detail {
// A namespace of its own: its constants share names with softmax_kernel.cpp's, and a unity
// build compiles both in one translation unit.
namespace node_kernel {
namespace {

namespace M = models::ops;

constexpr std::uint64_t kCtaElements = 4096;  // output elements per CTA (at most)
constexpr std::uint64_t kMinCtaElements = 64;
constexpr std::uint64_t kCtaOps = 65536;    // a CTA's MACs + FMA ops: fewer elements when heavier
constexpr std::uint64_t kStepBytes = 4096;  // input bytes per step (one step buffer)
constexpr unsigned kPrefetch = 3;           // steps of loads in flight ahead

// A Memory reading the image underneath and keeping its own writes (applied in order).
class Overlay final : public M::Memory {
 public:
  explicit Overlay(const MemoryImage& base) : base_(base) {}
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override {
    base_.read(addr, dst, size);
    for (const auto& [a, bytes] : writes_) {
      const std::uint64_t lo = std::max(a, addr), hi = std::min(a + bytes.size(), addr + size);
      if (lo < hi) std::memcpy(dst + (lo - addr), bytes.data() + (lo - a), hi - lo);
    }
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override {
    base_.check_range(addr, size);
    writes_.emplace_back(addr, std::vector<std::uint8_t>(src, src + size));
  }
  void apply(MemoryImage& image) const {
    for (const auto& [a, bytes] : writes_) image.write(a, bytes.data(), bytes.size());
  }

 private:
  const MemoryImage& base_;
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> writes_;
};

// A tensor place's bytes as runs of `run` bytes: run l at address + (l / H) * surface_stride +
// (l % H) * line_stride (a dense array: one run).
struct Stream {
  std::uint64_t address = 0, run = 0, runs = 1, height = 1, line_stride = 0, surface_stride = 0;
  [[nodiscard]] std::uint64_t bytes() const { return run * runs; }
};

Stream stream_of(const M::TensorPlace& p) {
  Stream s;
  s.address = p.address;
  if (!p.surface()) {
    s.run = M::place_bytes(p);
    return s;
  }
  const std::uint64_t per_atom =
      p.storage == M::Storage::kSurfaceInt8 ? p.atom_bytes : p.atom_bytes / 2;
  s.run = std::uint64_t{p.width} * p.atom_bytes;
  s.height = p.height;
  s.runs = (p.channels + per_atom - 1) / per_atom * p.height;
  s.line_stride = p.line_stride;
  s.surface_stride = p.surface_stride;
  return s;
}

// Appends the addresses of stream bytes [lo, hi) to `out` (a range per run touched).
void append(const Stream& s, std::uint64_t lo, std::uint64_t hi, std::vector<Range>& out) {
  while (lo < hi) {
    const std::uint64_t l = lo / s.run, in = lo % s.run;
    const std::uint64_t n = std::min(hi - lo, s.run - in);
    const std::uint64_t addr =
        s.address + l / s.height * s.surface_stride + l % s.height * s.line_stride + in;
    if (!out.empty() && out.back().addr + out.back().bytes == addr) {
      out.back().bytes += n;
    } else {
      out.push_back({addr, n});
    }
    lo += n;
  }
}

__extension__ using Wide = unsigned __int128;

// v * num / den (num <= den) without overflowing the product.
std::uint64_t share(std::uint64_t v, std::uint64_t num, std::uint64_t den) {
  return static_cast<std::uint64_t>(static_cast<Wide>(v) * num / den);
}

class NodeKernel final : public Kernel {
 public:
  NodeKernel(const std::uint32_t* w, const HwConfig& hw, const MemoryImage& image)
      : overlay_(image) {
    namespace N = ppu_format::node;
    const std::uint32_t size = w[N::kImageBytes];
    if (size == 0 || size > N::kMaxImageBytes) {
      bad_kernel(fmt::format("node image of {} bytes (1 .. {})", size, N::kMaxImageBytes));
    }
    const std::vector<std::uint8_t> raw =
        read_image(image, address(w, N::kImage), size, "node image");
    try {
      node_ = M::decode_node(raw.data(), raw.size());
    } catch (const M::NodeImageError& e) {
      bad_kernel(e.what());
    }
    if (models::graph::find_op(node_.op_type) == nullptr) {
      bad_kernel(fmt::format("node operator '{}' is not in the registry", node_.op_type));
    }
    for (std::size_t k = 0; k < node_.inputs.size(); ++k) {
      const M::TensorPlace& p = node_.inputs[k];
      if (!p.present) continue;
      check_writable(image, p.address, M::place_bytes(p), "node input");
      inputs_.push_back(stream_of(p));
    }
    for (const M::TensorPlace& p : node_.outputs) {
      check_writable(image, p.address, M::place_bytes(p), "node output");
      outputs_.push_back(stream_of(p));
    }
    try {
      M::run_node(node_, overlay_);
    } catch (const std::exception& e) {
      bad_kernel(fmt::format("node {}: {}", node_.op_type, e.what()));
    }
    cost_ = M::node_cost(node_);
    elements_ = std::max<std::uint64_t>(1, cost_.output_elements);
    const std::uint64_t per_element = ceil_div(cost_.macs, elements_) + cost_.ops_per_element;
    while (cta_elements_ > kMinCtaElements && cta_elements_ * per_element > kCtaOps) {
      cta_elements_ /= 2;
    }
    lanes_ = std::max(1u, hw.ppu.fma_lanes_per_sm);
    const double fma_peak = static_cast<double>(sms(hw)) * lanes_;
    tensor_ = cost_.macs > 0;
    // An INT8 matrix product (--precision mixed) at the tensor cores' INT8 rate.
    const double tc_peak = tensor_peak_macs_per_cycle(
        hw, cost_.int8_macs ? models::ops::GemmType::kInt8Int32 : models::ops::GemmType::kFp16Fp32);
    tc_per_sm_ = std::max(1.0, tc_peak / std::max(1u, sms(hw)));
    peak_macs_ = path_peak_macs_ = tensor_ ? tc_peak : fma_peak;
    smem_bytes_ = (kPrefetch + 1) * kStepBytes;
    compulsory_bytes_ = cost_.bytes_read + cost_.bytes_written;
    bool int8 = cost_.int8_macs, int16 = false;
    for (const auto* places : {&node_.inputs, &node_.outputs}) {
      for (const M::TensorPlace& p : *places) {
        int8 = int8 || (p.present && p.storage == M::Storage::kSurfaceInt8);
        int16 = int16 || (p.present && p.storage == M::Storage::kSurfaceInt16);
      }
    }
    record.kind = "node";
    record.type = int8 ? "int8" : int16 ? "int16" : "fp16";
    record.m = static_cast<unsigned>(elements_), record.n = 1;
    record.k = static_cast<unsigned>(std::min<std::uint64_t>(cost_.ops_per_element, ~0u));
    record.tile_m = static_cast<unsigned>(cta_elements_), record.tile_n = 1;
    record.tile_k = static_cast<unsigned>(kStepBytes);
    record.ctas = ctas();
    record.macs = cost_.macs;
    record.path = fmt::format("{} (node {}{})", tensor_ ? "tensor" : "fma", node_.op_type,
                              node_.name.empty() ? "" : " '" + node_.name + "'");
  }
  [[nodiscard]] unsigned ctas() const override {
    return static_cast<unsigned>(ceil_div(elements_, cta_elements_));
  }
  [[nodiscard]] unsigned steps(unsigned cta) const override {
    std::uint64_t bytes = 0;
    for (const Stream& s : inputs_) {
      const auto [lo, hi] = cta_share(s, cta);
      bytes += hi - lo;
    }
    return static_cast<unsigned>(std::max<std::uint64_t>(1, ceil_div(bytes, kStepBytes)));
  }
  [[nodiscard]] bool tensor() const override { return tensor_; }
  [[nodiscard]] unsigned prefetch_depth() const override { return kPrefetch; }
  void loads(unsigned cta, unsigned step, std::vector<Range>& out) const override {
    const unsigned n = steps(cta);
    for (const Stream& s : inputs_) {
      const auto [lo, hi] = cta_share(s, cta);
      append(s, lo + share(hi - lo, step, n), lo + share(hi - lo, step + 1, n), out);
    }
  }
  [[nodiscard]] std::uint64_t math_cycles(unsigned cta, unsigned step) const override {
    const auto [e0, e1] = cta_elements(cta);
    const unsigned n = steps(cta);
    const std::uint64_t ops = (e1 - e0) * cost_.ops_per_element;
    const std::uint64_t step_ops = share(ops, step + 1, n) - share(ops, step, n);
    std::uint64_t cycles = ceil_div(step_ops, lanes_);
    if (tensor_) {
      const auto mac_cycles = static_cast<double>(macs(cta, step)) / tc_per_sm_;
      cycles += static_cast<std::uint64_t>(std::ceil(mac_cycles));
    }
    return cycles;
  }
  [[nodiscard]] std::uint64_t macs(unsigned cta, unsigned step) const override {
    if (!tensor_) return 0;
    const auto [e0, e1] = cta_elements(cta);
    const unsigned n = steps(cta);
    // The CTA's MACs as a difference of prefix shares (the CTAs' sum is exactly cost_.macs).
    const std::uint64_t m0 = share(cost_.macs, e0, elements_),
                        m1 = share(cost_.macs, e1, elements_);
    return share(m1 - m0, step + 1, n) - share(m1 - m0, step, n);
  }
  void begin(unsigned /*cta*/, CtaState& /*s*/) override {}
  void step(unsigned /*cta*/, unsigned /*step*/, CtaState& /*s*/) override {}
  void end(unsigned cta, CtaState& /*s*/, std::vector<Range>& stores) override {
    for (const Stream& s : outputs_) {
      const auto [lo, hi] = cta_share(s, cta);
      append(s, lo, hi, stores);
    }
  }
  void finish(MemoryImage& image) override { overlay_.apply(image); }

 private:
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> cta_elements(unsigned cta) const {
    const std::uint64_t e0 = std::uint64_t{cta} * cta_elements_;
    return {e0, std::min(elements_, e0 + cta_elements_)};
  }
  // The CTA's bytes of a stream: the same fraction as of the output elements.
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> cta_share(const Stream& s,
                                                                  unsigned cta) const {
    const auto [e0, e1] = cta_elements(cta);
    return {share(s.bytes(), e0, elements_), share(s.bytes(), e1, elements_)};
  }

  M::NodeImage node_;
  M::NodeCost cost_;
  Overlay overlay_;
  std::vector<Stream> inputs_, outputs_;
  std::uint64_t elements_ = 1, cta_elements_ = kCtaElements;
  unsigned lanes_ = 1;
  bool tensor_ = false;
  double tc_per_sm_ = 1.0;
};

}  // namespace
}  // namespace node_kernel

std::unique_ptr<Kernel> make_node_kernel(const std::uint32_t* w, const HwConfig& hw,
                                         const MemoryImage& image) {
  return std::make_unique<node_kernel::NodeKernel>(w, hw, image);
}

}  // namespace octasim::ppu::detail
