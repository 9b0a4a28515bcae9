// A grouped convolution (ONNX Conv with group G > 1) group by group, as NVDLA's compilers run it:
// group g's K/G kernels read only its C/G input channels [g C/G, (g+1) C/G) and write output
// channels [g K/G, (g+1) K/G), so each group is a CONV layer of its own with a fraction of the
// dense layer's MACs and weights (the dense expansion multiplies every other channel by zero).
//
// A layer reads and writes whole surfaces of the cube: a DLA feature surface is addressed in atoms
// of C' channels (memory atom / element size: 32 INT8 or 16 FP16/INT16 channels on nv_full, 8 INT8
// on nv_small). Channels [f, f + n) of a surface are a surface of their own when f is a multiple
// of C': address + surface_stride * f / C', the same line and surface strides, n channels. So
//   - a layer's output channels must start at a multiple of C': one group a layer needs K/G a
//     multiple of C' (otherwise blocks, below);
//   - it reads the window of whole atoms around its input channels, [floor(g C/G / C') C',
//     min(ceil((g+1) C/G / C') C', C)), its weights zero on the window's other channels. With C/G
//     a multiple of C' that is exactly its channels; otherwise (AlexNet's conv2 at INT8: groups of
//     48 channels, C' 32) a window of 64 channels in place of the dense layer's 96.
// Groups smaller than an atom (K/G not a multiple of C': a depthwise convolution's groups of one
// channel) run in blocks: block b is the fewest whole groups whose kernels fill whole atoms
// (C' / gcd(K/G, C') groups: C' for a depthwise convolution, the last block possibly fewer), so
// its output channels [b C', (b+1) C') start on an atom; it reads its groups' input channels
// (for a depthwise convolution the same C' channels), widened to whole atoms as above, and its
// weights are block-diagonal: each kernel its group's weights, zero on the block's other groups'
// channels (Builder::group_weights assembles them from each group's own, weights.hpp `group`).
// The dense layer multiplies C kernels by C channels; the blocks C' by C' each, C / C' times
// fewer MACs and weights (full-size mnasnet0_5 at 64x64: device MACs 24 times its network's
// dense, 4 times in blocks; exporter_zoo/README.md).
// The groups run as layers of their own when the windows together are fewer MACs than the dense
// layer's (K/G a multiple of C': fewer channels than G dense layers'; AlexNet's conv2 above), and,
// for blocks, when besides
//   - the dense layer does not fit the CBUF even in bands (split.hpp: one kernel group of a 5x5
//     depthwise convolution takes 16 x 25 x C x 2 bytes at FP16, more than nv_full's 16 banks
//     from C = 640 on; EfficientNet-B0's and MNASNet 1.0's 672- and 1152-channel layers), or
//   - the blocks take fewer of the MAC array's atomic operations (Builder::atomic_operations:
//     mac_atomic_c channels of one kernel group, 64 x 32 INT8 or 64 x 16 FP16 on nv_full) per
//     output pixel and kernel position: a block of C' = 32 INT8 or 16 FP16 channels takes one, the
//     dense layer ceil(C / 64) ceil(C / C'). Blocks win from C = 65 channels on; up to 64 the two
//     tie and the dense layer stays (one layer, no per-layer start). Measured on nv_full's
//     cycle-level device (stride 1, 3x3 unless said, `octasim net --no-fold`, cycles blocks vs
//     dense): 96 channels 16x16: 16819 vs 29513 FP16, 8606 vs 15062 INT8; 144 channels 28x28:
//     72697 vs 197897 FP16, 40606 vs 110134 INT8; 240 channels 8x8 5x5: 28789 vs 102329 FP16,
//     16228 vs 57574 INT8; 128 channels 8x8: 7111 vs 10697 FP16. At the tie the dense layer is
//     faster where the pixels dominate (64 channels 16x16: 10569 vs 11247 FP16, 5558 vs 5784
//     INT8; 48 channels 16x16: 8009 vs 8461 FP16) and slower where its weights do (64 channels
//     4x4: 2753 vs 1679 FP16, 1630 vs 1174 INT8), by at most a few thousand cycles.
// In either case only when:
//   - the options allow it (QuantOptions::conv_groups);
//   - the input and output have the plain channel layout (no Concat padded channel map) and are
//     cubes (not rows), the input not the folded first layer's;
//   - no residual Add is fused into the convolution and the calibration is not octav-device (both
//     keep the dense layer: their SDP stages and clip layers assume one layer per tensor);
//   - the kernel does not cover the whole unpadded input (a fully-connected shape, which --batch
//     runs in multi-batch mode on whole tensors, batch.hpp).
// Each group's layer has its own weights (weights.hpp, `group`), its own SDP stage for its kernels
// (bias and requantization; the output's clip is the tensor's, the same for every group), the
// ONNX nodes' label with "group g/G" after the Conv, and its MACs. Each may run in Winograd mode
// (winograd.cpp) or in bands (split.cpp) as any convolution. A pooling that alone reads the
// output is not fused on the fly (Builder::run): it reads the groups' output from memory.
#include <algorithm>
#include <numeric>

