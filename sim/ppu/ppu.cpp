#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn: one thread per channel, GPC and CTA slot
#include "sim/ppu/ppu.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "octasim/regs/nvdla.hpp"
#include "sim/core/dma.hpp"

namespace octasim::ppu {

namespace P = regs::PPU;
using ppu_format::ErrorCode;
using ppu_format::Opcode;

namespace {
constexpr unsigned kSemPollCycles = 32;
constexpr std::uint64_t kMemcpyChunk = 16 * 1024;
}  // namespace

Ppu::Ppu(const sc_core::sc_module_name& name, const HwConfig& hw, MemoryImage& image, PpuHost& host,
         const sc_core::sc_time& period)
    : sc_core::sc_module(name),
      hw_(hw),
      image_(image),
      host_(host),
      period_(period),
      channels_(std::min(hw.ppu_channels, kMaxChannels)),
      frontend_stats_(std::string(this->name()) + ".frontend") {
  using stats::Unit;
  commands_ = frontend_stats_.add("commands", "push-buffer commands executed", Unit::kCount);
  kernels_launched_ = frontend_stats_.add("kernels", "kernels launched", Unit::kCount);
  fetch_bytes_ =
      frontend_stats_.add("fetch_bytes", "push-buffer and descriptor bytes fetched", Unit::kBytes);
  copy_bytes_ = frontend_stats_.add("memcpy_bytes", "bytes copied by MEMCPY", Unit::kBytes);
  wait_cycles_ = frontend_stats_.add(
      "wait_cycles", "channel cycles spent in SEM_ACQUIRE and WAIT_DLA", Unit::kCycles);
  errors_ = frontend_stats_.add("errors", "channels stopped in the ERROR state", Unit::kCount);

  for (unsigned ch = 0; ch < channels_; ++ch) {
    channel_.emplace_back();
    in_flight_.emplace_back();
  }
  const unsigned slots = std::max(1u, hw.ppu_max_ctas_per_sm);
  pools_.resize(hw.ppu_gpcs);
  for (unsigned g = 0; g < hw.ppu_gpcs; ++g) {
    for (unsigned s = 0; s < hw.ppu_sms_per_gpc; ++s) {
      auto sm = std::make_unique<Sm>(fmt::format("gpc{}_sm{}_socket", g, s));
      sm->track_name = fmt::format("gpc{}.sm{}", g, s);
      sm->stats = std::make_unique<stats::Group>(fmt::format("{}.gpc{}.sm{}", this->name(), g, s));
      auto& st = *sm->stats;
      sm->busy_cycles =
          st.add("busy_cycles", "cycles with at least one resident CTA", Unit::kCycles);
      sm->tensor_cycles =
          st.add("tensor_active_cycles", "cycles the tensor cores were reserved for MMA steps",
                 Unit::kCycles);
      sm->fma_cycles =
          st.add("fma_active_cycles", "cycles the FMA lanes were reserved", Unit::kCycles);
      sm->macs_counter = st.add("macs", "multiply-accumulates of the CTAs run here", Unit::kOps);
      sm->ctas = st.add("ctas", "CTAs run", Unit::kCount);
      sm->bytes_read = st.add("bytes_read", "bytes loaded (line requests)", Unit::kBytes);
      sm->bytes_written = st.add("bytes_written", "bytes stored (line requests)", Unit::kBytes);
      sm->requests = st.add("requests", "memory requests issued", Unit::kCount);
      for (unsigned k = 0; k < slots; ++k) sm->slots.emplace_back();
      sms_.push_back(std::move(sm));
    }
  }
  for (unsigned ch = 0; ch < channels_; ++ch) {
    sc_core::sc_spawn([this, ch] { channel_thread(ch); }, fmt::format("channel{}", ch).c_str());
  }
  for (unsigned g = 0; g < hw.ppu_gpcs; ++g) {
    sc_core::sc_spawn([this, g] { dispatcher_thread(g); },
                      fmt::format("gpc{}_dispatch", g).c_str());
  }
  for (unsigned i = 0; i < sms_.size(); ++i) {
    for (unsigned k = 0; k < slots; ++k) {
      sc_core::sc_spawn([this, i, k] { slot_thread(i, k); },
                        fmt::format("sm{}_slot{}", i, k).c_str());
    }
  }
}

Ppu::~Ppu() = default;

void Ppu::doorbell(unsigned channel) {
  if (channel >= channels_) return;
  channel_[channel].pending = true;
  channel_[channel].doorbell.notify(sc_core::SC_ZERO_TIME);
}

void Ppu::rebase(unsigned channel) {
  if (channel >= channels_) return;
  Channel& c = channel_[channel];
  if (c.running || c.pending) return;
  c.get = 0;
  c.error = false;
  host_.set_reg(reg_addr(channel, P::S_CH0_GET::kAddr), 0);
  host_.set_reg(reg_addr(channel, P::S_CH0_ERROR::kAddr), 0);
  host_.set_reg(reg_addr(channel, P::S_CH0_ERROR_OFFSET::kAddr), 0);
  set_state(channel, P::S_CH0_STATUS::STATE_IDLE);
}

bool Ppu::busy() const {
  if (kernels_in_flight_ > 0) return true;
  for (const auto& c : channel_) {
    if (c.pending || c.running) return true;
  }
  return false;
}

std::vector<const stats::Group*> Ppu::statistics() const {
  std::vector<const stats::Group*> out{&frontend_stats_};
  for (const auto& sm : sms_) out.push_back(sm->stats.get());
  return out;
}

void Ppu::set_timeline(stats::Timeline* timeline) {
  timeline_ = timeline;
  if (timeline_ == nullptr) return;
  channel_tracks_.clear();
  for (unsigned ch = 0; ch < channels_; ++ch) {
    channel_tracks_.push_back(timeline_->track("PPU", fmt::format("ch{}", ch)));
  }
  for (auto& sm : sms_) sm->track = timeline_->track("PPU", sm->track_name);
}

std::uint64_t Ppu::cycles(const sc_core::sc_time& t) const {
  return static_cast<std::uint64_t>(t / period_ + 0.5);
}

void Ppu::set_state(unsigned ch, std::uint32_t state) {
  host_.set_reg(reg_addr(ch, P::S_CH0_STATUS::kAddr), state);
}

void Ppu::fail(unsigned ch, ErrorCode code, std::uint32_t offset) {
  Channel& c = channel_[ch];
  c.error = true;
  c.running = false;
  ++errors_;
  host_.set_reg(reg_addr(ch, P::S_CH0_ERROR::kAddr), static_cast<std::uint32_t>(code));
  host_.set_reg(reg_addr(ch, P::S_CH0_ERROR_OFFSET::kAddr), offset);
  set_state(ch, P::S_CH0_STATUS::STATE_ERROR);
  host_.raise_interrupt(kInterruptBit0 + ch);
}

bool Ppu::fetch(unsigned ch, std::uint64_t addr, unsigned words) {
  Channel& c = channel_[ch];
  const std::uint64_t bytes = std::uint64_t{words} * 4;
  if (!image_.contains(addr, bytes)) return false;
  const sc_core::sc_time t = dma_transfer(frontend_socket_, tlm::TLM_READ_COMMAND, addr,
                                          static_cast<std::uint32_t>(bytes), c.scratch);
  if (t > sc_core::sc_time_stamp()) wait(t - sc_core::sc_time_stamp());
  fetch_bytes_ += bytes;
  c.words.resize(words);
  image_.read(addr, reinterpret_cast<std::uint8_t*>(c.words.data()), bytes);
  return true;
}

void Ppu::channel_thread(unsigned ch) {
  Channel& c = channel_[ch];
  host_.set_reg(reg_addr(ch, P::S_CH0_GET::kAddr), 0);
  set_state(ch, P::S_CH0_STATUS::STATE_IDLE);
  while (true) {
    if (c.error) {  // stays stopped: the ERROR state is final for the channel
      c.pending = false;
      wait(c.doorbell);
      continue;
    }
    const std::uint32_t put = host_.reg(reg_addr(ch, P::S_CH0_PUT::kAddr));
    if (put == c.get) {
      c.pending = false;
      c.running = false;
      set_state(ch, P::S_CH0_STATUS::STATE_IDLE);
      wait(c.doorbell);
      continue;
    }
    c.pending = false;
    c.running = true;
    const std::uint32_t offset = c.get;
    const std::uint32_t size = host_.reg(reg_addr(ch, P::S_CH0_PB_SIZE::kAddr));
    if (put > size || put % 4 != 0 || put < c.get) {
      fail(ch, ErrorCode::kPbOutOfRange, offset);
      continue;
    }
    set_state(ch, P::S_CH0_STATUS::STATE_RUNNING);
    const std::uint64_t base = std::uint64_t{host_.reg(reg_addr(ch, P::S_CH0_PB_BASE_LOW::kAddr))} |
                               std::uint64_t{host_.reg(reg_addr(ch, P::S_CH0_PB_BASE_HIGH::kAddr))}
                                   << 32;
    if (!fetch(ch, base + offset, 1)) {
      fail(ch, ErrorCode::kBadAddress, offset);
      continue;
    }
    const std::uint32_t header = c.words[0];
    const auto opcode = static_cast<std::uint8_t>(header >> 24);
    const unsigned len = header & 0xffu;
    const int expected = ppu_format::payload_words(opcode);
    if (expected < 0) {
      fail(ch, ErrorCode::kUnknownCommand, offset);
      continue;
    }
    if (len != static_cast<unsigned>(expected) || (header & 0x00ffff00u) != 0) {
      fail(ch, ErrorCode::kBadLength, offset);
      continue;
    }
    if (std::uint64_t{offset} + 4 * (1 + std::uint64_t{len}) > put) {
      fail(ch, ErrorCode::kPbOutOfRange, offset);
      continue;
    }
    if (len > 0 && !fetch(ch, base + offset + 4, len)) {
      fail(ch, ErrorCode::kBadAddress, offset);
      continue;
    }
    wait(period_ * static_cast<double>(hw_.ppu_command_cycles));
    ++commands_;
    const std::uint32_t* w = c.words.data();
    const auto addr64 = [](std::uint32_t lo, std::uint32_t hi) {
      return std::uint64_t{lo} | std::uint64_t{hi} << 32;
    };
    switch (static_cast<Opcode>(opcode)) {
      case Opcode::kNop:
        break;
      case Opcode::kRegWrite: {
        const std::uint32_t a = w[0], v = w[1];
        wait(period_ * static_cast<double>(hw_.csb_access_cycles));
        if (!host_.csb_write(a, v)) fail(ch, ErrorCode::kBadRegister, offset);
        break;
      }
      case Opcode::kWaitDla: {
        const std::uint32_t mask = w[0];
        set_state(ch, P::S_CH0_STATUS::STATE_WAITING);
        const sc_core::sc_time from = sc_core::sc_time_stamp();
        while ((host_.interrupt_status() & mask) != mask) wait(host_.interrupt_event());
        host_.clear_interrupts(mask);
        wait_cycles_ += cycles(sc_core::sc_time_stamp() - from);
        set_state(ch, P::S_CH0_STATUS::STATE_RUNNING);
        break;
      }
      case Opcode::kLaunch:
        launch(ch, offset, addr64(w[0], w[1]));
        break;
      case Opcode::kSemAcquire: {
        const std::uint64_t a = addr64(w[0], w[1]);
        const std::uint32_t value = w[2];
        if (a % 4 != 0 || !image_.contains(a, 4)) {
          fail(ch, ErrorCode::kBadAddress, offset);
          break;
        }
        set_state(ch, P::S_CH0_STATUS::STATE_WAITING);
        const sc_core::sc_time from = sc_core::sc_time_stamp();
        while (true) {
          const sc_core::sc_time t =
              dma_transfer(frontend_socket_, tlm::TLM_READ_COMMAND, a, 4, c.scratch);
          if (t > sc_core::sc_time_stamp()) wait(t - sc_core::sc_time_stamp());
          std::uint32_t word = 0;
          image_.read(a, reinterpret_cast<std::uint8_t*>(&word), 4);
          if (word >= value) break;
          wait(period_ * static_cast<double>(kSemPollCycles), sem_event_);
        }
        wait_cycles_ += cycles(sc_core::sc_time_stamp() - from);
        set_state(ch, P::S_CH0_STATUS::STATE_RUNNING);
        break;
      }
      case Opcode::kSemRelease: {
        const std::uint64_t a = addr64(w[0], w[1]);
        const std::uint32_t value = w[2];
        if (a % 4 != 0 || !image_.contains(a, 4)) {
          fail(ch, ErrorCode::kBadAddress, offset);
          break;
        }
        const sc_core::sc_time t =
            dma_transfer(frontend_socket_, tlm::TLM_WRITE_COMMAND, a, 4, c.scratch);
        if (t > sc_core::sc_time_stamp()) wait(t - sc_core::sc_time_stamp());
        image_.write(a, reinterpret_cast<const std::uint8_t*>(&value), 4);
        sem_event_.notify(sc_core::SC_ZERO_TIME);
        break;
      }
      case Opcode::kMemcpy: {
        const std::uint64_t dst = addr64(w[0], w[1]), src = addr64(w[2], w[3]);
        const std::uint32_t bytes = w[4];
        if (!image_.contains(dst, bytes) || !image_.contains(src, bytes)) {
          fail(ch, ErrorCode::kBadAddress, offset);
          break;
        }
        memcpy_command(ch, dst, src, bytes);
        break;
      }
      case Opcode::kInterrupt:
        host_.raise_interrupt(kInterruptBit0 + ch);
        break;
    }
    if (c.error) continue;
    c.get = offset + 4 * (1 + len);
    host_.set_reg(reg_addr(ch, P::S_CH0_GET::kAddr), c.get);
  }
}

void Ppu::memcpy_command(unsigned ch, std::uint64_t dst, std::uint64_t src, std::uint32_t bytes) {
  Channel& c = channel_[ch];
  const unsigned port = std::max(1u, hw_.ppu_sm_bytes_per_cycle);
  for (std::uint64_t done = 0; done < bytes;) {
    const std::uint64_t n = std::min<std::uint64_t>(kMemcpyChunk, bytes - done);
    // Reads of the chunk, one line request every line/port cycles; then the writes.
    for (int pass = 0; pass < 2; ++pass) {
      const auto cmd = pass == 0 ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND;
      const std::uint64_t base = (pass == 0 ? src : dst) + done;
      sc_core::sc_time issue = sc_core::SC_ZERO_TIME, last = sc_core::sc_time_stamp();
      std::vector<std::uint8_t>& scratch = c.scratch;
      for (std::uint64_t off = 0; off < n;) {
        const std::uint64_t a = base + off;
        const std::uint64_t len = std::min<std::uint64_t>(kLineBytes - a % kLineBytes, n - off);
        last = std::max(last, dma_transfer(frontend_socket_, cmd, a,
                                           static_cast<std::uint32_t>(len), scratch, issue));
        issue += period_ * static_cast<double>((len + port - 1) / port);
        off += len;
      }
      if (last > sc_core::sc_time_stamp()) wait(last - sc_core::sc_time_stamp());
      if (pass == 0) {
        scratch.resize(n);
        image_.read(src + done, scratch.data(), n);
        image_.write(dst + done, scratch.data(), n);
      }
    }
    copy_bytes_ += n;
    done += n;
  }
}

void Ppu::launch(unsigned ch, std::uint32_t offset, std::uint64_t descriptor) {
  Channel& c = channel_[ch];
  if (descriptor % 4 != 0 || !fetch(ch, descriptor, ppu_format::kDescriptorWords)) {
    fail(ch, ErrorCode::kBadAddress, offset);
    return;
  }
  if (sms_.empty()) {
    fail(ch, ErrorCode::kBadKernel, offset);
    return;
  }
  {
    DecodeResult r = decode_kernel(c.words.data(), hw_, image_);
    if (!r.kernel) {
      fail(ch, r.error, offset);
      return;
    }
    if (r.kernel->smem_bytes() > hw_.ppu_smem_bytes_per_sm) {  // would never be dispatched
      fail(ch, ErrorCode::kBadKernel, offset);
      return;
    }
    c.kernel = std::move(r.kernel);
  }
  Kernel& k = *c.kernel;
  k.record.channel = ch;
  k.record.occupancy = static_cast<unsigned>(std::min<std::uint64_t>(
      std::max(1u, hw_.ppu_max_ctas_per_sm), hw_.ppu_smem_bytes_per_sm / k.smem_bytes()));
  k.record.start_cycle = cycles(sc_core::sc_time_stamp());
  in_flight_[ch] = InFlight{0, records_.size(), sc_core::SC_ZERO_TIME};
  records_.push_back(k.record);
  ++kernels_launched_;
  ++kernels_in_flight_;
  const unsigned ctas = k.ctas();
  const auto gpcs = static_cast<unsigned>(pools_.size());
  for (unsigned i = 0; i < ctas; ++i) {
    pools_[next_gpc_].push_back(Pending{&k, i, ch});
    next_gpc_ = (next_gpc_ + 1) % gpcs;
  }
  sched_event_.notify(sc_core::SC_ZERO_TIME);
  while (in_flight_[ch].done < ctas) wait(c.kernel_done);
  if (in_flight_[ch].last_ack > sc_core::sc_time_stamp()) {
    wait(in_flight_[ch].last_ack - sc_core::sc_time_stamp());
  }
  k.finish(image_);
  KernelRecord& r = records_[in_flight_[ch].record];
  r.saturations = k.record.saturations;
  r.end_cycle = cycles(sc_core::sc_time_stamp());
  const double cyc = static_cast<double>(std::max<std::uint64_t>(1, r.cycles()));
  const double macs = static_cast<double>(r.macs);
  r.tensor_utilization = macs / (cyc * k.peak_macs_per_cycle());
  r.arithmetic_intensity =
      macs / static_cast<double>(std::max<std::uint64_t>(1, k.compulsory_bytes()));
  const double dram = static_cast<double>(std::max(1u, hw_.mem_partitions)) * hw_.dram_bandwidth();
  if (timeline_ != nullptr) {
    timeline_->slice(channel_tracks_[ch], stats::Detail::kLayer, r.start_cycle, r.end_cycle,
                     fmt::format("{} {} {}x{}x{}", r.kind, r.type, r.m, r.n, r.k),
                     r.bytes_read + r.bytes_written);
  }
  r.bound = r.arithmetic_intensity >= k.path_peak_macs_per_cycle() / dram ? "compute" : "memory";
  --kernels_in_flight_;
}

void Ppu::dispatcher_thread(unsigned gpc) {
  auto& pool = pools_[gpc];
  const unsigned per_gpc = hw_.ppu_sms_per_gpc;
  while (true) {
    if (pool.empty()) {
      wait(sched_event_);
      continue;
    }
    const Pending p = pool.front();
    Sm* best = nullptr;
    Slot* slot = nullptr;
    unsigned best_used = 0;
    for (unsigned s = 0; s < per_gpc; ++s) {
      Sm& sm = *sms_[gpc * per_gpc + s];
      if (sm.smem_used + p.kernel->smem_bytes() > hw_.ppu_smem_bytes_per_sm) continue;
      Slot* free_slot = nullptr;
      unsigned used = 0;
      for (auto& sl : sm.slots) {
        if (sl.busy) {
          ++used;
        } else if (free_slot == nullptr) {
          free_slot = &sl;
        }
      }
      if (free_slot == nullptr) continue;
      if (best == nullptr || used < best_used) {
        best = &sm;
        best_used = used;
        slot = free_slot;
      }
    }
    if (best == nullptr) {
      wait(sched_event_);
      continue;
    }
    pool.pop_front();
    slot->busy = true;
    best->smem_used += p.kernel->smem_bytes();
    slot->kernel = p.kernel;
    slot->cta = p.cta;
    slot->channel = p.channel;
    wait(period_ * static_cast<double>(hw_.ppu_cta_launch_cycles));
    slot->start.notify(sc_core::SC_ZERO_TIME);
  }
}

void Ppu::slot_thread(unsigned sm_index, unsigned slot_index) {
  Sm& sm = *sms_[sm_index];
  Slot& slot = sm.slots[slot_index];
  while (true) {
    wait(slot.start);
    run_cta(sm, slot);
    sm.smem_used -= slot.kernel->smem_bytes();
    slot.busy = false;
    InFlight& f = in_flight_[slot.channel];
    if (++f.done == slot.kernel->ctas())
      channel_[slot.channel].kernel_done.notify(sc_core::SC_ZERO_TIME);
    sched_event_.notify(sc_core::SC_ZERO_TIME);
  }
}

sc_core::sc_time Ppu::issue(Sm& sm, Slot& slot, tlm::tlm_command cmd, std::uint64_t& bytes) {
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
  sc_core::sc_time done = now;
  const unsigned port = std::max(1u, hw_.ppu_sm_bytes_per_cycle);
  for (const Range& r : req) {
    const sc_core::sc_time at = std::max(now, sm.port_free);
    sm.port_free = at + period_ * static_cast<double>((r.bytes + port - 1) / port);
    done = std::max(done, dma_transfer(sm.socket, cmd, r.addr, static_cast<std::uint32_t>(r.bytes),
                                       slot.scratch, at - now));
    bytes += r.bytes;
  }
  sm.requests += req.size();
  return done;
}

void Ppu::run_cta(Sm& sm, Slot& slot) {
  Kernel& k = *slot.kernel;
  const unsigned cta = slot.cta;
  if (sm.resident++ == 0) sm.resident_since = sc_core::sc_time_stamp();
  ++sm.ctas;
  const std::size_t record = in_flight_[slot.channel].record;
  std::uint64_t read = 0, written = 0;
  const std::uint64_t cta_start = cycles(sc_core::sc_time_stamp());
  k.begin(cta, slot.state);
  const unsigned steps = k.steps(cta);
  const unsigned depth = std::max(1u, k.prefetch_depth());
  slot.ready.assign(steps, sc_core::SC_ZERO_TIME);
  const auto load = [&](unsigned s) {
    slot.ranges.clear();
    k.loads(cta, s, slot.ranges);
    slot.ready[s] = issue(sm, slot, tlm::TLM_READ_COMMAND, read);
  };
  for (unsigned s = 0; s < std::min(steps, depth); ++s) load(s);
  for (unsigned s = 0; s < steps; ++s) {
    if (slot.ready[s] > sc_core::sc_time_stamp()) wait(slot.ready[s] - sc_core::sc_time_stamp());
    // The buffer of step s - 1 is free: the loads `depth` steps ahead start (double buffering
    // for depth 1: tile s + 1 loads while tile s computes).
    if (s + depth < steps) load(s + depth);
    const std::uint64_t mc = k.math_cycles(cta, s);
    const sc_core::sc_time start = std::max(sc_core::sc_time_stamp(), sm.pipe_free);
    sm.pipe_free = start + period_ * static_cast<double>(mc);
    (k.tensor() ? sm.tensor_cycles : sm.fma_cycles) += mc;
    sm.macs_counter += k.macs(cta, s);
    k.step(cta, s, slot.state);
    wait(sm.pipe_free - sc_core::sc_time_stamp());
  }
  slot.ranges.clear();
  k.end(cta, slot.state, slot.ranges);
  // Posted stores: the CTA leaves once they are issued (its slot and shared memory free); the
  // kernel ends when the last is acknowledged.
  const sc_core::sc_time acked = issue(sm, slot, tlm::TLM_WRITE_COMMAND, written);
  InFlight& f = in_flight_[slot.channel];
  f.last_ack = std::max(f.last_ack, acked);
  const sc_core::sc_time issued = std::max(sc_core::sc_time_stamp(), sm.port_free);
  if (issued > sc_core::sc_time_stamp()) wait(issued - sc_core::sc_time_stamp());
  sm.bytes_read += read;
  sm.bytes_written += written;
  if (timeline_ != nullptr) {
    timeline_->slice(sm.track, stats::Detail::kTile, cta_start, cycles(sc_core::sc_time_stamp()),
                     fmt::format("{} cta {}", k.record.kind, cta), read + written);
  }
  records_[record].bytes_read += read;  // by index: another channel's launch may reallocate
  records_[record].bytes_written += written;
  if (--sm.resident == 0) sm.busy_cycles += cycles(sc_core::sc_time_stamp() - sm.resident_since);
}

}  // namespace octasim::ppu
