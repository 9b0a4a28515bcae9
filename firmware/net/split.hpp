// Split H (NVDLA's programming guide, "Split H"): a convolution whose input cube does not fit the
// CBUF's data banks runs as several hardware layers, each over a band of output rows. Band b
// computes output rows [out_row, out_row + out_rows) of the one output surface (its dst is the
// output surface moved down by out_row lines) from input rows [in_row, in_row + in_rows) (its src
// the input surface moved down by in_row lines), with top padding only where its first window
// reaches above the input (the first band) and bottom padding only where its last window reaches
// below it (the last band). Consecutive bands' input rows overlap by max(R' - stride_y, 0) lines
// (R' the dilated kernel height), as the guide requires. The flying SDP (bias, requantization,
// ReLU) needs nothing per band: it works per output element.
//
// The bands are as large as the data banks allow (conv_cbuf_budget, firmware/dla: the same
// arithmetic plan_conv checks) and balanced: B = ceil(out_height / rows per band) bands, the
// first out_height % B of them one row taller. Two CBUF plans are weighed:
//   all weights    the data get the banks every kernel leaves; the weights are fetched once, by
//                  the first band, and stay in CBUF (SKIP_WEIGHT_RLS on every band but the last,
//                  WEIGHT_REUSE on every band but the first; DATA_BANK the same for all, so the
//                  weights do not move)
//   one group      the data get the banks one kernel group leaves (partial weights): larger bands,
//                  but every band fetches all the weights again
// and the one that reads fewer bytes (input lines of every band, overlap included, plus weight
// fetches) is taken; all weights on a tie, as the guide prefers.
//
// Not split: Winograd layers, compressed weights, multi-batch layers and a convolution whose SDP
// output goes to PDP on the fly (they are refused when they do not fit).
#pragma once

#include <cstdint>
#include <vector>

#include "firmware/dla/conv.hpp"

namespace octasim::firmware::net {

struct ConvBand {
  ConvLayer layer;                          // the hardware layer of this band
  std::uint32_t out_row = 0, out_rows = 0;  // output rows it writes
  std::uint32_t in_row = 0, in_rows = 0;    // input rows it reads
};

// Whether the layer's input fits the CBUF beside one kernel group (plan_conv's condition): it then
// runs as one hardware layer.
[[nodiscard]] bool conv_input_fits(const ConvLayer& layer, const ConvHardware& hw);

// The hardware layers computing `layer`: the layer itself when its input fits, else its bands, in
// order of their rows. Throws FirmwareError when it cannot be split: one output row's input lines
// and one kernel group exceed the CBUF, or a mode listed above. Each band passes plan_conv.
[[nodiscard]] std::vector<ConvBand> split_conv(const ConvLayer& layer, const ConvHardware& hw);

}  // namespace octasim::firmware::net