#include <fmt/core.h>

#include "firmware/net/builder.hpp"
#include "firmware/net/split.hpp"

namespace octasim::firmware::net::detail {

namespace {

// The nodes' label (layer_nodes_label) with the layer's groups after the convolution:
// "Conv 'c' group 1/2 + Relu 'r'", or for a block "Conv 'dw' groups 17-32/640".
// `first` and `count`: the layer's ONNX groups.
std::string group_label(const Graph& g, const PlannedLayer& l, unsigned first, unsigned count) {
  std::string s = layer_nodes_label(g, l);
  const std::string which =
      count == 1 ? fmt::format(" group {}/{}", first + 1, l.conv.groups)
                 : fmt::format(" groups {}-{}/{}", first + 1, first + count, l.conv.groups);
  s.insert(g.nodes[l.nodes.at(0)].label().size(), which);
  return s;
}

// Channels [first, first + n) of `s` as a surface of their own (first a multiple of the atom's
// channels `per_atom`).
FeatureSurface channel_window(FeatureSurface s, std::uint32_t first, std::uint32_t n,
                              std::uint32_t per_atom) {
  s.address += std::uint64_t{s.surface_stride} * (first / per_atom);
  s.channels = n;
  return s;
}

}  // namespace

std::vector<Builder::ConvGroup> Builder::conv_groups(const PlannedLayer& l, const NetTensor& in,
                                                     const NetTensor& dst) const {
  const ConvAttrs& a = l.conv;
  const unsigned n = a.groups;
  if (!options_.conv_groups || n <= 1 || !a.residual.empty() || !a.matrix_bias.empty() ||
      a.fully_connected || options_.calibration == ClipCalibration::kOctavDevice || in.fold ||
      !in.channel_map.empty() || !dst.channel_map.empty() || in.rows || dst.rows) {
    return {};
  }
  const bool covers_input = a.kernel_w == in.surface.width && a.kernel_h == in.surface.height &&
                            a.pad_left + a.pad_right + a.pad_top + a.pad_bottom == 0;
  const std::uint32_t channels = in.surface.channels, kernels = dst.surface.channels;
  if (covers_input || channels % n != 0 || kernels % n != 0) return {};
  const std::uint32_t per_atom = channels_per_atom(elem(), atom());
  const std::uint32_t per_group = channels / n, kernels_per_group = kernels / n;
  // The fewest whole groups whose kernels fill whole atoms: 1 when K/G is a multiple of C'.
  const std::uint32_t block = per_atom / std::gcd(kernels_per_group, per_atom);
  const unsigned count = (n + block - 1) / block;
  std::vector<ConvGroup> groups;
  std::uint64_t macs = 0;  // per output pixel and kernel position
  for (unsigned b = 0; b < count; ++b) {
    ConvGroup c;
    c.index = b;
    c.count = count;
    c.first_group = b * block;
    c.group_count = std::min<unsigned>(block, n - c.first_group);
    const std::uint32_t first = c.first_group * per_group, end = first + c.group_count * per_group;
    c.in_first = first / per_atom * per_atom;
    c.in_channels = std::min((end + per_atom - 1) / per_atom * per_atom, channels) - c.in_first;
    c.offset = first - c.in_first;
    c.out_first = c.first_group * kernels_per_group;
    c.out_channels = c.group_count * kernels_per_group;
    macs += std::uint64_t{c.in_channels} * c.out_channels;
    groups.push_back(c);
  }
  if (macs >= std::uint64_t{channels} * kernels) return {};  // no fewer MACs than the dense layer
  if (block == 1 || !dense_runs(l, in, dst)) return groups;
  // Blocks: only when they take fewer of the MAC array's atomic operations than the dense layer.
  std::uint64_t block_ops = 0;
  for (const ConvGroup& c : groups) block_ops += atomic_operations(c.in_channels, c.out_channels);
  if (block_ops >= atomic_operations(channels, kernels)) return {};
  return groups;
}

std::uint64_t Builder::atomic_operations(std::uint64_t channels, std::uint64_t kernels) const {
  const std::uint64_t group_kernels = prog_.hw.mac_atomic_k * channels_per_atom(elem(), atom()) /
                                      channels_per_atom(Precision::kInt8, atom());
  return (channels + prog_.hw.mac_atomic_c - 1) / prog_.hw.mac_atomic_c *
         ((kernels + group_kernels - 1) / group_kernels);
}

bool Builder::dense_runs(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst) const {
  ConvLayer conv = direct_conv(l.conv, elem(), in.surface, dst.surface.channels);
  conv.dst = dst.surface;
  try {
    (void)split_conv(conv, prog_.hw);
    return true;
  } catch (const FirmwareError&) {
    return false;
  }
}

void Builder::lower_conv_groups(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst,
                                const NetLayer& out, const std::vector<ConvGroup>& groups) {
  const std::uint32_t per_atom = channels_per_atom(elem(), atom());
  for (const ConvGroup& group : groups) {
    NetLayer layer = out;
    layer.nodes = group_label(g_, l, group.first_group, group.group_count);
    layer.group = group.index;
    layer.groups = group.count;
    NetTensor window = in;
    window.surface = channel_window(in.surface, group.in_first, group.in_channels, per_atom);
    NetTensor part = dst;
    part.surface = channel_window(dst.surface, group.out_first, group.out_channels, per_atom);
    layer.hw = lower_conv(l, window, part, layer, &group);
    push_layer(std::move(layer));
  }
}

QuantizedWeights Builder::group_weights(
    const ConvGroup& group,
    const std::function<QuantizedWeights(std::optional<unsigned>)>& weights) {
  if (group.group_count == 1) return weights(group.first_group);
  std::vector<QuantizedWeights> parts;
  std::uint32_t channels = 0;
  for (unsigned g = 0; g < group.group_count; ++g) {
    parts.push_back(weights(group.first_group + g));
    channels += parts.back().codes.channels;
  }
  const models::ops::ConvWeights& first = parts.front().codes;
  QuantizedWeights w;
  w.codes = models::ops::ConvWeights(0, first.kernel_height, first.kernel_width, channels);
  std::uint32_t offset = 0;  // the part's first channel in the block
  for (const QuantizedWeights& p : parts) {
    std::vector<std::uint32_t> map(p.codes.channels);
    std::iota(map.begin(), map.end(), offset);
    offset += p.codes.channels;
    const models::ops::ConvWeights spread = spread_input_channels(p.codes, map, channels);
    w.codes.kernels += spread.kernels;
    w.codes.data.insert(w.codes.data.end(), spread.data.begin(), spread.data.end());
    w.scales.insert(w.scales.end(), p.scales.begin(), p.scales.end());
    w.bias.insert(w.bias.end(), p.bias.begin(), p.bias.end());
  }
  return w;
}

}  // namespace octasim::firmware::net::detail
