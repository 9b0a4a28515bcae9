#include "sim/dla/timing_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/dla/cdp_functional.hpp"
#include "sim/dla/pdp_functional.hpp"
#include "sim/dla/sdp_functional.hpp"

namespace octasim::dla {
namespace {

// The operation's descriptor as the unit's decode made it.
template <typename Descriptor>
const Descriptor& descriptor_of(const OpResult& op, const char* unit) {
  const auto* d = dynamic_cast<const Descriptor*>(op.descriptor.get());
  if (d == nullptr) {
    throw std::logic_error(std::string("the ") + unit + " timing plan needs the operation's " +
                           unit + " descriptor (OpResult::descriptor)");
  }
  return *d;
}

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

// Spreads `total` bytes over `n` steps in proportion to `weights` (exact integer split).
void distribute(std::vector<Step>& steps, std::uint64_t total, std::uint32_t Step::*field,
                const std::vector<std::uint64_t>& weights) {
  std::uint64_t sum = 0;
  for (auto w : weights) sum += w;
  if (sum == 0) return;
  std::uint64_t given = 0, acc = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    acc += weights[i];
    const std::uint64_t upto = total * acc / sum;
    steps[i].*field = static_cast<std::uint32_t>(upto - given);
    given = upto;
  }
}

// SDP and CDP: one element per cycle per throughput lane, a step per line of each surface.
TimingPlan plan_line_stream(const OpResult& op, const HwConfig& hw, unsigned throughput,
                            unsigned bpe, unsigned pipeline) {
  TimingPlan p;
  p.pipeline_latency = pipeline;
  const unsigned elems_per_atom = hw.dla.memory_atomic_size / bpe;
  const std::uint32_t surfaces =
      std::max<std::uint32_t>(1, ceil_div(op.in.channels, elems_per_atom));
  const std::uint32_t cycles_per_atom = ceil_div(elems_per_atom, throughput);
  const std::uint32_t width = std::max<std::uint32_t>(1, op.in.width);
  const std::uint32_t lines = std::max<std::uint32_t>(1, op.in.height) * surfaces;
  // A long line streams through in pieces no larger than half the RDMA's latency buffer.
  const std::uint32_t piece = std::max(1u, std::min(width, hw.dla.dma_latency_buffer_atoms / 2));
  std::vector<std::uint64_t> weights;
  for (std::uint32_t line = 0; line < lines; ++line) {
    for (std::uint32_t x = 0; x < width; x += piece) {
      const std::uint32_t n = std::min(piece, width - x);
      p.steps.push_back(Step{0, n * cycles_per_atom, 0, false});
      weights.push_back(n);
    }
  }
  distribute(p.steps, op.bytes_read, &Step::read_bytes, weights);
  // SDP sending its output to PDP on the fly hands those bytes over instead of writing them.
  distribute(p.steps, op.bytes_written + op.bytes_on_the_fly, &Step::write_bytes, weights);
  p.elements = std::uint64_t{width} * lines * elems_per_atom;
  return p;
}

}  // namespace

// PDP: per input line of each surface the datapath both consumes the input atoms and produces
// the width-pooled atoms, one atom per cycles_per_atom each way; split widths run as separate
// passes (the pipeline drains and refills between them).
TimingPlan plan_pdp(const OpResult& op, const HwConfig& hw) {
  const PdpDescriptor& pdp = descriptor_of<PdpDescriptor>(op, "PDP");
  TimingPlan p;
  p.pipeline_latency = hw.dla.pdp_pipeline_latency;
  const unsigned bpe = pdp.input_bytes_per_element();
  const unsigned elems_per_atom = hw.dla.memory_atomic_size / bpe;
  const std::uint32_t cycles_per_atom = ceil_div(elems_per_atom, hw.dla.pdp_throughput);
  const std::uint32_t surfaces =
      std::max<std::uint32_t>(1, ceil_div(op.in.channels, elems_per_atom));
  const std::uint32_t splits = pdp.splits();
  const std::uint32_t in_w = std::max<std::uint32_t>(1, op.in.width);
  const std::uint32_t out_w = std::max<std::uint32_t>(1, op.out.width);
  const std::uint32_t height = std::max<std::uint32_t>(1, op.in.height);
  std::vector<std::uint64_t> read_w, write_w;
  for (std::uint32_t s = 0; s < splits; ++s) {
    const std::uint32_t split_in = ceil_div(in_w, splits);
    const std::uint32_t split_out = ceil_div(out_w, splits);
    for (std::uint32_t line = 0; line < height * surfaces; ++line) {
      p.steps.push_back(
          Step{0, std::max(split_in, split_out) * cycles_per_atom, 0, s > 0 && line == 0});
      read_w.push_back(split_in);
      write_w.push_back(split_out);
    }
  }
  // A flying PDP takes its input from SDP's stream instead of reading it.
  distribute(p.steps, op.bytes_read + op.bytes_on_the_fly, &Step::read_bytes, read_w);
  distribute(p.steps, op.bytes_written, &Step::write_bytes, write_w);
  p.elements = std::uint64_t{in_w} * height * surfaces * elems_per_atom;
  return p;
}

TimingPlan plan_cdp(const OpResult& op, const HwConfig& hw) {
  const CdpDescriptor& cdp = descriptor_of<CdpDescriptor>(op, "CDP");
  return plan_line_stream(op, hw, hw.dla.cdp_throughput, cdp.input_bytes_per_element(),
                          hw.dla.cdp_pipeline_latency);
}

TimingPlan plan_sdp(const OpResult& op, const HwConfig& hw) {
  const SdpDescriptor& sdp = descriptor_of<SdpDescriptor>(op, "SDP");
  // The datapath processes elements at PROC_PRECISION (INT8 1 byte, INT16/FP16 2).
  const unsigned bpe = sdp.config.proc_precision == models::ops::SdpPrecision::kInt8 ? 1 : 2;
  return plan_line_stream(op, hw, hw.dla.sdp_bs_throughput, bpe, hw.dla.sdp_pipeline_latency);
}

}  // namespace octasim::dla
