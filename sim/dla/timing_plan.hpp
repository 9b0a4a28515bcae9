// How an engine's operation streams through its hardware: the sequence of steps (one input
// line of one surface each) with the bytes its RDMA reads, the cycles its datapath needs at the
// configured throughput, and the bytes its WDMA writes. The cycle-level engine replays a plan
// against the memory system; the plan itself holds no timing beyond the datapath's own.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/core/hw_config.hpp"
#include "sim/dla/engines.hpp"

namespace octasim::dla {

// On the fly (SDP -> PDP) a step's read bytes come from SDP's stream (PDP) and its write bytes
// go to PDP (SDP) rather than through memory.
struct Step {
  std::uint32_t read_bytes = 0;
  std::uint32_t compute_cycles = 0;
  std::uint32_t write_bytes = 0;
  bool new_pass = false;  // the pipeline drains before this step (PDP split widths)
};

struct TimingPlan {
  std::vector<Step> steps;
  std::uint32_t pipeline_latency = 0;  // datapath depth: input step to output step
  std::uint64_t elements = 0;          // input elements the datapath processed
  // Read DMAs streaming in step, each with its own latency buffer of dma_latency_buffer_atoms
  // (SDP: MRDMA plus a B/N/E RDMA per operand surface in memory); the engine's RDMA may hold
  // read_streams x dma_latency_buffer_atoms requested and not yet consumed.
  std::uint32_t read_streams = 1;
};

// The plans of SDP, PDP and CDP for an operation whose functional result is `op`: the cubes and
// bytes it moved, and its registers as the functional op decoded them (op.descriptor: an
// SdpDescriptor, PdpDescriptor or CdpDescriptor; the engine registry hands each StreamEngine its
// planner). Throw std::logic_error when op.descriptor is not the unit's.
[[nodiscard]] TimingPlan plan_sdp(const OpResult& op, const HwConfig& hw);
[[nodiscard]] TimingPlan plan_pdp(const OpResult& op, const HwConfig& hw);
[[nodiscard]] TimingPlan plan_cdp(const OpResult& op, const HwConfig& hw);

}  // namespace octasim::dla
