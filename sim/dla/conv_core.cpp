#include "sim/dla/conv_core.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/ops/conv_compress.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/dla/conv_winograd.hpp"

// Sources of the mechanisms (NVDLA's RTL, nvdla/hw vmod/nvdla): the CSC sequence generator
// (NV_NVDLA_CSC_sg.v: loop order, stripe lengths, package issue cost -- a data package holds the
// CSC for at least the minimum stripe, atomic-K cycles, even with a single kernel, while the next
// package's weights load one kernel per cycle -- credit check on a stripe's last package, start
// gates "all input slices" and "whole kernel group"), CDMA_wt (weights reported in kernel
// groups), NV_NVDLA_CACC_delivery_buffer.v (one atom read when its lanes are out, one lane per
// cycle at SDP throughput, one credit per atom), CDMA_dma_mux (data and weights are separate DMA
// clients). NVDLA's unit description ("Stripe Operation", "Multi-Batch Mode") gives the same
// floor as the time to load the next atomic operation's weights, 16 cycles on its 16-cell array
// (nv_full). The DRAM bandwidth and conv_pipeline_latency come from NVDLA's RTL runs of the dc
// traces (README, "Timing fidelity").

namespace octasim::dla {

// The stage interrupts ConvCore raises early are the CONV entry's CDMA_DAT, CDMA_WT and CACC.
static_assert(kEngines[0].name == "CONV" && kEngines[0].interrupts[0].status_bit0 == 16 &&
              kEngines[0].interrupts[1].status_bit0 == 18 &&
              kEngines[0].interrupts[2].status_bit0 == 20);
namespace {
constexpr std::uint32_t kRequestAtoms = 16;  // memory atoms per DMA read transaction we issue

// The bytes and kernels of each kernel group CDMA fetches for direct convolution (uncompressed):
// the last group carries the 128-byte alignment tail.
void direct_weight_groups(const ConvLayer& l, const HwConfig& hw, std::uint64_t per_kernel,
                          std::vector<std::uint64_t>& bytes, std::vector<std::uint32_t>& kernels) {
  const models::ops::ConvWeightLayout layout{hw.dla.mac_atomic_c, hw.dla.mac_atomic_k, l.precision};
  const std::uint32_t group = layout.group_kernels();
  bytes.clear();
  kernels.clear();
  for (std::uint32_t k = 0; k < l.kernels; k += group) {
    kernels.push_back(std::min(group, l.kernels - k));
    bytes.push_back(kernels.back() * per_kernel);
  }
  if (!l.weight_compressed && !bytes.empty())
    bytes.back() += l.weight_bytes - per_kernel * l.kernels;
}

}  // namespace

ConvCore::ConvCore(const sc_core::sc_module_name& name, const HwConfig& hw,
                   const sc_core::sc_time& clock_period)
    : sc_core::sc_module(name),
      Clocked(clock_period),
      hw_(hw),
      stats_(this->name()),
      data_dma_(
          dma_socket, clock_period,
          {hw.dla.memory_atomic_size, hw.dla.memory_atomic_size * hw.dla.primary_memif_max_burst,
           hw.dla.dma_latency_buffer_atoms}),
      weight_dma_(dma_socket, clock_period, data_dma_.params()),
      wdma_(dma_socket, clock_period, data_dma_.params()),
      sdp_rdma_(dma_socket, clock_period, data_dma_.params()) {
  using stats::Unit;
  auto& c = counters_;
  c.operations = stats_.add("operations", "convolution layers started", Unit::kCount);
  c.active_cycles = stats_.add("active_cycles",
                               "cycles from a layer's start to its last acknowledged write, summed "
                               "over layers",
                               Unit::kCycles);
  c.busy_cycles =
      stats_.add("busy_cycles", "cycles the CSC spent issuing packages to CMAC", Unit::kCycles);
  c.read_stall_cycles =
      stats_.add("read_stall_cycles",
                 "cycles the CSC waited for input data or a kernel group in CBUF", Unit::kCycles);
  c.write_stall_cycles = stats_.add(
      "write_stall_cycles", "cycles the CSC waited for CACC delivery credits", Unit::kCycles);
  c.bytes_read =
      stats_.add("bytes_read", "bytes CDMA fetched (input data and weights)", Unit::kBytes);
  c.bytes_written =
      stats_.add("bytes_written", "bytes SDP's WDMA wrote (flying mode)", Unit::kBytes);
  c.elements = stats_.add("macs", "multiply-accumulates of the layers", Unit::kOps);
  perf_.dat_busy =
      stats_.add("cdma_dat_busy_cycles", "cycles the CDMA data DMA spent issuing read requests",
                 Unit::kCycles);
  perf_.wt_busy =
      stats_.add("cdma_wt_busy_cycles", "cycles the CDMA weight DMA spent issuing read requests",
                 Unit::kCycles);
  perf_.dat_bytes = stats_.add("cdma_dat_bytes", "bytes the CDMA data DMA read", Unit::kBytes);
  perf_.wt_bytes = stats_.add("cdma_wt_bytes", "bytes the CDMA weight DMA read", Unit::kBytes);
  perf_.dat_stall = stats_.add("cdma_dat_read_stall",
                               "cycles a ready data read request was held back (latency buffer "
                               "full)",
                               Unit::kCycles, "NVDLA_CDMA.D_PERF_DAT_READ_STALL_0");
  perf_.wt_stall = stats_.add("cdma_wt_read_stall",
                              "cycles a ready weight read request was held back (latency buffer "
                              "or CBUF weight space full)",
                              Unit::kCycles, "NVDLA_CDMA.D_PERF_WT_READ_STALL_0");
  perf_.dat_latency =
      stats_.add("cdma_dat_read_latency", "request-to-data cycles of the data reads, summed",
                 Unit::kCycles, "NVDLA_CDMA.D_PERF_DAT_READ_LATENCY_0");
  perf_.wt_latency =
      stats_.add("cdma_wt_read_latency", "request-to-data cycles of the weight reads, summed",
                 Unit::kCycles, "NVDLA_CDMA.D_PERF_WT_READ_LATENCY_0");
  perf_.cacc_busy =
      stats_.add("cacc_busy_cycles", "cycles the CACC delivery buffer spent handing atoms to SDP",
                 Unit::kCycles);
  perf_.sdp_write_stall = stats_.add("sdp_wdma_write_stall",
                                     "cycles SDP's WDMA waited to write (0: its writes are posted)",
                                     Unit::kCycles, "NVDLA_SDP.D_PERF_WDMA_WRITE_STALL_0");
  perf_.sdp_bytes_to_pdp = stats_.add(
      "sdp_bytes_on_the_fly",
      "bytes SDP passed to PDP on the fly (OUTPUT_DST=PDP) instead of writing them", Unit::kBytes);
  const auto i = [](const stats::Counter& k) { return static_cast<int>(k.index()); };
  units_ = {
      {"CDMA_DAT", i(perf_.dat_busy), {i(perf_.dat_stall)}, i(perf_.dat_bytes), -1},
      {"CDMA_WT", i(perf_.wt_busy), {i(perf_.wt_stall)}, i(perf_.wt_bytes), -1},
      {"CSC", i(c.busy_cycles), {i(c.read_stall_cycles), i(c.write_stall_cycles)}, -1, -1},
      {"CACC", i(perf_.cacc_busy), {}, -1, i(c.bytes_written)},
  };
  SC_HAS_PROCESS(ConvCore);
  SC_THREAD(data_dma_thread);
  SC_THREAD(weight_dma_thread);
  SC_THREAD(csc_thread);
  SC_THREAD(delivery_thread);
  SC_THREAD(sdp_rdma_thread);
  SC_THREAD(sdp_wdma_thread);
}

void ConvCore::set_timeline(stats::Timeline* timeline) {
  timeline_ = timeline;
  if (timeline_ == nullptr) return;
  dat_track_ = timeline_->track(basename(), "CDMA data DMA");
  wt_track_ = timeline_->track(basename(), "CDMA weight DMA");
  csc_track_ = timeline_->track(basename(), "CSC");
  cacc_track_ = timeline_->track(basename(), "CACC delivery");
  credit_series_ = timeline_->series(basename(), "CACC credits");
}

void ConvCore::trace_signals(sc_core::sc_trace_file* file) {
  drive_signals_ = true;
  sc_core::sc_trace(file, credits_signal_, std::string(basename()) + ".cacc_credits");
}

void ConvCore::start(const Engine& /*engine*/, const OpResult& op, const RegRead& regs,
                     std::function<void()> on_done) {
  if (busy_) throw std::logic_error(std::string(name()) + " started while busy");
  const auto* decoded = dynamic_cast<const ConvDescriptor*>(op.descriptor.get());
  if (decoded == nullptr) throw std::logic_error("ConvCore: the operation has no ConvDescriptor");
  layer_ = decoded->layer;
  const ConvLayer& l = layer_;
  const unsigned bpe = models::ops::conv_element_bytes(l.precision);
  const unsigned atom = hw_.dla.memory_atomic_size;
  const unsigned epa = atom / bpe;
  const std::uint64_t surfaces = (l.input.channels + epa - 1) / epa;
  data_bytes_ = std::uint64_t{l.input.width} * l.input.height * surfaces * atom * l.batches;

  const models::ops::ConvWeightLayout layout{hw_.dla.mac_atomic_c, hw_.dla.mac_atomic_k,
                                             l.precision};
  const std::uint32_t group = layout.group_kernels();
  const WinogradSchedule wino = l.winograd ? winograd_schedule(l) : WinogradSchedule{};
  const std::uint64_t per_kernel =
      l.winograd ? wino.kernel_bytes
                 : std::uint64_t{l.kernel_width} * l.kernel_height * l.input.channels * bpe;
  // 128-byte alignment tail. Compressed weights: weight_dma_thread sizes the groups from the WGS.
  direct_weight_groups(l, hw_, per_kernel, group_bytes_, group_kernels_);
  weight_space_ = std::uint64_t{l.weight_banks} * hw_.dla.cbuf_bank_depth * hw_.dla.cbuf_bank_width;

  // CSC stripes: 2*lower output points while at least 4*lower remain; the last 2*lower or fewer
  // form the final stripe; otherwise a stripe of `lower`. The lower limit is the time the CSC
  // needs to load a kernel group's weights for the next atomic operation (unit description,
  // "Stripe Operation": "The lower limit 16 is due to internal bandwidth to fetch weights for next
  // stripe operation"; "Multi-Batch Mode": "the convolution pipeline needs 16 cycles to load
  // weight for next atomic operation"): the weight loader fills one MAC cell per cycle, and there
  // are atomic-K cells, or atomic-K/2 on arrays whose cells have 16-bit multipliers (INT16/FP16
  // configurations: "16 MAC cells ... cache weights from 16 int16/fp16 kernels or 32 int8
  // kernels"), where a cell holds two INT8 kernels. So nv_small (8 cells): 8/16; nv_full (16
  // cells): 16/32 at every precision, 16 cycles per full group.
  // Multi-batch: a stripe takes its points from every batch, interlaced, so the per-batch lengths
  // shrink (NVDLA's unit description, "Multi-Batch Mode": 16/32 points at batch 1, 8x2/16x2 at
  // 2-3, 4xN/8xN at 4-7, 2xN/4xN at 8-15, 1xN from 16 with 16 cells); a stripe is its points
  // times the batches in atomic operations and in output atoms.
  atomic_k_ = group;
  const bool wide_cells = hw_.dla.feature_int16 || hw_.dla.feature_fp16;
  cells_ = std::max<std::uint32_t>(1, wide_cells ? hw_.dla.mac_atomic_k / 2 : hw_.dla.mac_atomic_k);
  std::uint32_t pow2 = 1;
  while (pow2 * 2 <= l.batches) pow2 *= 2;
  const std::uint32_t lower = std::max<std::uint32_t>(1, cells_ / pow2);
  const std::uint32_t upper = l.batches >= 16 ? lower : 2 * lower;
  const std::uint32_t total = l.winograd ? wino.atomics : l.params.out_width * l.params.out_height;
  stripes_.clear();
  for (std::uint32_t done = 0; done < total;) {
    std::uint32_t len = lower;
    if (done + 2 * upper <= total) {
      len = upper;
    } else if (done + upper >= total) {
      len = total - done;
    }
    stripes_.push_back(len * l.batches);
    done += len;
  }
  // DATA_REUSE / WEIGHT_REUSE: the previous layer's input or weights are still in CBUF, so
  // CDMA fetches nothing (the functional model reads memory either way; software sets reuse
  // only when the data are the same).
  const std::uint32_t misc = regs(regs::CDMA::D_MISC_CFG::kAddr);
  if (regs::CDMA::D_MISC_CFG::DATA_REUSE.get(misc) != 0) data_bytes_ = 0;
  const bool weight_reuse = regs::CDMA::D_MISC_CFG::WEIGHT_REUSE.get(misc) != 0;
  if (weight_reuse) std::fill(group_bytes_.begin(), group_bytes_.end(), 0);
  if (weight_reuse) layer_.wgs_bytes = 0;
  weight_reuse_ = weight_reuse;
  packages_ = l.winograd
                  ? wino.packages
                  : l.kernel_width * l.kernel_height *
                        ((l.input.channels + hw_.dla.mac_atomic_c - 1) / hw_.dla.mac_atomic_c);
  outputs_per_atomic_ = l.winograd ? wino.outputs_per_atomic : 1;
  output_bytes_ = op.bytes_written + op.bytes_on_the_fly;
  link_ = op.to_pdp != nullptr ? next_link_ : nullptr;
  next_link_ = nullptr;
  credits_ = std::max(2 * cells_, upper * l.batches);  // CACC holds a stripe's output atoms
  if (drive_signals_) credits_signal_.write(credits_);
  data_walk_ = AddressGenerator(op.dma.input, l.input.base);
  output_walk_ = AddressGenerator(op.dma.output);
  data_dma_.reset();
  weight_dma_.reset();
  operands_.clear();
  for (const SurfaceRegion& r : op.dma.operands) {
    if (r.bytes() == 0) continue;
    OperandStream o;
    o.walk = AddressGenerator({r});
    o.total = r.bytes();
    operands_.push_back(std::move(o));
  }
  operands_consumed_out_ = 0;
  operands_wanted_out_ = 0;

  data_done_ = false;
  group_ready_.assign(group_bytes_.size(), sc_core::SC_ZERO_TIME);
  groups_fetched_ = 0;
  weight_resident_ = 0;
  to_deliver_.clear();
  to_wdma_.clear();
  stripes_total_ = stripes_.size() * group_bytes_.size();
  stripes_written_ = 0;
  stripes_delivered_ = 0;

  stats_.begin_layer();  // NVDLA clears the D_PERF counters when a layer starts
  on_done_ = std::move(on_done);
  weights_start_ = true;
  start_at_ = sc_core::sc_time_stamp() + cycles(hw_.dla.op_start_latency);
  busy_ = true;
  started_at_ = sc_core::sc_time_stamp();
  ++counters_.operations;
  counters_.elements += op.macs;
  // The layer's own bytes, its weights included where CDMA fetched them ahead (cdma_wt_bytes
  // counts what the weight client moved while each layer ran).
  counters_.bytes_read += data_bytes_ + (weight_reuse ? 0 : l.weight_bytes);
  for (const OperandStream& o : operands_) counters_.bytes_read += o.total;  // SDP_RDMA's
  counters_.bytes_written += op.bytes_written;
  start_ev_.notify(cycles(hw_.dla.op_start_latency));
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> ConvCore::perf_registers(
    const Engine& /*engine*/, const RegRead& regs) const {
  namespace CD = regs::CDMA;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  if (CD::D_PERF_ENABLE::DMA_EN.get(regs(CD::D_PERF_ENABLE::kAddr)) != 0) {
    out.emplace_back(CD::D_PERF_DAT_READ_STALL::kAddr,
                     saturate32(stats_.since_layer(perf_.dat_stall)));
    out.emplace_back(CD::D_PERF_WT_READ_STALL::kAddr,
                     saturate32(stats_.since_layer(perf_.wt_stall)));
    out.emplace_back(CD::D_PERF_DAT_READ_LATENCY::kAddr,
                     saturate32(stats_.since_layer(perf_.dat_latency)));
    out.emplace_back(CD::D_PERF_WT_READ_LATENCY::kAddr,
                     saturate32(stats_.since_layer(perf_.wt_latency)));
  }
  using SdpPerf = regs::SDP::D_PERF_ENABLE;
  if (SdpPerf::PERF_DMA_EN.get(regs(SdpPerf::kAddr)) != 0) {
    out.emplace_back(regs::SDP::D_PERF_WDMA_WRITE_STALL::kAddr,
                     saturate32(stats_.since_layer(perf_.sdp_write_stall)));
  }
  return out;
}

ConvCore::Read ConvCore::cdma_read(DmaClient& client, AddressGenerator* walk, std::uint64_t addr,
                                   std::uint32_t bytes, stats::Counter& stall,
                                   stats::Counter& latency, stats::Counter& busy,
                                   stats::Counter& bytes_read) {
  const std::uint64_t atoms = client.atoms(bytes);
  stall += client.reserve(atoms);
  const sc_core::sc_time issued = sc_core::sc_time_stamp();
  const sc_core::sc_time arrival = walk != nullptr
                                       ? client.transfer(tlm::TLM_READ_COMMAND, *walk, bytes)
                                       : client.transfer(tlm::TLM_READ_COMMAND, addr, bytes);
  client.release_at(atoms, arrival);  // the data land in CBUF
  (void)client.pace(bytes);           // one request per cycle
  latency += to_cycles(arrival - issued);
  busy += to_cycles(sc_core::sc_time_stamp() - issued);
  bytes_read += bytes;
  return {issued, arrival};
}

void ConvCore::data_dma_thread() {
  for (;;) {
    sc_core::wait(start_ev_);
    const unsigned atom = hw_.dla.memory_atomic_size;
    sc_core::sc_time last = sc_core::sc_time_stamp();
    for (std::uint64_t off = 0; off < data_bytes_;) {
      const auto bytes = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(kRequestAtoms * atom, data_bytes_ - off));
      const Read r = cdma_read(data_dma_, &data_walk_, 0, bytes, perf_.dat_stall, perf_.dat_latency,
                               perf_.dat_busy, perf_.dat_bytes);
      if (timeline_ != nullptr) {
        timeline_->slice(dat_track_, stats::Detail::kDma, to_cycles(r.issued), now(), "read",
                         bytes);
      }
      last = std::max(last, r.arrival);
      off += bytes;
    }
    wait_until(last);
    data_dma_.reset();
    data_done_ = true;
    data_ev_.notify(sc_core::SC_ZERO_TIME);
    stage_done(kCdmaDatInterrupt);  // the input is in CBUF
  }
}

void ConvCore::prefetch(const RegRead& next_regs) {
  ConvLayer next;
  try {
    next = decode_conv(hw_, next_regs);
  } catch (const std::exception&) {
    return;  // the layer reports its error when it starts
  }
  const std::uint32_t misc = next_regs(regs::CDMA::D_MISC_CFG::kAddr);
  if (next.weight_compressed || next.winograd || next.batches != 1 ||
      regs::CDMA::D_MISC_CFG::WEIGHT_REUSE.get(misc) != 0) {
    return;
  }
  // Only into banks the running layer leaves free (neither its data nor its weight banks).
  const unsigned used = layer_.data_banks + layer_.weight_banks;
  if (used >= hw_.dla.cbuf_bank_number) return;
  const unsigned bpe = models::ops::conv_element_bytes(next.precision);
  std::vector<std::uint32_t> kernels;
  Prefetch p;
  p.weight_base = next.weight_base;
  direct_weight_groups(
      next, hw_, std::uint64_t{next.kernel_width} * next.kernel_height * next.input.channels * bpe,
      p.group_bytes, kernels);
  p.budget = std::uint64_t{hw_.dla.cbuf_bank_number - used} * hw_.dla.cbuf_bank_depth *
             hw_.dla.cbuf_bank_width;
  p.requested = true;
  prefetch_ = std::move(p);
  prefetch_ev_.notify(sc_core::SC_ZERO_TIME);
}

void ConvCore::fetch_ahead() {
  prefetch_.requested = false;
  // A copy: a newer request may replace prefetch_ while a group is in flight.
  const Prefetch request = prefetch_;
  const unsigned atom = hw_.dla.memory_atomic_size;
  std::uint64_t addr = request.weight_base, used = 0;
  for (const std::uint64_t bytes_g : request.group_bytes) {
    if (weights_start_ || used + bytes_g > request.budget) break;
    sc_core::sc_time last = sc_core::sc_time_stamp();
    for (std::uint64_t off = 0; off < bytes_g;) {
      const auto bytes =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(kRequestAtoms * atom, bytes_g - off));
      const Read r = cdma_read(weight_dma_, nullptr, addr, bytes, perf_.wt_stall, perf_.wt_latency,
                               perf_.wt_busy, perf_.wt_bytes);
      if (timeline_ != nullptr) {
        timeline_->slice(wt_track_, stats::Detail::kDma, to_cycles(r.issued), now(),
                         "prefetch next layer", bytes);
      }
      last = std::max(last, r.arrival);
      addr += bytes;
      off += bytes;
    }
    used += bytes_g;
    if (prefetch_.weight_base != request.weight_base) break;  // superseded
    prefetch_.ready.push_back(last);
  }
}

