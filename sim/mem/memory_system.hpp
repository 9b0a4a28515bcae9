// The shared memory system behind every DMA client (the DLA's engines, the PPU's SMs), as one
// TLM-2.0 target: a crossbar, L2 slices inside memory partitions, and one DRAM channel per
// partition. Each initiator socket bound to `socket` is a crossbar port.
//
// Timing is computed inside b_transport by resource reservation (no per-cycle processes): every
// resource (a crossbar port direction, an L2 slice's data port, a DRAM bank, a channel's data bus)
// holds the time it is next free; a request takes a resource at max(its ready time, that time) and
// holds it for its transfer. Requests reserve in call order, which is time order because every
// client issues at the current simulation time (DmaClient; the PPU front end alike).
//
//   crossbar: xbar_latency cycles each way; a port moves xbar_port_bytes_per_cycle (0: no limit),
//     write data on the request path, read data on the response path (store and forward).
//   address map: granule g = addr / mem_interleave_bytes goes to global slice
//     g % (mem_partitions * l2_slices_per_partition), partition = slice / l2_slices_per_partition;
//     with no L2, partition = g % mem_partitions. Requests split at L2 line boundaries (granule
//     boundaries with no L2).
//   L2 slice: set-associative, LRU, write-back, write-allocate; a line keeps a byte-valid mask. A
//     write miss allocates without fetching (whole or partial line): only the written bytes become
//     valid. A read hits when every requested byte is valid; a read of a present line with missing
//     bytes fetches the line (counted as a miss) and merges. Evicting a dirty line writes the whole
//     line back (masked). Hits take l2_hit_latency, then the slice data port at l2_bytes_per_cycle.
//   DRAM channel (per partition): the channel-local address (partition bits removed) maps to
//     row_index = local / dram_row_bytes, bank = row_index % dram_banks, row = row_index /
//     dram_banks (consecutive rows interleave across banks). Each dram_burst_bytes burst is one
//     column access: open row hit = CL, bank closed = tRCD + CL, row conflict = tRP + tRCD + CL
//     with the precharge no earlier than tRAS after the row's activation. The channel data bus
//     moves dram_bytes_per_cycle (a request's bursts together take ceil(bytes / bytes_per_cycle)
//     cycles: partial bursts move only their bytes). Reads complete primary_memif_latency cycles
//     after their data crossed the bus; writes are acknowledged dram_write_latency after theirs.
//
// CV-SRAM (configurations with a secondary memory interface): a request whose DMA address is in
// the CV-SRAM (bit 63, sim/core/device_memory.hpp) is the DLA's SRAMIF traffic: it goes to
// mem::CvSramPort (cvsram_port.hpp), not through the crossbar, L2 or DRAM, and counts in
// <name>.cvsram only. Without one, such a request goes to DRAM at the same address, as
// NVDLA's hardware without SECONDARY_MEMIF has only the MCIF.
//
// With 1 partition, no L2, no crossbar cost, 1 bank and zero bank timing (the nv_* configurations)
// this is exactly the single fixed-latency DRAM bus octasim's DLA was calibrated on.
//
// Reads return the image's bytes; writes carry timing only — a unit's results reach the image
// when it completes (see OverlayMemory).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <systemc>
#include <tlm>

#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/core/stats.hpp"

namespace octasim {

namespace mem {
class CvSramPort;
class L2Slice;
class DramChannel;
}  // namespace mem

class MemorySystem final : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<MemorySystem> socket{"socket"};

  // Statistics groups are named after the module's basename: <name>.xbar, <name>.l2.slice<i>,
  // <name>.dram.ch<i> (soc::Soc names it "mem").
  // `cvsram`: the CV-SRAM's image when hw.dla.secondary_memif (null: none; requests to it then
  // fail with an address error).
  MemorySystem(const sc_core::sc_module_name& name, const HwConfig& hw, MemoryImage& image,
               const sc_core::sc_time& clock_period, MemoryImage* cvsram = nullptr);
  ~MemorySystem() override;
  MemorySystem(const MemorySystem&) = delete;
  MemorySystem& operator=(const MemorySystem&) = delete;

