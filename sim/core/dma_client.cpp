#include "sim/core/dma_client.hpp"

#include <algorithm>

#include "sim/core/dma.hpp"

namespace octasim {

void DmaClient::apply_due_releases() {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  while (!releases_.empty() && releases_.front().at <= now) {
    held_ -= std::min(held_, releases_.front().atoms);
    releases_.pop_front();
  }
}

std::uint64_t DmaClient::reserve(std::uint64_t atoms) {
  const sc_core::sc_time from = sc_core::sc_time_stamp();
  for (;;) {
    apply_due_releases();
    if (held_ == 0 || held_ + atoms <= params_.buffer_atoms) break;
    if (releases_.empty()) {
      sc_core::wait(release_ev_);
    } else {
      Clocked::wait_until(releases_.front().at);
    }
  }
  held_ += atoms;
  return clock_.to_cycles(sc_core::sc_time_stamp() - from);
}

void DmaClient::release_at(std::uint64_t atoms, const sc_core::sc_time& at) {
  releases_.push_back({at, atoms});
  if (at <= sc_core::sc_time_stamp()) apply_due_releases();
  // A reserve() blocked with nothing scheduled looks again (it waits for a later release's time).
  release_ev_.notify(sc_core::SC_ZERO_TIME);
}

void DmaClient::reset() {
  held_ = 0;
  releases_.clear();
}

sc_core::sc_time DmaClient::transfer(tlm::tlm_command cmd, const std::vector<DmaPiece>& pieces) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  sc_core::sc_time done = now;
  for (const DmaPiece& p : pieces) {
    if (p.bytes > 0) done = std::max(done, dma_transfer(*socket_, cmd, p.addr, p.bytes, scratch_));
  }
  return done;
}

sc_core::sc_time DmaClient::transfer(tlm::tlm_command cmd, std::uint64_t addr,
                                     std::uint32_t bytes) {
  pieces_.assign(1, DmaPiece{addr, bytes});
  return transfer(cmd, pieces_);
}

sc_core::sc_time DmaClient::transfer(tlm::tlm_command cmd, AddressGenerator& walk,
                                     std::uint64_t bytes) {
  walk.next(bytes, pieces_);
  return transfer(cmd, pieces_);
}

std::uint64_t DmaClient::pace(std::uint64_t bytes) {
  const std::uint64_t requests = (bytes + params_.request_bytes - 1) / params_.request_bytes;
  if (requests > 0) sc_core::wait(clock_.cycles(requests));
  return requests;
}

}  // namespace octasim
