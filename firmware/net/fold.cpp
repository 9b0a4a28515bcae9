// Input channel folding (fold.hpp): the folded layouts, the cost model that chooses one, and the
// Builder's steps that fold the graph input's surface.
#include "firmware/net/fold.hpp"

#include "models/ops/conv_winograd.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "firmware/net/builder.hpp"
#include "firmware/net/split.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::firmware::net {

const char* fold_kind_name(FoldKind k) {
  switch (k) {
    case FoldKind::kNone:
      return "none";
    case FoldKind::kColumns:
      return "columns";
    case FoldKind::kFull:
      return "full";
  }
  return "?";
}

std::string InputFold::describe() const {
  return fmt::format("{}: {}x{}x{} -> {}x{}x{}", fold_kind_name(kind), original.width,
                     original.height, original.channels, folded.width, folded.height,
                     folded.channels);
}

InputFold make_input_fold(FoldKind kind, const Cube& in, const ConvAttrs& a, const Cube& out) {
  if (kind == FoldKind::kNone) throw FirmwareError("input fold: no fold of kind none");
  InputFold f;
  f.kind = kind;
  f.original = in;
  f.kernel_w = a.kernel_w;
  f.kernel_h = a.kernel_h;
  f.stride_x = a.stride_x;
  f.stride_y = a.stride_y;
  f.pad_left = a.pad_left;
  f.pad_top = a.pad_top;
  const bool full = kind == FoldKind::kFull;
  f.folded.width = out.width;
  f.folded.height = full ? out.height : in.height;
  f.folded.channels = (full ? a.kernel_h : 1U) * a.kernel_w * in.channels;
  return f;
}

models::ops::ConvCube fold_input_cube(const InputFold& f, const models::ops::ConvCube& original,
                                      std::int32_t zero) {
  const Cube& o = f.original;
  if (original.width != o.width || original.height != o.height || original.channels != o.channels) {
    throw FirmwareError(fmt::format("input fold: a {}x{}x{} cube for a fold of {}x{}x{}",
                                    original.width, original.height, original.channels, o.width,
                                    o.height, o.channels));
  }
  const bool full = f.kind == FoldKind::kFull;
  const std::uint32_t rows = full ? f.kernel_h : 1;
  models::ops::ConvCube y(f.folded.width, f.folded.height, f.folded.channels);
  for (std::uint32_t i = 0; i < y.height; ++i) {
    for (std::uint32_t dy = 0; dy < rows; ++dy) {
      const std::int64_t row =
          full ? std::int64_t{i} * f.stride_y + dy - std::int64_t{f.pad_top} : std::int64_t{i};
      for (std::uint32_t j = 0; j < y.width; ++j) {
        for (std::uint32_t dx = 0; dx < f.kernel_w; ++dx) {
          const std::int64_t col = std::int64_t{j} * f.stride_x + dx - std::int64_t{f.pad_left};
          const bool inside = row >= 0 && row < o.height && col >= 0 && col < o.width;
          const std::uint32_t base = (dy * f.kernel_w + dx) * o.channels;
          for (std::uint32_t c = 0; c < o.channels; ++c) {
            y.at(j, i, base + c) = inside ? original.at(static_cast<std::uint32_t>(col),
                                                        static_cast<std::uint32_t>(row), c)
                                          : zero;
          }
        }
      }
    }
  }
  return y;
}

void fold_conv_layer(const InputFold& f, ConvLayer& conv, models::ops::ConvWeights& w) {
  const bool matches = conv.kernel_width == f.kernel_w && conv.kernel_height == f.kernel_h &&
                       conv.stride_x == f.stride_x && conv.stride_y == f.stride_y &&
                       conv.pad_left == f.pad_left && conv.pad_top == f.pad_top &&
                       conv.dilation_x == 1 && conv.dilation_y == 1 &&
                       conv.src.width == f.folded.width && conv.src.height == f.folded.height &&
                       conv.src.channels == f.folded.channels && w.kernel_width == f.kernel_w &&
                       w.kernel_height == f.kernel_h && w.channels == f.original.channels;
  if (!matches) {
    throw FirmwareError(fmt::format(
        "input fold ({}): the convolution ({}x{} kernel, stride {}x{}, {}x{}x{} input) is not "
        "the one it was made for (internal)",
        f.describe(), conv.kernel_width, conv.kernel_height, conv.stride_x, conv.stride_y,
        conv.src.width, conv.src.height, conv.src.channels));
  }
  const bool full = f.kind == FoldKind::kFull;
  conv.kernel_width = 1;
  conv.stride_x = 1;
  conv.pad_left = conv.pad_right = 0;
  if (full) {
    conv.kernel_height = 1;
    conv.stride_y = 1;
    conv.pad_top = conv.pad_bottom = 0;
  }
  // (k, r, s, c) keeps its flat index: K x R x 1 x (S C), or K x 1 x 1 x (R S C).
  w.channels = f.folded.channels;
  w.kernel_width = 1;
  if (full) w.kernel_height = 1;
}

