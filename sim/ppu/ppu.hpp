// The PPU: a GPU-like processor of GPCs of SMs with tensor cores, fed by push-buffer channels.
//
// Front end: one thread per channel executes the channel's push buffer (firmware/ppu/
// commands.hpp) from GET up to PUT after a doorbell, ppu_command_cycles per command, fetching
// every command through its TLM socket. Scheduler: a LAUNCHed kernel becomes a grid of CTAs
// (output tiles), dealt into per-GPC pending pools by the CTA scheduling policy
// (ppu_cta_scheduler, sim/ppu/cta_scheduler.hpp; round-robin by default); each GPC's
// dispatcher puts a CTA on an SM of its GPC with a free CTA slot and room in shared memory
// (ppu_cta_launch_cycles per dispatch). SM (sim/ppu/sm.hpp, a module of its own): a resident
// CTA runs a k-loop — line requests for the A and B k-tiles through the SM's socket
// (ppu_sm_bytes_per_cycle), double-buffered (tile i+1 loads while tile i computes), the math
// reserved on the SM's math pipe that resident CTAs share (tensor cores: padded MMA steps /
// tensor cores x step cycles; FMA path: MACs / lanes), then the D tile's stores. Values come
// from models/ops tile by tile (gemm_load_c, gemm_accumulate per k-tile ascending,
// gemm_store_d), so they equal the references bit for bit; D reaches the image when the kernel
// finishes. Requests carry timing only (the image is read and written directly).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "firmware/ppu/commands.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/core/stats.hpp"
#include "sim/ppu/cta_scheduler.hpp"
#include "sim/ppu/kernels.hpp"
#include "sim/ppu/ppu_host.hpp"
#include "sim/ppu/sm.hpp"

namespace octasim::ppu {

// The front end's register layout and interrupts (firmware/ppu/commands.hpp).
inline constexpr unsigned kMaxChannels = ppu_format::kChannels;  // S_CH0..S_CH3
inline constexpr std::uint32_t kChannelStride = ppu_format::kChannelStride;
inline constexpr unsigned kInterruptBit0 = ppu_format::kInterruptBit0;  // + channel

class Ppu final : public sc_core::sc_module, private SmClient {
 public:
  using Socket = tlm_utils::simple_initiator_socket<Ppu>;

  // Throws std::runtime_error if hw.ppu.cta_scheduler names no policy (cta_scheduler.hpp).
  Ppu(const sc_core::sc_module_name& name, const HwConfig& hw, MemoryImage& image, PpuHost& host,
      const sc_core::sc_time& period);
  Ppu(const Ppu&) = delete;
  Ppu& operator=(const Ppu&) = delete;
  ~Ppu() override;

  // Binds the front end's and every SM's initiator socket to the memory system.
  template <class TargetSocket>
  void bind(TargetSocket& target) {
    frontend_socket_.bind(target);
    for (auto& sm : sms_) sm->socket.bind(target);
  }

  // Software wrote S_CH<channel>_PUT. Only notifies (callable from sc_main between runs).
  void doorbell(unsigned channel);
  // Software wrote S_CH<channel>_PB_BASE_LOW: a new push buffer. An idle or stopped (ERROR)
  // channel starts over at GET = 0 and leaves the ERROR state; a running one is not affected.
  void rebase(unsigned channel);
  // A channel has commands to run or is running one, or a kernel is in flight.
  [[nodiscard]] bool busy() const;
  [[nodiscard]] unsigned channels() const { return channels_; }
  [[nodiscard]] const std::vector<KernelRecord>& kernels() const { return records_; }
  // "<name>.frontend", "<name>.gpc<g>.sm<s>".
  [[nodiscard]] std::vector<const stats::Group*> statistics() const;
  // Records into `timeline` (null: stop): a slice per kernel on its channel's track (process
  // "PPU", thread "ch<n>"), and at tile detail one per CTA on its SM's track ("gpc<g>.sm<s>").
  void set_timeline(stats::Timeline* timeline);

 private:
  struct Channel {
    sc_core::sc_event doorbell;
    bool pending = false;  // a doorbell not yet looked at
    bool running = false;
    bool error = false;
    std::uint32_t get = 0;
    std::unique_ptr<Kernel> kernel;  // the last launched (kept: never a local across wait())
    sc_core::sc_event kernel_done;
    std::vector<std::uint8_t> scratch;
    std::vector<std::uint32_t> words;
  };
  struct InFlight {  // per channel: the kernel's progress
    unsigned done = 0;
    std::size_t record = 0;
    sc_core::sc_time last_ack = sc_core::SC_ZERO_TIME;  // stores are posted: the kernel ends
                                                        // when the last one is acknowledged
  };

  void channel_thread(unsigned ch);
  void dispatcher_thread(unsigned gpc);
  void cta_done(const CtaWork& work, std::uint64_t read, std::uint64_t written,
                const sc_core::sc_time& acked) override;

  // Front end helpers: each returns false after putting the channel into ERROR.
  bool fetch(unsigned ch, std::uint64_t addr, unsigned words);
  void fail(unsigned ch, ppu_format::ErrorCode code, std::uint32_t offset);
  void set_state(unsigned ch, std::uint32_t state);
  [[nodiscard]] std::uint32_t reg_addr(unsigned ch, std::uint32_t ch0_addr) const {
    return ch0_addr + ch * kChannelStride;
  }
  void launch(unsigned ch, std::uint32_t offset, std::uint64_t descriptor);
  void memcpy_command(unsigned ch, std::uint64_t dst, std::uint64_t src, std::uint32_t bytes);
  [[nodiscard]] std::uint64_t cycles(const sc_core::sc_time& t) const;

  const HwConfig& hw_;
  MemoryImage& image_;
  PpuHost& host_;
  sc_core::sc_time period_;
  unsigned channels_;
  Socket frontend_socket_{"frontend_socket"};
  std::deque<Channel> channel_;
  std::deque<InFlight> in_flight_;
  std::vector<std::unique_ptr<Sm>> sms_;     // GPC-major
  std::unique_ptr<CtaScheduler> scheduler_;  // which GPC's pool a launched CTA joins
  std::vector<std::deque<CtaWork>> pools_;   // per GPC
  sc_core::sc_event sched_event_;
  sc_core::sc_event sem_event_;  // a SEM_RELEASE wrote a word
  unsigned kernels_in_flight_ = 0;
  std::vector<KernelRecord> records_;
  stats::Timeline* timeline_ = nullptr;
  std::vector<std::uint32_t> channel_tracks_;
  stats::Group frontend_stats_;
  stats::Counter commands_, kernels_launched_, fetch_bytes_, copy_bytes_, wait_cycles_, errors_;
};

}  // namespace octasim::ppu