void ConvCore::weight_dma_thread() {
  for (;;) {
    // Between layers CDMA's weight client fetches the next layer's weights when offered.
    while (!weights_start_) {
      if (prefetch_.requested) {
        fetch_ahead();
      } else {
        sc_core::wait(start_ev_ | prefetch_ev_);
      }
    }
    weights_start_ = false;
    wait_until(start_at_);
    // Kernel groups fetched ahead while the previous layer ran (all done by now: fetch_ahead
    // finishes the group it started): not fetched again.
    prefetched_ready_.assign(group_bytes_.size(), sc_core::SC_ZERO_TIME);
    // A request for this very layer is consumed (or dropped, when nothing was fetched yet): it
    // must not be fetched again after the layer's own weights.
    if (prefetch_.weight_base == layer_.weight_base && prefetch_.group_bytes == group_bytes_) {
      for (std::size_t g = 0; !weight_reuse_ && g < prefetch_.ready.size(); ++g) {
        prefetched_ready_[g] = prefetch_.ready[g];
        group_bytes_[g] = 0;
      }
      prefetch_ = Prefetch{};
    } else if (!prefetch_.requested) {
      prefetch_ = Prefetch{};  // fetched for another layer: gone from CBUF
    }
    const unsigned atom = hw_.dla.memory_atomic_size;
    std::uint64_t addr = layer_.weight_base;
    if (layer_.weight_compressed && layer_.wgs_bytes > 0) {
      // CDMA_WT reads the WGS first (it has priority over the weight and WMB streams); each
      // kernel group then fetches its WGS bytes of compressed data and the WMB bytes of its mask.
      (void)weight_dma_.transfer(tlm::TLM_READ_COMMAND, layer_.wgs_base, layer_.wgs_bytes);
      (void)weight_dma_.pace(layer_.wgs_bytes);
      perf_.wt_bytes += layer_.wgs_bytes;
      group_bytes_ = models::ops::compressed_group_fetch_bytes(
          models::ops::parse_wgs(weight_dma_.data(), group_bytes_.size()), group_kernels_,
          std::uint64_t{layer_.kernel_width} * layer_.kernel_height * layer_.input.channels,
          layer_.compressed_bytes, layer_.wmb_bytes);
    }
    for (std::size_t g = 0; g < group_bytes_.size(); ++g) {
      sc_core::sc_time last = sc_core::sc_time_stamp();
      for (std::uint64_t off = 0; off < group_bytes_[g];) {
        const auto bytes = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(kRequestAtoms * atom, group_bytes_[g] - off));
        // CBUF weight space: fetched groups stay until the CSC releases them.
        const sc_core::sc_time held = sc_core::sc_time_stamp();
        while (weight_resident_ > 0 && weight_resident_ + bytes > weight_space_) {
          sc_core::wait(release_ev_);
        }
        perf_.wt_stall += to_cycles(sc_core::sc_time_stamp() - held);
        weight_resident_ += bytes;
        const Read r = cdma_read(weight_dma_, nullptr, addr, bytes, perf_.wt_stall,
                                 perf_.wt_latency, perf_.wt_busy, perf_.wt_bytes);
        if (timeline_ != nullptr) {
          timeline_->slice(wt_track_, stats::Detail::kDma, to_cycles(r.issued), now(),
                           "read group " + std::to_string(g), bytes);
        }
        last = std::max(last, r.arrival);
        addr += bytes;
        off += bytes;
      }
      group_ready_[g] = std::max(last, prefetched_ready_[g]);
      groups_fetched_ = g + 1;
      group_ev_.notify(sc_core::SC_ZERO_TIME);
    }
    wait_until(group_ready_.back());
    stage_done(kCdmaWtInterrupt);  // the last weights are in CBUF
    weight_dma_.reset();
  }
}