ConvCost conv_cost(const ConvLayer& l, const ConvHardware& hw, double read_bytes_per_cycle) {
  ConvCost c;
  std::vector<ConvBand> bands;
  try {
    bands = split_conv(l, hw);
  } catch (const FirmwareError&) {
    return c;
  }
  c.feasible = true;
  const std::uint64_t line =
      std::uint64_t{l.src.width} * hw.atom_bytes * surface_count(l.src, l.precision, hw.atom_bytes);
  c.input_bytes = line * l.src.height;
  for (const ConvBand& b : bands) {
    c.read_bytes += line * b.in_rows;
    if (!b.layer.weight_reuse) c.read_bytes += plan_conv(b.layer, hw).weight_bytes;
  }
  const auto precision = static_cast<models::ops::ConvPrecision>(l.precision);
  const std::uint64_t group =
      models::ops::ConvWeightLayout{hw.mac_atomic_c, hw.mac_atomic_k, precision}.group_kernels();
  const std::uint64_t groups = (l.kernels + group - 1) / group;
  const ConvCubeSize out = conv_output_cube(l);
  if (l.winograd) {
    // One atomic operation per 4 output pixels, one package per 4 of the C' channels
    // (sim/dla/conv_winograd.cpp winograd_schedule).
    c.packages = (models::ops::winograd_channels(l.src.channels, precision) + 3) / 4;
    c.csc_cycles = groups * (std::uint64_t{out.width} * out.height / 4) * c.packages;
  } else {
    c.packages = std::uint64_t{l.kernel_width} * l.kernel_height *
                 ((l.src.channels + hw.mac_atomic_c - 1) / hw.mac_atomic_c);
    c.csc_cycles = groups * out.width * out.height * c.packages;
  }
  c.cycles =
      c.csc_cycles + static_cast<std::uint64_t>(std::ceil(static_cast<double>(c.read_bytes) /
                                                          std::max(read_bytes_per_cycle, 1e-9)));
  return c;
}

double cdma_read_bytes_per_cycle(const HwConfig& hw) {
  const double atom = hw.dla.memory_atomic_size;
  const double request = atom * std::max(hw.dla.primary_memif_max_burst, 1U);
  const double buffered =
      atom * hw.dla.dma_latency_buffer_atoms / std::max(hw.dla.primary_memif_latency, 1U);
  return std::max(1.0, std::min({static_cast<double>(hw.dram_bandwidth()), request, buffered}));
}

namespace {

// The convolution `a` as it would run, without the registers that do not matter to its cost.
ConvLayer cost_probe(const Cube& in, const ConvAttrs& a, const Cube& out, std::uint32_t kernels,
                     Precision precision, const ConvHardware& hw) {
  ConvLayer l = detail::Builder::direct_conv(
      a, precision, packed_surface(0, in.width, in.height, in.channels, hw.atom_bytes), kernels);
  l.dst = packed_surface(0, out.width, out.height, kernels, hw.atom_bytes);
  return l;
}

}  // namespace

