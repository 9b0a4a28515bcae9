// The DRAM behind the device's memory interface, as a TLM-2.0 target shared by every DMA
// client. Timing: one data bus of HwConfig::dram_bandwidth() bytes per cycle shared by all
// clients in request order; reads return after `primary_memif_latency` cycles plus their transfer,
// writes are acknowledged `dram_write_latency` cycles after their transfer. Reads return the
// image's bytes; DMA writes carry timing only — a unit's results reach the image when it completes
// (see OverlayMemory), which is when software may look at them.
#pragma once

#include <cstdint>

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <systemc>
#include <tlm>

#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/core/stats.hpp"

namespace octasim {

class Dram final : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Dram> socket{"socket"};

  Dram(const sc_core::sc_module_name& name, const HwConfig& hw, MemoryImage& image,
       const sc_core::sc_time& clock_period);
  Dram(const Dram&) = delete;
  Dram& operator=(const Dram&) = delete;

  [[nodiscard]] std::uint64_t bytes_read() const { return bytes_read_.value(); }
  [[nodiscard]] std::uint64_t bytes_written() const { return bytes_written_.value(); }
  [[nodiscard]] std::uint64_t busy_cycles() const { return busy_cycles_.value(); }
  [[nodiscard]] unsigned bytes_per_cycle() const { return bytes_per_cycle_; }
  // The counters behind the accessors above (group named after the module: dla.dram).
  [[nodiscard]] const stats::Group& statistics() const { return stats_; }
  // Records every data-bus transfer into `timeline` (null: stop).
  void set_timeline(stats::Timeline* timeline);
  // Adds dram.bytes (bytes moved so far) and dram.bus_busy_cycles to a VCD trace file and starts
  // driving them. Before the first sc_start.
  void trace_signals(sc_core::sc_trace_file* file);

 private:
  void b_transport(int initiator, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);

  MemoryImage& image_;
  sc_core::sc_time period_;
  unsigned bytes_per_cycle_;
  unsigned read_latency_;
  unsigned write_latency_;
  sc_core::sc_time bus_free_ = sc_core::SC_ZERO_TIME;
  stats::Group stats_;
  stats::Counter bytes_read_, bytes_written_, busy_cycles_, reads_, writes_;
  stats::Timeline* timeline_ = nullptr;
  std::uint32_t bus_track_ = 0;
  sc_core::sc_signal<sc_dt::uint64, sc_core::SC_UNCHECKED_WRITERS> bytes_signal_{"bytes"};
  sc_core::sc_signal<sc_dt::uint64, sc_core::SC_UNCHECKED_WRITERS> busy_signal_{"bus_busy_cycles"};
  bool drive_signals_ = false;
};

}  // namespace octasim
