// Concat in the network compiler's lowering (builder.hpp): no layer. Each input of a Concat lives
// inside the Concat's surface, so its producer writes there directly (NVDLA's compilers do the
// same). A producer can start writing at channel k only when k is a multiple of the atom's
// channels C' (the surface is a stack of C'-channel surfaces: format.rst), so input i starts at
// the first multiple of C' after input i-1's channels; when a count is not a multiple of C' (for
// GoogLeNet's inception 4a on nv_full INT8: 192, 208, 48, 64) the Concat's surface has unused
// channels between the blocks — the producers' padding lanes, which they write as zeros — and
// the tensor carries the map logical channel -> surface channel (NetTensor::channel_map).
// Readers honour it: a CONV's weights get zero rows at the unused channels (weights.hpp), PDP
// and SDP work channel by channel and keep the layout (their per-channel operands spread over
// it), the host reads a graph output through the map (runtime.hpp); CDP (LRN mixes neighbouring
// channels) and the PPU's softmax refuse it.
#include <fmt/core.h>

#include "firmware/net/builder.hpp"

namespace octasim::firmware::net::detail {

void Builder::plan_layouts() {
  const auto dense = [&](const std::string& t) {
    return ChannelLayout{plan_.cubes.at(t).channels, {}};
  };
  // A channel slice is dense (slice_tensor refuses one of a padded layout).
  const auto place_slices = [&] {
    for (const auto& [name, slice] : plan_.slices) {
      if (layouts_.count(name) == 0 && layouts_.count(slice.source) != 0) {
        layouts_[name] = dense(name);
      }
    }
  };
  layouts_[plan_.input] = dense(plan_.input);
  place_slices();
  while (place_concats()) {
  }
  for (const PlannedLayer& l : plan_.layers) {
    const ChannelLayout& in = layouts_.at(l.input);
    const bool padded = !in.map.empty();
    const std::string who = layer_nodes_label(g_, l);
    ChannelLayout out = dense(l.output);
    switch (l.kind) {
      case LayerKind::kConv:
        break;  // zero weight rows at the unused channels; the output is dense
      case LayerKind::kPool:
        out = in;
        break;
      case LayerKind::kSdp:
        if (!l.sdp.operand.empty() && !g_.is_constant(l.sdp.operand)) {
          const ChannelLayout& e = layouts_.at(l.sdp.operand);
          if (e.physical != in.physical || e.map != in.map) {
            throw GraphError(fmt::format(
                "{}: its operands '{}' and '{}' lay their channels out differently (a Concat's "
                "padded layout on one side): not supported",
                who, l.input, l.sdp.operand));
          }
        }
        out = in;
        break;
      case LayerKind::kLrn:
      case LayerKind::kSoftmax:
        if (padded) {
          throw GraphError(fmt::format(
              "{}: its input '{}' has unused channels between the blocks of a Concat (their "
              "counts are not multiples of the atom's {} channels), which {} would mix in: not "
              "supported",
              who, l.input, channels_per_atom(elem(), atom()), layer_engine(l.kind)));
        }
        break;
    }
    layouts_[l.output] = out;
    place_slices();
    while (place_concats()) {
    }
  }
}

bool Builder::place_concats() {
  const std::uint32_t cpa = channels_per_atom(elem(), atom());
  bool placed = false;
  for (const auto& [name, c] : plan_.concats) {
    if (layouts_.count(name) != 0) continue;
    const bool ready = std::all_of(c.inputs.begin(), c.inputs.end(),
                                   [&](const std::string& in) { return layouts_.count(in) != 0; });
    if (!ready) continue;
    ChannelLayout out;
    std::uint32_t offset = 0;
    bool identity = true;
    for (const std::string& in : c.inputs) {
      const ChannelLayout& k = layouts_.at(in);
      offset = (offset + cpa - 1) / cpa * cpa;
      offsets_[in] = offset;
      const std::uint32_t logical = plan_.cubes.at(in).channels;
      for (std::uint32_t ch = 0; ch < logical; ++ch) {
        out.map.push_back(offset + (k.map.empty() ? ch : k.map[ch]));
        identity = identity && out.map.back() == out.map.size() - 1;
      }
      offset += k.physical;
    }
    out.physical = offset;
    if (identity && out.physical == out.map.size()) out.map.clear();
    layouts_[name] = std::move(out);
    placed = true;
  }
  return placed;
}

const std::string& Builder::storage(const std::string& name) const {
  const auto slice = plan_.slices.find(name);
  if (slice != plan_.slices.end()) return storage(slice->second.source);
  const auto it = plan_.concat_parent.find(name);
  return it == plan_.concat_parent.end() ? name : storage(it->second);
}

const NetTensor& Builder::slice_tensor(const std::string& name, const PlannedSlice& slice) {
  const NetTensor& src = tensor(slice.source);
  const std::string who = g_.nodes[slice.node].label();
  const std::uint32_t channels = plan_.cubes.at(name).channels;
  const std::uint32_t cpa = channels_per_atom(src.precision, atom());
  if (!src.channel_map.empty() || src.fold) {
    throw GraphError(fmt::format(
        "{}: '{}' has a {} layout; a channel slice needs its channels dense on the surface", who,
        slice.source, src.fold ? "folded input" : "padded (Concat) channel"));
  }
  if (slice.first % cpa != 0) {
    throw GraphError(fmt::format(
        "{}: {} channels [{}, {}) of '{}' start at channel {}, not on an atom boundary ({} "
        "channels of {} on {}): a channel slice is a surface inside its input's from a whole "
        "atom on, and no copy is lowered (SDP keeps every channel in its atom lane)",
        who, g_.nodes[slice.node].op_type, slice.first, slice.first + channels, slice.source,
        slice.first, cpa, precision_name(src.precision), hw_.name));
  }
  NetTensor t = src;
  t.name = name;
  t.shape = plan_.shapes.at(name);
  t.surface.address += std::uint64_t{slice.first / cpa} * src.surface.surface_stride;
  t.surface.channels = channels;
  prog_.table[name] = t.quant;
  return tensors_.emplace(name, t).first->second;
}

FeatureSurface Builder::placed_surface(const std::string& name, std::uint32_t physical,
                                       Precision precision) {
  const Cube& c = plan_.cubes.at(name);
  const auto parent = plan_.concat_parent.find(name);
  if (parent == plan_.concat_parent.end()) {
    FeatureSurface s = packed_surface(0, c.width, c.height, physical, atom());
    s.address = activations_.allocate(surface_bytes(s, elem(), atom()));
    return s;
  }
  const NetTensor& whole = tensor(parent->second, precision);
  if (whole.precision != precision) {
    throw GraphError(fmt::format("{}: input '{}' is {}, the concatenation {}",
                                 g_.nodes[plan_.concats.at(parent->second).node].label(), name,
                                 precision_name(precision), precision_name(whole.precision)));
  }
  FeatureSurface s = whole.surface;
  s.address +=
      std::uint64_t{offsets_.at(name) / channels_per_atom(elem(), atom())} * s.surface_stride;
  s.channels = physical;
  return s;
}

std::vector<double> Builder::spread(const std::vector<double>& v, const NetTensor& t,
                                    double hole) const {
  if (t.channel_map.empty()) return v;
  std::vector<double> out(t.surface.channels, hole);
  for (std::size_t c = 0; c < v.size() && c < t.channel_map.size(); ++c) {
    out[t.channel_map[c]] = v[c];
  }
  return out;
}

}  // namespace octasim::firmware::net::detail