void ConvCore::csc_thread() {
  for (;;) {
    sc_core::wait(start_ev_);
    const sc_core::sc_time wait_from = sc_core::sc_time_stamp();
    while (!data_done_) sc_core::wait(data_ev_);
    counters_.read_stall_cycles += to_cycles(sc_core::sc_time_stamp() - wait_from);
    const std::uint64_t groups = group_bytes_.size();
    for (std::size_t g = 0; g < groups; ++g) {
      const sc_core::sc_time blocked = sc_core::sc_time_stamp();
      while (groups_fetched_ <= g) sc_core::wait(group_ev_);
      wait_until(group_ready_[g]);
      counters_.read_stall_cycles += to_cycles(sc_core::sc_time_stamp() - blocked);
      for (std::size_t j = 0; j < stripes_.size(); ++j) {
        const std::uint32_t len = stripes_[j];
        // One package per kernel position and channel block: its data take the stripe length
        // but at least the lower limit, which also covers loading the next package's weights
        // (at most one cycle per MAC cell, overlapping the data) whatever the group's kernels.
        const std::uint32_t per_package = std::max(len, cells_);
        const std::uint64_t stripe_start = now();
        sc_core::wait(cycles(std::uint64_t{packages_ - 1} * per_package));
        const sc_core::sc_time gate = sc_core::sc_time_stamp();
        while (credits_ < len) sc_core::wait(credit_ev_);
        counters_.write_stall_cycles += to_cycles(sc_core::sc_time_stamp() - gate);
        credits_ -= len;
        const std::uint64_t resumed = now();
        credits_changed();
        // Output bytes of this stripe (exact integer split of the layer's output).
        const std::uint64_t index = g * stripes_.size() + j;
        const std::uint64_t before = output_bytes_ * index / stripes_total_;
        const std::uint64_t upto = output_bytes_ * (index + 1) / stripes_total_;
        to_deliver_.push(
            {len, upto - before, sc_core::sc_time_stamp() + cycles(hw_.dla.conv_pipeline_latency)});
        sc_core::wait(cycles(per_package));
        counters_.busy_cycles += std::uint64_t{packages_} * per_package;
        if (tiles()) {
          // The stripe's packages, split where the last one waited for credits.
          const std::string name = "stripe " + std::to_string(g) + "." + std::to_string(j);
          if (to_cycles(gate) == resumed) {
            timeline_->slice(csc_track_, stats::Detail::kTile, stripe_start, now(), name);
          } else {
            timeline_->slice(csc_track_, stats::Detail::kTile, stripe_start, to_cycles(gate), name);
            timeline_->slice(csc_track_, stats::Detail::kTile, resumed, now(),
                             name + " (last package)");
          }
        }
      }
      // The group's weights leave the CBUF once its last package is issued.
      weight_resident_ -= std::min(weight_resident_, group_bytes_[g]);
      release_ev_.notify(sc_core::SC_ZERO_TIME);
    }
  }
}

