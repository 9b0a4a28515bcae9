// PDP + PDP_RDMA register decode: what run_pdp / run_pdp_on_the_fly (functional.hpp) hand the
// timing model in OpResult::descriptor.
#pragma once

#include <cstdint>

#include "models/ops/pdp.hpp"
#include "sim/dla/functional.hpp"

namespace octasim::dla {

// A PDP operation's registers decoded once (OpResult::descriptor of a PDP operation): the pooling
// layer as the registers program it (`layer`; for a flying PDP the functional op reads the same
// layer from SDP's output cube instead of the PDP_RDMA source surface) and whether PDP pools
// SDP's output on the fly (D_OPERATION_MODE_CFG.FLYING_MODE=ON_FLYING). The timing plan
// (plan_pdp) reads it.
struct PdpDescriptor final : OperationDescriptor {
  PdpDescriptor(const models::ops::PdpLayerParams& decoded, bool on_the_fly)
      : layer(decoded), flying(on_the_fly) {}
  models::ops::PdpLayerParams layer;
  bool flying = false;
  // The width splits PDP walks (D_OPERATION_MODE_CFG.SPLIT_NUM + 1).
  [[nodiscard]] std::uint32_t splits() const { return layer.split_num + 1; }
  // Bytes of one input element (D_DATA_FORMAT.INPUT_DATA: INT8 1, INT16 and FP16 2).
  [[nodiscard]] unsigned input_bytes_per_element() const {
    return models::ops::pdp_element_bytes(layer.cfg.precision);
  }
};

}  // namespace octasim::dla
