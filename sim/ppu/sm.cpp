#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn: one thread per CTA slot
#include "sim/ppu/sm.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace octasim::ppu {

Sm::Sm(const sc_core::sc_module_name& name, const std::string& ppu_name, unsigned gpc, unsigned sm,
       const HwConfig& hw, const sc_core::sc_time& period, SmClient& client)
    : sc_core::sc_module(name),
      hw_(hw),
      period_(period),
      client_(client),
      dma_(socket, period, DmaClient::Params{1, std::max(1u, hw.ppu.sm_bytes_per_cycle), 0}),
      stats_(fmt::format("{}.gpc{}.sm{}", ppu_name, gpc, sm)),
      track_name_(fmt::format("gpc{}.sm{}", gpc, sm)) {
  using stats::Unit;
  busy_cycles_ = stats_.add("busy_cycles", "cycles with at least one resident CTA", Unit::kCycles);
  tensor_cycles_ = stats_.add("tensor_active_cycles",
                              "cycles the tensor cores were reserved for MMA steps", Unit::kCycles);
  fma_cycles_ =
      stats_.add("fma_active_cycles", "cycles the FMA lanes were reserved", Unit::kCycles);
  macs_ = stats_.add("macs", "multiply-accumulates of the CTAs run here", Unit::kOps);
  ctas_ = stats_.add("ctas", "CTAs run", Unit::kCount);
  bytes_read_ = stats_.add("bytes_read", "bytes loaded (line requests)", Unit::kBytes);
  bytes_written_ = stats_.add("bytes_written", "bytes stored (line requests)", Unit::kBytes);
  requests_ = stats_.add("requests", "memory requests issued", Unit::kCount);
  const unsigned slots = std::max(1u, hw.ppu.max_ctas_per_sm);
  for (unsigned k = 0; k < slots; ++k) slots_.emplace_back();
}

void Sm::spawn_slots(unsigned index) {
  for (unsigned k = 0; k < slots_.size(); ++k) {
    sc_core::sc_spawn([this, k] { slot_thread(k); }, fmt::format("sm{}_slot{}", index, k).c_str());
  }
  sc_core::sc_spawn([this] { issue_thread(); }, fmt::format("sm{}_issue", index).c_str());
}

int Sm::free_slot(std::uint64_t smem_bytes, unsigned& busy) const {
  busy = 0;
  if (smem_used_ + smem_bytes > hw_.ppu.smem_bytes_per_sm) return -1;
  int free = -1;
  for (unsigned k = 0; k < slots_.size(); ++k) {
    if (slots_[k].busy) {
      ++busy;
    } else if (free < 0) {
      free = static_cast<int>(k);
    }
  }
  return free;
}

void Sm::reserve(unsigned slot, const CtaWork& work) {
  Slot& s = slots_[slot];
  s.busy = true;
  smem_used_ += work.kernel->smem_bytes();
  s.work = work;
}

void Sm::start(unsigned slot) {
  slots_[slot].start.notify(sc_core::SC_ZERO_TIME);
}

void Sm::set_timeline(stats::Timeline* timeline) {
  timeline_ = timeline;
  if (timeline_ != nullptr) track_ = timeline_->track("PPU", track_name_);
}

std::uint64_t Sm::cycles(const sc_core::sc_time& t) const {
  return static_cast<std::uint64_t>(t / period_ + 0.5);
}

void Sm::slot_thread(unsigned slot_index) {
  Slot& slot = slots_[slot_index];
  while (true) {
    wait(slot.start);
    std::uint64_t read = 0, written = 0;
    sc_core::sc_time acked;
    run_cta(slot, read, written, acked);
    smem_used_ -= slot.work.kernel->smem_bytes();
    slot.busy = false;
    client_.cta_done(slot.work, read, written, acked);
  }
}