// SDP_RDMA in a convolution: its operand streams start with the layer (beside CDMA's input and
// weight fetches, on the same memory interface), each filling its own latency buffer and
// refilling as SDP consumes operands with CACC's output. Requests of up to kRequestAtoms atoms,
// one per cycle, streams taken in turn by how far each has got. RTL: resblock's conv + residual
// Add layer (nv_small network layer L1) took about 320 cycles more than the model without these
// reads; in the model the residual stream's first buffer-full (1 KB at 4 bytes per cycle)
// competes with the input fetch the CSC waits for, which accounts for them (an explanation that
// fits the cycles, not one read from the RTL's waveforms).
void ConvCore::sdp_rdma_thread() {
  for (;;) {
    sc_core::wait(start_ev_);
    const unsigned atom = hw_.dla.memory_atomic_size;
    const std::uint64_t buffer = std::uint64_t{hw_.dla.dma_latency_buffer_atoms} * atom;
    for (;;) {
      OperandStream* next = nullptr;
      for (OperandStream& o : operands_) {
        if (o.issued >= o.total) continue;
        if (next == nullptr || o.issued * next->total < next->issued * o.total) next = &o;
      }
      if (next == nullptr) break;
      OperandStream& o = *next;
      const auto bytes = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(kRequestAtoms * atom, o.total - o.issued));
      // Room in the stream's latency buffer: the operands of output not yet delivered. A
      // delivery whose share alone exceeds the buffer may still have it read (no deadlock).
      for (;;) {
        const std::uint64_t released =
            output_bytes_ == 0 ? o.total : o.total * operands_consumed_out_ / output_bytes_;
        const std::uint64_t wanted =
            output_bytes_ == 0
                ? o.total
                : (o.total * operands_wanted_out_ + output_bytes_ - 1) / output_bytes_;
        if (o.issued + bytes <= released + buffer || o.issued < wanted) break;
        sc_core::wait(operand_released_ev_);
      }
      const sc_core::sc_time arrival = sdp_rdma_.transfer(tlm::TLM_READ_COMMAND, o.walk, bytes);
      o.issued += bytes;
      o.arrivals.emplace_back(o.issued, arrival);
      operand_issued_ev_.notify(sc_core::SC_ZERO_TIME);
      (void)sdp_rdma_.pace(bytes);  // one request per cycle
    }
  }
}

