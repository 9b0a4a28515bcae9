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
  const auto place_slices = [&] {
    for (const auto& [name, slice] : plan_.slices) {
      if (layouts_.count(name) == 0 && layouts_.count(slice.source) != 0) {
        layouts_[name] = slice_layout(name, slice).second;
      }
    }
  };
  // Slices of tensors (and Concats) laid out so far, Concats whose inputs are, until none is new.
  const auto settle = [&] {
    do {
      place_slices();
    } while (place_concats());
  };
  layouts_[plan_.input] = dense(plan_.input);
  settle();
  for (const PlannedLayer& l : plan_.layers) {
    const ChannelLayout& in = layouts_.at(l.input);
    const bool padded = !in.map.empty();
    const std::string who = layer_nodes_label(g_, l);
    ChannelLayout out = dense(l.output);
    switch (l.kind) {
      case LayerKind::kConv:
        break;  // zero weight rows at the unused channels; the output is dense
      case LayerKind::kPpu:
        break;  // the kNode kernel reads through any channel map; writes a dense output
      case LayerKind::kPool:
      case LayerKind::kBdma:  // copies atoms: every channel where it was
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
      case LayerKind::kRubik:
        if (padded) {
          throw GraphError(fmt::format(
              "{}: its input '{}' has unused channels (between the blocks of a Concat, or "
              "around a channel slice, where counts or offsets are not multiples of the atom's {} "
              "channels), which {} would mix in: not supported",
              who, l.input, channels_per_atom(elem(), atom()), layer_engine(l.kind)));
        }
        break;
    }
    layouts_[l.output] = out;
    settle();
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

std::pair<std::uint32_t, Builder::ChannelLayout> Builder::slice_layout(
    const std::string& name, const PlannedSlice& slice) const {
  const std::uint32_t cpa = channels_per_atom(elem(), atom());
  const ChannelLayout& src = layouts_.at(slice.source);
  const auto physical = [&](std::uint32_t c) { return src.map.empty() ? c : src.map[c]; };
  const std::uint32_t channels = plan_.cubes.at(name).channels;
  // The window starts at the atom holding the slice's first channel (source layouts are
  // increasing: a Concat's blocks in order, a slice's channels in order).
  const std::uint32_t first_atom = physical(slice.first) / cpa;
  ChannelLayout out;
  bool identity = true;
  for (std::uint32_t j = 0; j < channels; ++j) {
    out.map.push_back(physical(slice.first + j) - first_atom * cpa);
    identity = identity && out.map.back() == j;
  }
  out.physical = out.map.back() + 1;
  if (identity) out.map.clear();
  return {first_atom, out};
}

const NetTensor& Builder::slice_tensor(const std::string& name, const PlannedSlice& slice) {
  const NetTensor& src = tensor(slice.source);
  if (src.fold) {
    throw GraphError(fmt::format("{}: '{}' is a folded input: a channel slice cannot read it",
                                 g_.nodes[slice.node].label(), slice.source));
  }
  const auto [first_atom, layout] = slice_layout(name, slice);
  NetTensor t = src;
  t.name = name;
  t.shape = plan_.shapes.at(name);
  t.surface.address += std::uint64_t{first_atom} * src.surface.surface_stride;
  t.surface.channels = layout.physical;
  t.channel_map = layout.map;
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
