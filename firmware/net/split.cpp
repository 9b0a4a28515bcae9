// Split H (split.hpp): the bands of a convolution whose input does not fit the CBUF, and the
// Builder's step that puts a CONV layer into the program as its bands.
#include "firmware/net/split.hpp"

#include <algorithm>
#include <optional>

#include <fmt/core.h>

#include "firmware/net/builder.hpp"

namespace octasim::firmware::net {
namespace {

// The unsplit layer's vertical geometry.
struct Rows {
  std::uint32_t in_height = 0, out_height = 0;
  std::uint32_t span = 0;  // the dilated kernel height R'
  std::uint32_t stride = 1;
  std::int64_t pad_top = 0;
};

Rows rows_of(const ConvLayer& l, const ConvCubeSize& out) {
  Rows r;
  r.in_height = l.src.height;
  r.out_height = out.height;
  r.span = (l.kernel_height - 1) * l.dilation_y + 1;
  r.stride = l.stride_y;
  r.pad_top = l.pad_top;
  return r;
}

// Output rows [first, first + count) of band `b` of `bands`: the first out_height % bands bands
// one row taller.
std::pair<std::uint32_t, std::uint32_t> band_outputs(const Rows& r, std::uint32_t bands,
                                                     std::uint32_t b) {
  const std::uint32_t base = r.out_height / bands, taller = r.out_height % bands;
  return {b * base + std::min(b, taller), base + (b < taller ? 1 : 0)};
}

// The input rows the outputs [o0, o0 + n) read, clamped to the input, and the padding lines
// their windows reach above and below it.
struct Window {
  std::uint32_t first = 0, count = 0, pad_top = 0, pad_bottom = 0;
};
Window band_inputs(const Rows& r, std::uint32_t o0, std::uint32_t n) {
  const std::int64_t top = std::int64_t{o0} * r.stride - r.pad_top;
  const std::int64_t bottom = std::int64_t{o0 + n - 1} * r.stride + r.span - 1 - r.pad_top;
  const std::int64_t first = std::max<std::int64_t>(top, 0);
  const std::int64_t last = std::min<std::int64_t>(bottom, std::int64_t{r.in_height} - 1);
  Window w;
  w.first = static_cast<std::uint32_t>(first);
  w.count = static_cast<std::uint32_t>(last - first + 1);
  w.pad_top = static_cast<std::uint32_t>(first - top);
  w.pad_bottom = static_cast<std::uint32_t>(bottom - last);
  return w;
}

// A CBUF plan for the bands: `weight_banks` for the weights, the rest for the data.
struct Candidate {
  bool all_weights = false;
  std::uint32_t bands = 0;
  std::uint64_t data_banks = 0;  // of the band with the most input lines
  std::uint64_t bytes = 0;       // input lines of every band and weight fetches
};

std::optional<Candidate> consider(const Rows& r, const ConvCbufBudget& b, unsigned weight_banks,
                                  bool all_weights, std::uint64_t line_bytes) {
  if (weight_banks >= b.banks) return std::nullopt;
  const std::uint64_t lines = std::uint64_t{b.banks - weight_banks} * b.bank_entries /
                              std::max<std::uint32_t>(b.entries_per_slice, 1);
  if (lines < r.span) return std::nullopt;
  const std::uint64_t per_band = (lines - r.span) / r.stride + 1;
  Candidate c;
  c.all_weights = all_weights;
  c.bands = static_cast<std::uint32_t>((r.out_height + per_band - 1) / per_band);
  c.bytes = all_weights ? b.weight_bytes : b.weight_bytes * c.bands;
  for (std::uint32_t k = 0; k < c.bands; ++k) {
    const auto [o0, n] = band_outputs(r, c.bands, k);
    const Window w = band_inputs(r, o0, n);
    c.bytes += w.count * line_bytes;
    c.data_banks = std::max(c.data_banks, b.data_banks(w.count));
  }
  return c;
}

void refuse_mode(const ConvLayer& l) {
  const char* mode = l.winograd                 ? "Winograd"
                     : l.compressed.has_value() ? "compressed-weight"
                     : l.batches != 1           ? "multi-batch"
                     : l.sdp.output_to_pdp      ? "pooled-on-the-fly"
                                                : nullptr;
  if (mode != nullptr) {
    throw FirmwareError(fmt::format(
        "convolution: the {}x{}x{} input does not fit the CBUF, and a {} layer is not split in "
        "height",
        l.src.width, l.src.height, l.src.channels, mode));
  }
}

}  // namespace

bool conv_input_fits(const ConvLayer& layer, const ConvHardware& hw) {
  const ConvCbufBudget b = conv_cbuf_budget(layer, hw);
  return b.data_banks(std::uint64_t{layer.src.height} * layer.batches) + b.min_weight_banks <=
         b.banks;
}

std::vector<ConvBand> split_conv(const ConvLayer& layer, const ConvHardware& hw) {
  const ConvCubeSize out = check_conv_layer(layer, hw);
  if (conv_input_fits(layer, hw)) {
    (void)plan_conv(layer, hw);
    return {ConvBand{layer, 0, out.height, 0, layer.src.height}};
  }
  refuse_mode(layer);
  const Rows r = rows_of(layer, out);
  const ConvCbufBudget b = conv_cbuf_budget(layer, hw);
  const std::uint64_t line_bytes = std::uint64_t{layer.src.width} * hw.atom_bytes *
                                   surface_count(layer.src, layer.precision, hw.atom_bytes);
  const std::optional<Candidate> all = consider(r, b, b.all_weight_banks, true, line_bytes);
  const std::optional<Candidate> group = consider(r, b, b.min_weight_banks, false, line_bytes);
  if (!all && !group) {
    throw FirmwareError(fmt::format(
        "convolution: one output row reads {} input lines of {} CBUF entries ({} banks) and one "
        "kernel group needs {} banks more, but the CBUF has {}: the {}x{}x{} input cannot be split "
        "in height",
        r.span, b.entries_per_slice, b.data_banks(r.span), b.min_weight_banks, b.banks,
        layer.src.width, layer.src.height, layer.src.channels));
  }
  const Candidate c = !group || (all && all->bytes <= group->bytes) ? *all : *group;
  std::vector<ConvBand> bands;
  for (std::uint32_t k = 0; k < c.bands; ++k) {
    const auto [o0, n] = band_outputs(r, c.bands, k);
    const Window w = band_inputs(r, o0, n);
    ConvBand band{layer, o0, n, w.first, w.count};
    ConvLayer& l = band.layer;
    l.src.address += std::uint64_t{w.first} * layer.src.line_stride;
    l.src.height = w.count;
    l.pad_top = w.pad_top;
    l.pad_bottom = w.pad_bottom;
    l.dst.address += std::uint64_t{o0} * layer.dst.line_stride;
    l.dst.height = n;
    if (l.sdp.ew) {  // an element-wise operand (a fused residual): the band's rows of it
      l.sdp.ew->surface.address += std::uint64_t{o0} * l.sdp.ew->surface.line_stride;
      l.sdp.ew->surface.height = n;
    }
    l.data_banks = static_cast<unsigned>(c.data_banks);
    l.skip_weight_release = c.all_weights && k + 1 < c.bands;
    l.weight_reuse = c.all_weights && k > 0;
    const ConvPlan p = plan_conv(l, hw);
    if (p.out_height != n || p.full_weights != c.all_weights) {
      throw FirmwareError(fmt::format(
          "convolution: band {} of {} plans {} output rows ({} weights), not {} (internal)", k,
          c.bands, p.out_height, p.full_weights ? "all" : "partial", n));
    }
    bands.push_back(band);
  }
  return bands;
}

namespace detail {

void Builder::push_layer(NetLayer out) {
  const auto* conv = std::get_if<ConvLayer>(&out.hw);
  if (conv == nullptr) {
    prog_.layers.push_back(std::move(out));
    return;
  }
  const std::vector<ConvBand> bands = split_conv(*conv, prog_.hw);
  if (bands.size() == 1) {  // the layer, or the input rows its windows read
    out.hw = bands[0].layer;
    prog_.layers.push_back(std::move(out));
    return;
  }
  // Every band computes out_rows of the output's rows: the MACs split in that proportion, the
  // bands' sum exactly the layer's.
  const std::uint64_t out_height = conv->dst.height, macs = out.macs;
  const std::uint64_t network_macs = out.network_macs;
  out.bands = static_cast<unsigned>(bands.size());
  out.whole_output = conv->dst;
  for (std::size_t k = 0; k < bands.size(); ++k) {
    const ConvBand& b = bands[k];
    NetLayer band = out;
    band.hw = b.layer;
    band.band = static_cast<unsigned>(k);
    band.macs = macs * (b.out_row + b.out_rows) / out_height - macs * b.out_row / out_height;
    band.network_macs = network_macs * (b.out_row + b.out_rows) / out_height -
                        network_macs * b.out_row / out_height;
    prog_.layers.push_back(std::move(band));
  }
}

}  // namespace detail
}  // namespace octasim::firmware::net