// Before SDP takes output up to `delivered_bytes` (of output_bytes_), each operand stream's
// matching share has arrived.
void ConvCore::wait_for_operands(std::uint64_t delivered_bytes) {
  if (output_bytes_ == 0 || operands_.empty()) return;
  operands_wanted_out_ = delivered_bytes;
  operand_released_ev_.notify(sc_core::SC_ZERO_TIME);
  for (OperandStream& o : operands_) {
    const std::uint64_t need = (o.total * delivered_bytes + output_bytes_ - 1) / output_bytes_;
    for (;;) {
      const auto it = std::find_if(
          o.arrivals.begin(), o.arrivals.end(),
          [need](const std::pair<std::uint64_t, sc_core::sc_time>& a) { return a.first >= need; });
      if (it != o.arrivals.end()) {
        wait_until(it->second);
        break;
      }
      sc_core::wait(operand_issued_ev_);
    }
  }
}

void ConvCore::delivery_thread() {
  std::uint64_t delivered = 0;
  for (;;) {
    const Stripe s = to_deliver_.front();
    to_deliver_.pop();
    wait_until(s.ready);
    if (stripes_delivered_ == 0) delivered = 0;
    wait_for_operands(delivered + s.bytes);
    const std::uint64_t delivery_start = now();
    // Each atom's lanes go to SDP at its throughput, plus one cycle to read the next atom.
    const std::uint32_t lanes = atomic_k_;
    const std::uint32_t per_atom =
        ((lanes + hw_.dla.sdp_bs_throughput - 1) / hw_.dla.sdp_bs_throughput + 1) *
        outputs_per_atomic_;
    for (std::uint32_t a = 0; a < s.atoms; ++a) {
      sc_core::wait(cycles(per_atom));
      ++credits_;
      credit_ev_.notify(sc_core::SC_ZERO_TIME);
      credits_changed();
    }
    perf_.cacc_busy += std::uint64_t{s.atoms} * per_atom;
    delivered += s.bytes;
    operands_consumed_out_ = delivered;
    operand_released_ev_.notify(sc_core::SC_ZERO_TIME);
    if (++stripes_delivered_ == stripes_total_) stage_done(kCaccInterrupt);
    if (tiles()) {
      timeline_->slice(cacc_track_, stats::Detail::kTile, delivery_start, now(),
                       "deliver " + std::to_string(s.atoms) + " atoms", s.bytes);
    }
    // SDP's pipeline lies between CACC's delivery and the WDMA's request.
    to_wdma_.push({s.bytes, sc_core::sc_time_stamp() + cycles(hw_.dla.sdp_pipeline_latency)});
  }
}

void ConvCore::sdp_wdma_thread() {
  sc_core::sc_time last_ack = sc_core::SC_ZERO_TIME;
  for (;;) {
    const Write w = to_wdma_.front();
    to_wdma_.pop();
    wait_until(w.ready);
    if (link_ != nullptr) {
      link_->deliver(w.bytes);
      perf_.sdp_bytes_to_pdp += w.bytes;
    } else if (w.bytes > 0) {
      last_ack = std::max(last_ack, wdma_.transfer(tlm::TLM_WRITE_COMMAND, output_walk_, w.bytes));
    }
    if (++stripes_written_ == stripes_total_) {
      wait_until(last_ack);
      last_ack = sc_core::SC_ZERO_TIME;
      counters_.active_cycles += to_cycles(sc_core::sc_time_stamp() - started_at_);
      busy_ = false;
      auto done = std::move(on_done_);
      if (done) done();
    }
  }
}

}  // namespace octasim::dla
