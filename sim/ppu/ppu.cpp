#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn: one thread per channel and GPC
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
constexpr std::size_t kChannelStackBytes = std::size_t{8} << 20;  // 8 MiB (virtual, per channel)
}  // namespace

Ppu::Ppu(const sc_core::sc_module_name& name, const HwConfig& hw, MemoryImage& image, PpuHost& host,
         const sc_core::sc_time& period)
    : sc_core::sc_module(name),
      hw_(hw),
      image_(image),
      host_(host),
      period_(period),
      channels_(std::min(hw.ppu.channels, kMaxChannels)),
      scheduler_(make_cta_scheduler(hw.ppu.cta_scheduler)),
      frontend_stats_(std::string(this->name()) + ".frontend") {
  using stats::Unit;
  commands_ = frontend_stats_.add("commands", "push-buffer commands executed", Unit::kCount);
  kernels_launched_ = frontend_stats_.add("kernels", "kernels launched", Unit::kCount);
  fetch_bytes_ =
      frontend_stats_.add("fetch_bytes", "push-buffer and descriptor bytes fetched", Unit::kBytes);
  copy_bytes_ = frontend_stats_.add("memcpy_bytes", "bytes copied by MEMCPY", Unit::kBytes);
  wait_cycles_ = frontend_stats_.add(
      "wait_cycles", "channel cycles spent in SEM_ACQUIRE, WAIT_DLA and SYNCPT_WAIT",
      Unit::kCycles);
  errors_ = frontend_stats_.add("errors", "channels stopped in the ERROR state", Unit::kCount);

  for (unsigned ch = 0; ch < channels_; ++ch) {
    channel_.emplace_back();
    in_flight_.emplace_back();
  }
  pools_.resize(hw.ppu.gpcs);
  for (unsigned g = 0; g < hw.ppu.gpcs; ++g) {
    for (unsigned s = 0; s < hw.ppu.sms_per_gpc; ++s) {
      sms_.push_back(std::make_unique<Sm>(fmt::format("gpc{}_sm{}", g, s).c_str(), this->name(), g,
                                          s, hw, period, static_cast<SmClient&>(*this)));
    }
  }
  // A channel decodes its kernels and, for a node kernel, runs the registry's reference kernel
  // (models/ops/ppu_node.hpp) on its own stack: SystemC's default (64 KiB) is too small for that
  // under the sanitizers (AddressSanitizer's redzones make every frame larger).
  sc_core::sc_spawn_options channel_options;
  channel_options.set_stack_size(kChannelStackBytes);
  for (unsigned ch = 0; ch < channels_; ++ch) {
    sc_core::sc_spawn([this, ch] { channel_thread(ch); }, fmt::format("channel{}", ch).c_str(),
                      &channel_options);
  }
  for (unsigned g = 0; g < hw.ppu.gpcs; ++g) {
    sc_core::sc_spawn([this, g] { dispatcher_thread(g); },
                      fmt::format("gpc{}_dispatch", g).c_str());
  }
  for (unsigned i = 0; i < sms_.size(); ++i) sms_[i]->spawn_slots(i);
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
  for (const auto& sm : sms_) out.push_back(&sm->statistics());
  return out;
}

void Ppu::set_timeline(stats::Timeline* timeline) {
  timeline_ = timeline;
  if (timeline_ == nullptr) {
    for (auto& sm : sms_) sm->set_timeline(nullptr);
    return;
  }
  channel_tracks_.clear();
  for (unsigned ch = 0; ch < channels_; ++ch) {
    channel_tracks_.push_back(timeline_->track("PPU", fmt::format("ch{}", ch)));
  }
  for (auto& sm : sms_) sm->set_timeline(timeline_);
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
    wait(period_ * static_cast<double>(hw_.ppu.command_cycles));
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
        wait(period_ * static_cast<double>(hw_.dla.csb_access_cycles));
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
      case Opcode::kSyncptWait: {
        const std::uint32_t id = w[0], value = w[1];
        if (id >= ppu_format::kSyncpoints) {
          fail(ch, ErrorCode::kBadSyncpoint, offset);
          break;
        }
        // The syncpoint counts in the register file as the bit is raised, which notifies the
        // interrupt event: wait for raises until the count has reached the value (wrapping).
        const std::uint32_t addr = ppu_format::kSyncptBase + 4 * id;
        set_state(ch, P::S_CH0_STATUS::STATE_WAITING);
        const sc_core::sc_time from = sc_core::sc_time_stamp();
        while (static_cast<std::int32_t>(host_.reg(addr) - value) < 0) {
          wait(host_.interrupt_event());
        }
        wait_cycles_ += cycles(sc_core::sc_time_stamp() - from);
        set_state(ch, P::S_CH0_STATUS::STATE_RUNNING);
        break;
      }
    }
    if (c.error) continue;
    c.get = offset + 4 * (1 + len);
    host_.set_reg(reg_addr(ch, P::S_CH0_GET::kAddr), c.get);
  }
}

