// One DMA client of a timing model — the piece every engine's DMA shares (CDMA's data and
// weight clients, the RDMA/WDMA of SDP/PDP/CDP, OCTAV's reader):
// - requests go out through the unit's TLM-2.0 initiator socket at the current simulation time
//   (never annotated into the future), so the memory system serves them in time order;
// - issue is paced at one request of `request_bytes` (memory atom x max burst) per cycle;
// - a bounded latency buffer of `buffer_atoms` memory atoms: reserve() blocks while the data
//   requested and not yet released would not fit (an empty buffer takes a request of any size);
//   the unit releases entries when their data leave the buffer — on arrival (CDMA into CBUF),
//   when the datapath consumes them (the stream engines' RDMA), or at a time it computed
//   (OCTAV). Releases take effect in request order (a FIFO), as a hardware buffer frees.
// Requests carry timing only: data values are computed functionally (models/).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include <systemc>
#include <tlm>

#include "sim/core/address_generator.hpp"
#include "sim/core/clocked.hpp"

namespace octasim {

class DmaClient {
 public:
  using Socket = tlm::tlm_initiator_socket<>;

  struct Params {
    unsigned atom_bytes = 8;         // memory_atomic_size
    unsigned request_bytes = 8;      // bytes issued per cycle (atom x primary_memif_max_burst)
    std::uint64_t buffer_atoms = 0;  // latency buffer (dma_latency_buffer_atoms)
  };

  DmaClient(Socket& socket, const sc_core::sc_time& period, const Params& params)
      : socket_(&socket), clock_(period), params_(params) {}

  [[nodiscard]] const Params& params() const { return params_; }
  // Resizes the latency buffer (between operations: an engine whose read streams each have a
  // buffer of their own holds their sum).
  void set_buffer_atoms(std::uint64_t atoms) { params_.buffer_atoms = atoms; }
  // Memory atoms `bytes` occupy.
  [[nodiscard]] std::uint64_t atoms(std::uint64_t bytes) const {
    return (bytes + params_.atom_bytes - 1) / params_.atom_bytes;
  }

  // Inside a thread: waits until `atoms` more fit in the latency buffer, then holds them.
  // Returns the cycles it waited (the unit's read stall).
  std::uint64_t reserve(std::uint64_t atoms);
  // Frees `atoms` of the oldest held entries at absolute time `at` (now when omitted).
  void release_at(std::uint64_t atoms, const sc_core::sc_time& at);
  void release(std::uint64_t atoms) { release_at(atoms, sc_core::sc_time_stamp()); }
  // Atoms held and not yet released (including releases scheduled for later).
  [[nodiscard]] std::uint64_t held() const { return held_; }
  // Forgets every hold (the unit's operation ended).
  void reset();

  // Sends `pieces` now; returns the absolute time the last read data arrive or the last write
  // is acknowledged. Does not wait.
  sc_core::sc_time transfer(tlm::tlm_command cmd, const std::vector<DmaPiece>& pieces);
  // One request of `bytes` at `addr`.
  sc_core::sc_time transfer(tlm::tlm_command cmd, std::uint64_t addr, std::uint32_t bytes);
  // The data of the last read, when it was one request (CDMA parses the WGS it read).
  [[nodiscard]] const std::uint8_t* data() const { return scratch_.data(); }
  // The next `bytes` of `walk` as one transfer.
  sc_core::sc_time transfer(tlm::tlm_command cmd, AddressGenerator& walk, std::uint64_t bytes);
  // Inside a thread: the issue time of `bytes` — ceil(bytes / request_bytes) cycles, one request
  // per cycle. Returns the cycles.
  std::uint64_t pace(std::uint64_t bytes);

 private:
  struct Release {
    sc_core::sc_time at;
    std::uint64_t atoms;
  };
  void apply_due_releases();

  Socket* socket_;
  Clocked clock_;
  Params params_;
  std::uint64_t held_ = 0;
  std::deque<Release> releases_;  // scheduled, in request order
  sc_core::sc_event release_ev_;
  std::vector<DmaPiece> pieces_;
  std::vector<std::uint8_t> scratch_;
};

}  // namespace octasim
