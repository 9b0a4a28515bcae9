// SDP -> PDP on the fly at cycle level: the stream of SDP's output bytes a flying PDP consumes
// instead of SDP's WDMA writing them and PDP's RDMA reading them back. SDP (or the convolution
// pipeline's SDP) delivers each piece of output when it leaves its pipeline; PDP's input side
// waits until the bytes its next step needs have been delivered, so PDP runs at SDP's rate.
#pragma once

#include <cstdint>

#include <systemc>

namespace octasim::dla {

class FlyingLink {
 public:
  FlyingLink() = default;
  FlyingLink(const FlyingLink&) = delete;
  FlyingLink& operator=(const FlyingLink&) = delete;

  // A new SDP -> PDP operation starts: nothing delivered yet.
  void reset() { delivered_ = 0; }
  // SDP hands `bytes` more of its output to PDP (now).
  void deliver(std::uint64_t bytes) {
    delivered_ += bytes;
    delivered_ev_.notify(sc_core::SC_ZERO_TIME);
  }
  // PDP waits (in a SystemC thread) until `total` bytes have been delivered.
  void wait_for(std::uint64_t total) {
    while (delivered_ < total) sc_core::wait(delivered_ev_);
  }
  [[nodiscard]] std::uint64_t delivered() const { return delivered_; }

 private:
  std::uint64_t delivered_ = 0;
  sc_core::sc_event delivered_ev_;
};

}  // namespace octasim::dla