void Ppu::memcpy_command(unsigned ch, std::uint64_t dst, std::uint64_t src, std::uint32_t bytes) {
  Channel& c = channel_[ch];
  const unsigned port = std::max(1u, hw_.ppu.sm_bytes_per_cycle);
  for (std::uint64_t done = 0; done < bytes;) {
    const std::uint64_t n = std::min<std::uint64_t>(kMemcpyChunk, bytes - done);
    // Reads of the chunk, one line request every line/port cycles; then the writes.
    for (int pass = 0; pass < 2; ++pass) {
      const auto cmd = pass == 0 ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND;
      const std::uint64_t base = (pass == 0 ? src : dst) + done;
      sc_core::sc_time last = sc_core::sc_time_stamp();
      std::vector<std::uint8_t>& scratch = c.scratch;
      for (std::uint64_t off = 0; off < n;) {
        // Each request goes out at its port slot (time order at the memory system).
        const std::uint64_t a = base + off;
        const std::uint64_t len = std::min<std::uint64_t>(kLineBytes - a % kLineBytes, n - off);
        last = std::max(
            last, dma_transfer(frontend_socket_, cmd, a, static_cast<std::uint32_t>(len), scratch));
        wait(period_ * static_cast<double>((len + port - 1) / port));
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
    if (r.kernel->smem_bytes() > hw_.ppu.smem_bytes_per_sm) {  // would never be dispatched
      fail(ch, ErrorCode::kBadKernel, offset);
      return;
    }
    c.kernel = std::move(r.kernel);
  }
  Kernel& k = *c.kernel;
  k.record.channel = ch;
  k.record.occupancy = static_cast<unsigned>(std::min<std::uint64_t>(
      std::max(1u, hw_.ppu.max_ctas_per_sm), hw_.ppu.smem_bytes_per_sm / k.smem_bytes()));
  k.record.start_cycle = cycles(sc_core::sc_time_stamp());
  in_flight_[ch] = InFlight{0, records_.size(), sc_core::SC_ZERO_TIME};
  records_.push_back(k.record);
  ++kernels_launched_;
  ++kernels_in_flight_;
  const unsigned ctas = k.ctas();
  const std::vector<unsigned> gpc_of =
      scheduler_->assign(k.grid(), static_cast<unsigned>(pools_.size()));
  for (unsigned i = 0; i < ctas; ++i) pools_[gpc_of[i]].push_back(CtaWork{&k, i, ch});
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
  const double dram = static_cast<double>(std::max(1u, hw_.mem.partitions)) * hw_.dram_bandwidth();
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
  const unsigned per_gpc = hw_.ppu.sms_per_gpc;
  while (true) {
    if (pool.empty()) {
      wait(sched_event_);
      continue;
    }
    const CtaWork w = pool.front();
    // The SM of the GPC with the fewest busy slots that has a free one and room in shared
    // memory (the first of equals).
    Sm* best = nullptr;
    int slot = -1;
    unsigned best_busy = 0;
    for (unsigned s = 0; s < per_gpc; ++s) {
      Sm& sm = *sms_[gpc * per_gpc + s];
      unsigned busy = 0;
      const int free_slot = sm.free_slot(w.kernel->smem_bytes(), busy);
      if (free_slot < 0) continue;
      if (best == nullptr || busy < best_busy) {
        best = &sm;
        best_busy = busy;
        slot = free_slot;
      }
    }
    if (best == nullptr) {
      wait(sched_event_);
      continue;
    }
    pool.pop_front();
    best->reserve(static_cast<unsigned>(slot), w);
    wait(period_ * static_cast<double>(hw_.ppu.cta_launch_cycles));
    best->start(static_cast<unsigned>(slot));
  }
}

void Ppu::cta_done(const CtaWork& work, std::uint64_t read, std::uint64_t written,
                   const sc_core::sc_time& acked) {
  InFlight& f = in_flight_[work.channel];
  f.last_ack = std::max(f.last_ack, acked);
  records_[f.record].bytes_read += read;  // by index: another channel's launch may reallocate
  records_[f.record].bytes_written += written;
  if (++f.done == work.kernel->ctas())
    channel_[work.channel].kernel_done.notify(sc_core::SC_ZERO_TIME);
  sched_event_.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace octasim::ppu
