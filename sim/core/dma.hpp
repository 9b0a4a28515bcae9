// One DMA transaction through a TLM-2.0 initiator socket: the generic payload every client
// (DmaClient, the PPU's front end) sends to the memory system, always at the current simulation
// time, so the memory system serves requests in time order.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>
#include <tlm>

namespace octasim {

// Sends a `cmd` of `bytes` at `addr`, now, through `socket`; `scratch`
// is the data buffer (the timing models do not use DMA data: results are computed
// functionally). Returns the absolute time the read data arrived or the write was
// acknowledged. An address outside DRAM still costs its time (the functional model reported it).
template <class Socket>
sc_core::sc_time dma_transfer(Socket& socket, tlm::tlm_command cmd, std::uint64_t addr,
                              std::uint32_t bytes, std::vector<std::uint8_t>& scratch) {
  if (scratch.size() < bytes) scratch.resize(bytes);
  tlm::tlm_generic_payload trans;
  trans.set_command(cmd);
  trans.set_address(addr);
  trans.set_data_ptr(scratch.data());
  trans.set_data_length(bytes);
  trans.set_streaming_width(bytes);
  trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->b_transport(trans, delay);
  return sc_core::sc_time_stamp() + delay;
}

}  // namespace octasim