FoldChoice choose_input_fold(const Cube& in, const ConvAttrs& a, const Cube& out,
                             std::uint32_t kernels, Precision precision, FoldMode mode,
                             const ConvHardware& hw, double read_bytes_per_cycle) {
  FoldChoice choice;
  const ConvLayer unfolded = cost_probe(in, a, out, kernels, precision, hw);
  choice.cost[0] = conv_cost(unfolded, hw, read_bytes_per_cycle);
  for (FoldKind k : {FoldKind::kColumns, FoldKind::kFull}) {
    const InputFold f = make_input_fold(k, in, a, out);
    ConvLayer folded = unfolded;
    folded.src =
        packed_surface(0, f.folded.width, f.folded.height, f.folded.channels, hw.atom_bytes);
    models::ops::ConvWeights w(kernels, a.kernel_h, a.kernel_w, in.channels);
    w.data.clear();  // only the dimensions
    fold_conv_layer(f, folded, w);
    choice.cost[static_cast<int>(k)] = conv_cost(folded, hw, read_bytes_per_cycle);
  }
  if (mode == FoldMode::kOff) return choice;
  if (mode == FoldMode::kColumns || mode == FoldMode::kFull) {
    const FoldKind k = mode == FoldMode::kColumns ? FoldKind::kColumns : FoldKind::kFull;
    if (choice.cost[static_cast<int>(k)].feasible) choice.chosen = k;
    return choice;
  }
  const ConvCost& base = choice.cost[0];
  const auto better = [](const ConvCost& x, const ConvCost& y) {
    return x.cycles != y.cycles ? x.cycles < y.cycles : x.input_bytes < y.input_bytes;
  };
  const ConvCost* best = base.feasible ? &base : nullptr;
  for (FoldKind k : {FoldKind::kColumns, FoldKind::kFull}) {
    const ConvCost& c = choice.cost[static_cast<int>(k)];
    if (!c.feasible || (base.feasible && c.packages >= base.packages)) continue;
    if (best == nullptr || better(c, *best)) {
      best = &c;
      choice.chosen = k;
    }
  }
  return choice;
}

namespace detail {

std::optional<InputFold> Builder::plan_input_fold() const {
  const std::string& x = plan_.input;
  if (options_.fold == FoldMode::kOff || integer_) return std::nullopt;
  // The graph input must be read by one convolution, and by nothing else.
  const PlannedLayer* reader = nullptr;
  for (const PlannedLayer& l : plan_.layers) {
    // Its input, a fused residual's addend, an SDP operand (layer_reads).
    std::size_t reads = 0;
    for (const std::string& t : layer_reads(g_, l)) reads += plan_.resolve(t) == x ? 1 : 0;
    if (reads == 0) continue;
    if (reader != nullptr || reads > 1) return std::nullopt;
    reader = &l;
  }
  if (reader == nullptr || reader->kind != LayerKind::kConv || reader->input != x) {
    return std::nullopt;
  }
  for (const std::string& out : plan_.outputs) {
    if (plan_.resolve(out) == x) return std::nullopt;
  }
  for (const auto& entry : plan_.slices) {
    if (entry.second.source == x) return std::nullopt;  // a channel slice reads it unfolded
  }
  const ConvAttrs& a = reader->conv;
  const bool plain = !a.fully_connected && !a.integer && a.matrix_bias.empty() &&
                     a.dilation_x == 1 && a.dilation_y == 1 && a.kernel_w * a.kernel_h > 1;
  const auto layout = layouts_.find(x);
  const bool padded = layout != layouts_.end() && !layout->second.map.empty();
  if (!plain || padded || plan_.concat_parent.count(x) != 0 || plan_.transposed.count(x) != 0 ||
      plan_.shapes.at(x).size() < 3) {
    return std::nullopt;
  }
  const Cube& in = plan_.cubes.at(x);
  const Cube& out = plan_.cubes.at(reader->output);
  const FoldChoice choice = choose_input_fold(in, a, out, out.channels, elem(), options_.fold,
                                              prog_.hw, cdma_read_bytes_per_cycle(hw_));
  if (choice.chosen == FoldKind::kNone) return std::nullopt;
  return make_input_fold(choice.chosen, in, a, out);
}

FeatureSurface Builder::folded_input_surface(const InputFold& f, Precision precision) {
  FeatureSurface s = packed_surface(0, f.folded.width, f.folded.height, f.folded.channels, atom());
  s.address = activations_.allocate(surface_bytes(s, precision, atom()));
  return s;
}

}  // namespace detail
}  // namespace octasim::firmware::net
