// The network compiler's choice of Winograd mode for a convolution (Builder::winograd_layer):
// NVDLA's programming guide has a feature input with a 3x3 kernel (after the stride's channel
// extension) use Winograd. octasim takes it where every rule of firmware/dla/conv_winograd.hpp
// holds and the layer fits the CBUF unsplit, at INT8 only:
//   - the options allow it (QuantOptions::winograd, --no-winograd) and the hardware has it;
//   - a float network quantized to INT8 (INT4 codes would leave the transformed weights 4 bits;
//     integer networks are exact INT16 arithmetic, FP16 Winograd is not modelled);
//   - 3x3 kernel, stride 1, no dilation, not the folded first layer, not fully connected;
//   - the output a multiple of 4 and at least 8 in width and height, one band (plan_conv and
//     split_conv decide: a layer they refuse in Winograd mode stays direct);
//   - faster by the compiler's cost model (fold.hpp conv_cost: MAC cycles plus the bytes CDMA
//     reads, weights 16/9 larger in Winograd), which keeps DRAM-bound layers direct.
// The weights are then quantized in the transformed domain (weights.hpp winograd_conv_weights)
// and PRA truncates the transformed input by choose_pra_truncate's shift for the input's largest
// code, so no transformed input saturates (INT8 codes up to 127: a shift of 2).
#include <fmt/core.h>

#include "firmware/dla/conv_winograd.hpp"
#include "firmware/net/builder.hpp"
#include "firmware/net/split.hpp"

namespace octasim::firmware::net::detail {

std::optional<ConvLayer> Builder::winograd_layer(const PlannedLayer& l, const NetTensor& in,
                                                 const ConvLayer& conv) const {
  const ConvAttrs& a = l.conv;
  if (!options_.winograd || !prog_.hw.winograd || integer_ ||
      options_.precision != NetPrecision::kInt8 || in.fold || a.fully_connected ||
      a.kernel_w != 3 || a.kernel_h != 3 || a.stride_x != 1 || a.stride_y != 1 ||
      a.dilation_x != 1 || a.dilation_y != 1 || conv.batches != 1) {
    return std::nullopt;
  }
  ConvLayer w = conv;
  w.winograd = true;
  const auto max_input = static_cast<std::uint32_t>(
      std::max(in.quant.max_code(), conv.pad_value < 0 ? -conv.pad_value : conv.pad_value));
  w.pra_truncate = choose_pra_truncate(max_input, conv.precision);
  try {
    if (split_conv(w, prog_.hw).size() != 1) return std::nullopt;
  } catch (const FirmwareError&) {
    return std::nullopt;  // e.g. an output not a multiple of 4, or an input that needs bands
  }
  // Winograd trades 2.25x fewer MAC cycles for 16/9 the weight bytes: taken where the modelled
  // cost (fold.hpp conv_cost) is lower.
  const double bandwidth = cdma_read_bytes_per_cycle(hw_);
  const ConvCost wino = conv_cost(w, prog_.hw, bandwidth);
  const ConvCost direct = conv_cost(conv, prog_.hw, bandwidth);
  if (!wino.feasible || (direct.feasible && direct.cycles <= wino.cycles)) return std::nullopt;
  return w;
}

}  // namespace octasim::firmware::net::detail