void Sm::issue(Slot& slot, tlm::tlm_command cmd, std::uint64_t& bytes, Batch& batch) {
  // Coalesce the ranges into one request per line touched (the union of the bytes in it).
  auto& req = slot.requests;
  req.clear();
  for (const Range& r : slot.ranges) {
    for (std::uint64_t a = r.addr; a < r.addr + r.bytes;) {
      const std::uint64_t end = std::min(r.addr + r.bytes, (a / kLineBytes + 1) * kLineBytes);
      req.push_back({a, end - a});
      a = end;
    }
  }
  std::sort(req.begin(), req.end(), [](const Range& x, const Range& y) { return x.addr < y.addr; });
  std::size_t n = 0;
  for (const Range& r : req) {
    if (n > 0 && req[n - 1].addr / kLineBytes == r.addr / kLineBytes) {
      auto& last = req[n - 1];
      last.bytes = std::max(last.addr + last.bytes, r.addr + r.bytes) - last.addr;
    } else {
      req[n++] = r;
    }
  }
  req.resize(n);
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  batch.done = now;
  batch.port_end = now;
  // An empty store batch still queues a marker: the CTA leaves once the port has sent what is
  // before it.
  batch.pending = req.size();
  if (req.empty() && cmd == tlm::TLM_WRITE_COMMAND) {
    batch.pending = 1;
    requests_q_.push({cmd, 0, 0, &slot, &batch});
  }
  for (const Range& r : req) {
    requests_q_.push({cmd, r.addr, r.bytes, &slot, &batch});
    bytes += r.bytes;
  }
  requests_ += req.size();
}

void Sm::wait_sent(Slot& slot, const Batch& batch) {
  while (batch.pending > 0) wait(slot.sent);
}

void Sm::issue_thread() {
  while (true) {
    const Request r = requests_q_.front();
    Batch& batch = *r.batch;
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (r.bytes > 0) {
      batch.done =
          std::max(batch.done, dma_.transfer(r.cmd, r.addr, static_cast<std::uint32_t>(r.bytes)));
    }
    const std::uint64_t port = dma_.params().request_bytes;
    batch.port_end = now + period_ * static_cast<double>((r.bytes + port - 1) / port);
    --batch.pending;
    r.slot->sent.notify(sc_core::SC_ZERO_TIME);
    // The port moves the request's bytes before it takes the next one.
    dma_.pace(r.bytes);
    requests_q_.pop();
  }
}

void Sm::run_cta(Slot& slot, std::uint64_t& read, std::uint64_t& written, sc_core::sc_time& acked) {
  Kernel& k = *slot.work.kernel;
  const unsigned cta = slot.work.cta;
  if (resident_++ == 0) resident_since_ = sc_core::sc_time_stamp();
  ++ctas_;
  const std::uint64_t cta_start = cycles(sc_core::sc_time_stamp());
  k.begin(cta, slot.state);
  const unsigned steps = k.steps(cta);
  const unsigned depth = std::max(1u, k.prefetch_depth());
  slot.ready.assign(steps, Batch{});
  const auto load = [&](unsigned s) {
    slot.ranges.clear();
    k.loads(cta, s, slot.ranges);
    issue(slot, tlm::TLM_READ_COMMAND, read, slot.ready[s]);
  };
  for (unsigned s = 0; s < std::min(steps, depth); ++s) load(s);
  for (unsigned s = 0; s < steps; ++s) {
    // The step is ready when its last load's data arrived.
    wait_sent(slot, slot.ready[s]);
    Clocked::wait_until(slot.ready[s].done);
    // The buffer of step s - 1 is free: the loads `depth` steps ahead start (double buffering
    // for depth 1: tile s + 1 loads while tile s computes).
    if (s + depth < steps) load(s + depth);
    const std::uint64_t mc = k.math_cycles(cta, s);
    const sc_core::sc_time start = std::max(sc_core::sc_time_stamp(), pipe_free_);
    pipe_free_ = start + period_ * static_cast<double>(mc);
    (k.tensor() ? tensor_cycles_ : fma_cycles_) += mc;
    macs_ += k.macs(cta, s);
    k.step(cta, s, slot.state);
    wait(pipe_free_ - sc_core::sc_time_stamp());
  }
  slot.ranges.clear();
  k.end(cta, slot.state, slot.ranges);
  // Posted stores: the CTA leaves once they are issued (its slot and shared memory free); the
  // kernel ends when the last is acknowledged.
  issue(slot, tlm::TLM_WRITE_COMMAND, written, slot.stores);
  wait_sent(slot, slot.stores);
  Clocked::wait_until(slot.stores.port_end);
  acked = slot.stores.done;
  bytes_read_ += read;
  bytes_written_ += written;
  if (timeline_ != nullptr) {
    timeline_->slice(track_, stats::Detail::kTile, cta_start, cycles(sc_core::sc_time_stamp()),
                     fmt::format("{} cta {}", k.record.kind, cta), read + written);
  }
  if (--resident_ == 0) busy_cycles_ += cycles(sc_core::sc_time_stamp() - resident_since_);
}

}  // namespace octasim::ppu
