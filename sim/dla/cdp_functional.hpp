// CDP + CDP_RDMA register decode: what run_cdp (functional.hpp) hands the timing model in
// OpResult::descriptor.
#pragma once

#include "models/ops/cdp.hpp"
#include "sim/dla/functional.hpp"

namespace octasim::dla {

// A CDP operation's registers decoded once (OpResult::descriptor of a CDP operation): the LRN
// layer the functional op ran (models::ops::run_cdp_layer) and the timing plan (plan_cdp) reads.
struct CdpDescriptor final : OperationDescriptor {
  explicit CdpDescriptor(const models::ops::CdpLayerParams& decoded) : layer(decoded) {}
  models::ops::CdpLayerParams layer;
  // Bytes of one input element (D_DATA_FORMAT.INPUT_DATA_TYPE: INT8 1, INT16 2).
  [[nodiscard]] unsigned input_bytes_per_element() const {
    return models::ops::cdp_element_bytes(layer.cfg.precision);
  }
};

}  // namespace octasim::dla
