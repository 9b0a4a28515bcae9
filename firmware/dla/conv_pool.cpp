#include "firmware/dla/conv_pool.hpp"

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

// The two parts as the registers take them: SDP sends to PDP, PDP pools conv.dst's cube on the fly.
ConvPoolLayer resolve(const ConvPoolLayer& layer) {
  ConvPoolLayer r = layer;
  r.conv.sdp.output_to_pdp = true;
  r.pool.on_the_fly = true;
  r.pool.src = layer.conv.dst;
  if (r.pool.precision != r.conv.precision) {
    throw FirmwareError(
        fmt::format("convolution -> PDP: pooling precision {} differs from the "
                    "convolution's {} (SDP hands its output over as is)",
                    precision_name(r.pool.precision), precision_name(r.conv.precision)));
  }
  return r;
}

}  // namespace

void check_conv_pool(const ConvPoolLayer& layer, const ConvHardware& hw) {
  const ConvPoolLayer r = resolve(layer);
  (void)plan_conv(r.conv, hw);
  (void)pdp_model_params(r.pool, hw.atom_bytes);
}

ConvPoolInterrupts program_conv_pool(Mmio& mmio, const ConvPoolLayer& layer, unsigned group,
                                     const ConvHardware& hw, int pdp_group, int sdp_group,
                                     int rdma_group) {
  const ConvPoolLayer r = resolve(layer);
  check_conv_pool(layer, hw);  // every check before the first write
  ConvPoolInterrupts intr;
  intr.pdp = program_pdp(mmio, r.pool, pdp_group < 0 ? group : static_cast<unsigned>(pdp_group),
                         hw.atom_bytes);
  intr.sdp = program_conv(mmio, r.conv, group, hw, sdp_group, rdma_group);
  return intr;
}

ConvGolden run_conv_pool_model(const ConvPoolLayer& layer, const ConvHardware& hw,
                               models::ops::Memory& mem) {
  ConvPoolLayer r = resolve(layer);
  r.conv.sdp.output_to_pdp = false;  // the golden goes through memory
  const ConvGolden g = run_conv_model(r.conv, hw, mem);
  (void)models::ops::run_pdp_layer(pdp_model_params(r.pool, hw.atom_bytes), mem);
  return g;
}

}  // namespace octasim::firmware
