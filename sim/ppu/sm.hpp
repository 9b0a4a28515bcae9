// One SM of the PPU: CTA slots (one thread each), shared memory, a load/store port and a math
// pipe the resident CTAs share, and its initiator socket to the memory system.
//
// A resident CTA runs a k-loop: line requests for the step's operand ranges, queued (in call
// order) to the SM's issue thread, which sends each through a DmaClient at the simulated time its
// load/store port slot comes up (ppu_sm_bytes_per_cycle), so the memory system sees them in time
// order; double-buffered (the loads `prefetch_depth` steps ahead are queued when a step's loads
// have arrived; the step waits for its last load's data), the math reserved on the math pipe
// (Kernel::math_cycles), then the D tile's stores, posted: the CTA leaves once they are issued.
// Statistics: group "<ppu>.gpc<g>.sm<s>"; at tile detail a timeline slice per CTA on track
// ("PPU", "gpc<g>.sm<s>").
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "sim/core/bounded_channel.hpp"
#include "sim/core/dma_client.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/stats.hpp"
#include "sim/ppu/kernels.hpp"

namespace octasim::ppu {

inline constexpr unsigned kLineBytes = 128;  // SM and front-end request granule

// A CTA of a launched kernel, as the GPC dispatcher hands it to an SM slot.
struct CtaWork {
  Kernel* kernel = nullptr;
  unsigned cta = 0;
  unsigned channel = 0;  // the launching channel
};

// Where an SM reports a finished CTA (the Ppu: kernel progress and its record's traffic).
class SmClient {
 public:
  virtual ~SmClient() = default;
  // `work` left its slot after reading `read` and storing `written` bytes; its last store is
  // acknowledged at `acked` (absolute). Called in the CTA's slot thread.
  virtual void cta_done(const CtaWork& work, std::uint64_t read, std::uint64_t written,
                        const sc_core::sc_time& acked) = 0;
};

class Sm final : public sc_core::sc_module {
 public:
  using Socket = tlm_utils::simple_initiator_socket<Sm>;

  // SM `sm` of GPC `gpc` of the PPU named `ppu_name` (the statistics group's prefix).
  Sm(const sc_core::sc_module_name& name, const std::string& ppu_name, unsigned gpc, unsigned sm,
     const HwConfig& hw, const sc_core::sc_time& period, SmClient& client);
  Sm(const Sm&) = delete;
  Sm& operator=(const Sm&) = delete;

  // Spawns the CTA slots' threads named "sm<index>_slot<k>" and the port's issue thread
  // "sm<index>_issue" (the Ppu calls it after spawning its own threads, in SM order).
  void spawn_slots(unsigned index);
  // A free CTA slot (-1: none, or no room for `smem_bytes` more shared memory); `busy` is set
  // to the number of busy slots.
  [[nodiscard]] int free_slot(std::uint64_t smem_bytes, unsigned& busy) const;
  // Takes slot `slot` and the CTA's shared memory for `work` (the dispatcher, at once).
  void reserve(unsigned slot, const CtaWork& work);
  // Starts the CTA reserved in `slot` (the dispatcher, after the dispatch cycles).
  void start(unsigned slot);

  [[nodiscard]] const stats::Group& statistics() const { return stats_; }
  // Registers the SM's track on `timeline` (null: stop recording).
  void set_timeline(stats::Timeline* timeline);

  Socket socket{"socket"};

 private:
  // The line requests of one issue() call, as the issue thread sends them.
  struct Batch {
    std::size_t pending = 0;                            // requests not yet sent
    sc_core::sc_time done = sc_core::SC_ZERO_TIME;      // last data arrived / store acknowledged
    sc_core::sc_time port_end = sc_core::SC_ZERO_TIME;  // the port is free of the batch
  };
  struct Slot {
    sc_core::sc_event start;
    sc_core::sc_event sent;  // the issue thread sent one of the slot's requests
    bool busy = false;
    CtaWork work;
    CtaState state;
    std::vector<Range> ranges;
    std::vector<Range> requests;
    std::vector<Batch> ready;  // per k-step: its loads
    Batch stores;
  };
  // One line request for the issue thread (bytes 0: an empty batch's marker).
  struct Request {
    tlm::tlm_command cmd = tlm::TLM_READ_COMMAND;
    std::uint64_t addr = 0;
    std::uint64_t bytes = 0;
    Slot* slot = nullptr;
    Batch* batch = nullptr;
  };

  void slot_thread(unsigned slot);
  // Runs the slot's CTA; returns when its stores are issued, with the time the last one is
  // acknowledged (absolute) in `acked`.
  void run_cta(Slot& slot, std::uint64_t& read, std::uint64_t& written, sc_core::sc_time& acked);
  // Queues line requests for `slot.ranges` to the SM's port as `batch` (does not wait).
  void issue(Slot& slot, tlm::tlm_command cmd, std::uint64_t& bytes, Batch& batch);
  // Inside the slot's thread: waits until every request of `batch` is sent.
  void wait_sent(Slot& slot, const Batch& batch);
  // The port: sends the queued requests in order, one port slot after another.
  void issue_thread();
  [[nodiscard]] std::uint64_t cycles(const sc_core::sc_time& t) const;

  const HwConfig& hw_;
  sc_core::sc_time period_;
  SmClient& client_;
  std::deque<Slot> slots_;
  std::uint64_t smem_used_ = 0;
  unsigned resident_ = 0;
  DmaClient dma_;                       // the load/store port's requests
  BoundedChannel<Request> requests_q_;  // to the issue thread (unbounded: the CTAs never block)
  sc_core::sc_time pipe_free_ = sc_core::SC_ZERO_TIME;  // math pipe (tensor cores / FMA)
  sc_core::sc_time resident_since_ = sc_core::SC_ZERO_TIME;
  stats::Group stats_;
  std::string track_name_;
  stats::Timeline* timeline_ = nullptr;
  std::uint32_t track_ = 0;
  stats::Counter busy_cycles_, tensor_cycles_, fma_cycles_, macs_, ctas_, bytes_read_,
      bytes_written_, requests_;
};

}  // namespace octasim::ppu