  // DRAM traffic summed over the channels (with no L2: the clients' traffic).
  [[nodiscard]] std::uint64_t bytes_read() const;
  [[nodiscard]] std::uint64_t bytes_written() const;
  // DRAM data-bus busy cycles summed over the channels.
  [[nodiscard]] std::uint64_t busy_cycles() const;
  // Peak DRAM bytes per cycle: mem_partitions x dram_bandwidth().
  [[nodiscard]] unsigned bytes_per_cycle() const { return bytes_per_cycle_; }
  // The secondary memory interface, or null when the configuration has none.
  [[nodiscard]] const mem::CvSramPort* cvsram() const { return cvsram_.get(); }
  // The counter groups: the crossbar, each L2 slice, each DRAM channel, the CV-SRAM port.
  [[nodiscard]] std::vector<const stats::Group*> statistics() const;
  // Records every DRAM data-bus transfer into `timeline` (null: stop).
  void set_timeline(stats::Timeline* timeline);
  // Adds dram.bytes (DRAM bytes moved so far) and dram.bus_busy_cycles to a VCD trace file and
  // starts driving them. Before the first sc_start.
  void trace_signals(sc_core::sc_trace_file* file);

  // The address map (for tests and reports).
  struct Route {
    unsigned partition;
    unsigned slice;  // global L2 slice; equals partition when there is no L2
  };
  [[nodiscard]] Route route(std::uint64_t addr) const;
  [[nodiscard]] unsigned partitions() const { return partitions_; }
  [[nodiscard]] unsigned l2_slices() const { return static_cast<unsigned>(slices_.size()); }
  [[nodiscard]] const stats::Group& xbar_statistics() const { return xbar_stats_; }
  [[nodiscard]] const mem::L2Slice& l2_slice(unsigned slice) const { return *slices_.at(slice); }
  [[nodiscard]] const mem::DramChannel& dram_channel(unsigned channel) const {
    return *channels_.at(channel);
  }
  [[nodiscard]] const stats::Group& l2_statistics(unsigned slice) const;
  [[nodiscard]] const stats::Group& dram_statistics(unsigned channel) const;

 private:
  void b_transport(int initiator, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  // Returns the tick the piece's data is at the slice boundary (read) or acknowledged (write).
  std::uint64_t access_piece(std::uint64_t ready, std::uint64_t addr, std::uint64_t len,
                             bool is_read);
  void update_signals();

  MemoryImage& image_;
  std::uint64_t period_;  // ticks (sc_time::value) per cycle
  unsigned partitions_;
  unsigned interleave_;
  unsigned slices_per_partition_;
  unsigned line_bytes_;
  unsigned bytes_per_cycle_;
  std::uint64_t xbar_latency_;
  unsigned port_bytes_per_cycle_;
  struct Port {
    std::uint64_t request_free = 0;   // ticks
    std::uint64_t response_free = 0;  // ticks
  };
  std::vector<Port> ports_;
  std::vector<std::unique_ptr<mem::L2Slice>> slices_;
  std::vector<std::unique_ptr<mem::DramChannel>> channels_;
  std::unique_ptr<mem::CvSramPort> cvsram_;
  stats::Group xbar_stats_;
  stats::Counter reads_, writes_, client_bytes_read_, client_bytes_written_, port_wait_cycles_;
  sc_core::sc_signal<sc_dt::uint64, sc_core::SC_UNCHECKED_WRITERS> bytes_signal_{"bytes"};
  sc_core::sc_signal<sc_dt::uint64, sc_core::SC_UNCHECKED_WRITERS> busy_signal_{"bus_busy_cycles"};
  bool drive_signals_ = false;
};

}  // namespace octasim
