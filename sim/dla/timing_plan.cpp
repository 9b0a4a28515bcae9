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
                            unsigned bpe, unsigned pipeline, std::uint32_t streams) {
  TimingPlan p;
  p.pipeline_latency = pipeline;
  const unsigned elems_per_atom = hw.dla.memory_atomic_size / bpe;
  const std::uint32_t surfaces =
      std::max<std::uint32_t>(1, ceil_div(op.in.channels, elems_per_atom));
  const std::uint32_t cycles_per_atom = ceil_div(elems_per_atom, throughput);
  const std::uint32_t width = std::max<std::uint32_t>(1, op.in.width);
  const std::uint32_t lines = std::max<std::uint32_t>(1, op.in.height) * surfaces;
  // Each read stream (SDP: MRDMA and one of BRDMA/NRDMA/ERDMA per operand surface read from
  // memory) has its own latency buffer of dma_latency_buffer_atoms in NVDLA (separate latency
  // FIFOs per read DMA; unit description, SDP "Buffer Size Estimation": a read DMA buffer for
  // the M block and one for each of BS/BN/EW). Operand streams run in step with the input.
  p.read_streams = streams;
  // A long line streams through in equal pieces no larger than half a latency buffer, so at
  // least two pieces are in flight per stream: reading the next one overlaps processing this one
  // (a 64 + 16 split of an 80-atom line left too little to cover the 64-atom piece's latency;
  // RTL: sdpprobe_160's ReLU at width 80 runs at one atom per 8 cycles).
  const std::uint32_t half = std::max(1u, hw.dla.dma_latency_buffer_atoms / 2);
  const std::uint32_t pieces = ceil_div(width, half);
  std::vector<std::uint64_t> weights;
  for (std::uint32_t line = 0; line < lines; ++line) {
    std::uint32_t x = 0;
    for (std::uint32_t k = 1; k <= pieces; ++k) {
      const std::uint32_t upto = static_cast<std::uint32_t>(std::uint64_t{width} * k / pieces);
      const std::uint32_t n = upto - x;
      x = upto;
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
  // Half the RDMA's latency buffer (NVDLA's PDP read DMA buffer: 128 cycles of latency x 8 bytes
  // per cycle = 1 KB, unit description "Buffer Size Estimation"; dma_latency_buffer_atoms).
  const std::uint32_t half = std::max(1u, hw.dla.dma_latency_buffer_atoms / 2);
  std::vector<std::uint64_t> read_w, write_w;
  for (std::uint32_t s = 0; s < splits; ++s) {
    const std::uint32_t split_in = ceil_div(in_w, splits);
    const std::uint32_t split_out = ceil_div(out_w, splits);
    const std::uint32_t line_cycles = std::max(split_in, split_out) * cycles_per_atom;
    const std::uint32_t pieces = ceil_div(split_in, half);
    for (std::uint32_t line = 0; line < height * surfaces; ++line) {
      // The RDMA streams a line into its latency buffer atom by atom and the datapath consumes
      // them as they arrive: a line wider than half the buffer goes in equal pieces (as SDP's
      // and CDP's lines do), so reading the next piece overlaps pooling this one. A whole line as
      // one step larger than the buffer would wait for the buffer to empty and pay the read latency
      // and transfer per line, which NVDLA's PDP does not (RTL: poolwide and sdpprobe_160
      // pooling, 72- and 160-wide, run at one input atom per 8 cycles).
      std::uint32_t given = 0, x = 0;
      for (std::uint32_t k = 1; k <= pieces; ++k) {
        const auto end = static_cast<std::uint32_t>(std::uint64_t{split_in} * k / pieces);
        const std::uint32_t n = end - x;
        x = end;
        const auto upto = static_cast<std::uint32_t>(std::uint64_t{line_cycles} * end / split_in);
        p.steps.push_back(Step{0, upto - given, 0, s > 0 && line == 0 && k == 1});
        given = upto;
        read_w.push_back(n);
        // The line's width-pooled output atoms leave in proportion to the input consumed.
        write_w.push_back(std::uint64_t{split_out} * n);
      }
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
  TimingPlan p = plan_line_stream(op, hw, hw.dla.cdp_throughput, cdp.input_bytes_per_element(),
                                  hw.dla.cdp_pipeline_latency, 1);
  // NVDLA's CDP walks the cube in width blocks: its buffer-in (NV_NVDLA_CDP_DP_bufferin) holds
  // the channel window of at most kCdpBlockWidth positions (an 8-entry shift buffer, a 4-bit
  // position in the block) and takes a block through every surface before the next block, so
  // each change of block passes its first_c/second_c states, which drain the previous block's
  // last surface. kCdpBlockSwitchCycles is that cost, fitted to NVDLA's nv_small RTL cycles
  // (cdp_33x17x34_lrn5: 84 block changes, 358 cycles over the line stream; fashion_cnn's LRN,
  // 14x14x16: 27 changes, 104 cycles; both about 4 per change) — not a figure from NVDLA's
  // documentation. The cost is spread over the steps (octasim's steps are lines, not blocks).
  constexpr std::uint32_t kCdpBlockWidth = 8;
  constexpr std::uint32_t kCdpBlockSwitchCycles = 4;
  const std::uint64_t blocks = std::uint64_t{std::max<std::uint32_t>(1, op.in.height)} *
                               ceil_div(std::max<std::uint32_t>(1, op.in.width), kCdpBlockWidth);
  const std::uint64_t extra = (blocks - 1) * kCdpBlockSwitchCycles;
  std::uint64_t given = 0;
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const std::uint64_t upto = extra * (i + 1) / p.steps.size();
    p.steps[i].compute_cycles += static_cast<std::uint32_t>(upto - given);
    given = upto;
  }
  return p;
}

TimingPlan plan_sdp(const OpResult& op, const HwConfig& hw) {
  const SdpDescriptor& sdp = descriptor_of<SdpDescriptor>(op, "SDP");
  // The datapath processes elements at PROC_PRECISION (INT8 1 byte, INT16/FP16 2).
  const unsigned bpe = sdp.config.proc_precision == models::ops::SdpPrecision::kInt8 ? 1 : 2;
  // MRDMA (when the input comes from memory) plus one read DMA per operand surface.
  const auto streams = static_cast<std::uint32_t>(1 + op.dma.operands.size());
  return plan_line_stream(op, hw, hw.dla.sdp_bs_throughput, bpe, hw.dla.sdp_pipeline_latency,
                          streams);
}

}  // namespace octasim::dla
