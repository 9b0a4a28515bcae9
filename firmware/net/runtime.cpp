#include "firmware/net/runtime.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <fmt/core.h>

#include "firmware/net/batch.hpp"
#include "firmware/ppu/commands.hpp"

#include "models/numerics/float_format.hpp"
#include "models/ops/bdma.hpp"
#include "models/ops/cdp.hpp"
#include "models/ops/pdp.hpp"
#include "models/ops/sdp.hpp"
#include "models/ops/softmax.hpp"
#include "models/quant/octav.hpp"

namespace octasim::firmware::net {

using models::graph::Tensor;

void load_constants(const NetProgram& p, models::ops::Memory& mem) {
  for (const ConstantBlob& c : p.constants) {
    mem.write(dma_address_of(c.address, c.ram), c.bytes.data(), c.bytes.size());
  }
}

const FeatureSurface* layer_output(const NetLayer& l) {
  return std::visit(
      [](const auto& hw) -> const FeatureSurface* {
        using T = std::decay_t<decltype(hw)>;
        if constexpr (std::is_same_v<T, OctavLayer>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, ConvPoolLayer>) {
          return &hw.pool.dst;
        } else {
          return &hw.dst;
        }
      },
      l.hw);
}

std::vector<std::string> device_records(const NetLayer& l) {
  if (ppu_channel(l.hw)) return {};
  if (std::holds_alternative<ConvPoolLayer>(l.hw)) return {"CONV", "PDP"};
  if (std::holds_alternative<FakeQuantSdpLayer>(l.hw)) return {"SDP"};
  if (const auto* b = std::get_if<BdmaLayer>(&l.hw)) {
    // One operation per copy (each CFG_OP.EN).
    return std::vector<std::string>(bdma_copies(*b).size(), "BDMA");
  }
  return {l.engine};
}

std::uint64_t tensor_bytes(const NetProgram& p, const FeatureSurface& s) {
  return surface_bytes(s, p.input.precision, p.hw.atom_bytes);
}

namespace {

models::ops::ConvPrecision cube_precision(Precision p) {
  return p == Precision::kInt8 ? models::ops::ConvPrecision::kInt8
                               : models::ops::ConvPrecision::kInt16;
}

}  // namespace

namespace {

// Rebases PPU channel `channel` on a push buffer (GET = 0) and rings it (PUT = its size); returns
// the GLB interrupt bit the channel raises at its INTERRUPT command.
unsigned ring_ppu(Mmio& mmio, unsigned channel, std::uint64_t push_buffer, std::uint32_t bytes) {
  namespace F = ppu_format;
  const std::uint32_t base = F::kCsbBase + channel * F::kChannelStride;
  mmio.write32(base + F::kPbBaseLow, static_cast<std::uint32_t>(push_buffer));
  mmio.write32(base + F::kPbBaseHigh, static_cast<std::uint32_t>(push_buffer >> 32));
  mmio.write32(base + F::kPbSize, bytes);
  mmio.write32(base + F::kPut, bytes);
  return F::kInterruptBit0 + channel;
}

}  // namespace

std::vector<std::uint8_t> input_image(const NetProgram& p, const Tensor& batch, std::size_t index) {
  const FeatureSurface& s = p.input.surface;
  // A folded input (fold.hpp): the image is the original cube, folded before it is written.
  const Cube whole = p.input.fold ? p.input.fold->original : Cube{s.width, s.height, s.channels};
  const std::size_t per = std::size_t{whole.width} * whole.height * whole.channels;
  if (batch.f.empty() || batch.shape.empty() || batch.elements() % per != 0 ||
      static_cast<std::size_t>(batch.shape[0]) * per != batch.elements()) {
    throw FirmwareError(fmt::format(
        "the input batch of shape {} does not hold images of {} "
        "elements ({})",
        models::graph::shape_string(batch.shape), per, models::graph::shape_string(p.input.shape)));
  }
  if (index >= static_cast<std::size_t>(batch.shape[0])) {
    throw FirmwareError(fmt::format("image {} of a batch of {}", index, batch.shape[0]));
  }
  models::ops::ConvCube cube(whole.width, whole.height, whole.channels);
  const float* x = &batch.f[index * per];
  const bool fp16 = p.input.precision == Precision::kFp16;
  for (std::size_t i = 0; i < per; ++i) {
    cube.data[tensor_cube_index(p.input, cube, i)] =
        fp16 ? models::fp16_from_float(x[i]) : p.input.quant.code(x[i]);
  }
  if (p.input.fold) cube = fold_input_cube(*p.input.fold, cube);  // zero: INT8 0, FP16 +0
  return conv_feature_image(cube, s, p.input.precision, p.hw.atom_bytes);
}

void write_input(const NetProgram& p, const Tensor& batch, std::size_t index,
                 models::ops::Memory& mem) {
  const std::vector<std::uint8_t> bytes = input_image(p, batch, index);
  mem.write(dma_address_of(p.input.surface), bytes.data(), bytes.size());
}

std::vector<std::int32_t> read_output_codes(const NetProgram& p, std::size_t k,
                                            const models::ops::Memory& mem, std::size_t slot) {
  const NetTensor& t = p.outputs.at(k);
  models::ops::ConvFeatureSurface s = conv_model_surface(t.surface, p.hw.atom_bytes);
  s.base = dma_address_of(t.surface) + slot * t.batch_stride;
  const models::ops::ConvCube cube =
      models::ops::read_feature_cube(s, cube_precision(t.precision), mem);
  std::vector<std::int32_t> out(tensor_elements(t));  // a padded layout's holes left out
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = cube.data[tensor_cube_index(t, cube, i)];
  return out;
}

Tensor read_output(const NetProgram& p, std::size_t k, const models::ops::Memory& mem,
                   std::size_t slot) {
  const std::vector<std::int32_t> codes = read_output_codes(p, k, mem, slot);
  const NetTensor& t = p.outputs[k];
  const double step = t.quant.step();
  std::vector<float> v(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    v[i] = t.precision == Precision::kFp16
               ? models::fp16_to_float(static_cast<std::uint16_t>(codes[i]))
               : static_cast<float>(codes[i] * step);
  }
  return Tensor::floats(t.shape, std::move(v));
}

namespace {

LayerInterrupts count_raises(GroupState& g, LayerInterrupts bits) {
  for (const unsigned bit : bits) {
    if (bit < g.syncpoints.size()) ++g.syncpoints[bit];
  }
  return bits;
}

}  // namespace

LayerInterrupts program_layer(const NetProgram& p, std::size_t i, Mmio& mmio, GroupState& g) {
  const NetLayer& l = p.layers.at(i);
  const unsigned atom = p.hw.atom_bytes;
  unsigned bit = 0;
  if (const auto* conv = std::get_if<ConvLayer>(&l.hw)) {
    const bool rdma = sdp_rdma_used(conv_sdp_layer(*conv), SdpInput::kFlying);
    bit = program_conv(mmio, *conv, g.conv, p.hw, static_cast<int>(g.sdp),
                       static_cast<int>(g.sdp_rdma));
    g.conv ^= 1U;
    g.sdp ^= 1U;
    if (rdma) g.sdp_rdma ^= 1U;
  } else if (const auto* cp = std::get_if<ConvPoolLayer>(&l.hw)) {
    const bool rdma = sdp_rdma_used(conv_sdp_layer(cp->conv), SdpInput::kFlying);
    const ConvPoolInterrupts intr =
        program_conv_pool(mmio, *cp, g.conv, p.hw, static_cast<int>(g.pdp), static_cast<int>(g.sdp),
                          static_cast<int>(g.sdp_rdma));
    g.conv ^= 1U;
    g.sdp ^= 1U;
    g.pdp ^= 1U;
    if (rdma) g.sdp_rdma ^= 1U;
    return count_raises(g, {intr.pdp, intr.sdp});
  } else if (const auto* pdp = std::get_if<PdpLayer>(&l.hw)) {
    bit = program_pdp(mmio, *pdp, g.pdp, atom, static_cast<int>(g.pdp_rdma));
    g.pdp ^= 1U;
    g.pdp_rdma ^= 1U;
  } else if (const auto* cdp = std::get_if<CdpLayer>(&l.hw)) {
    bit = program_cdp(mmio, *cdp, g.cdp, atom);
    g.cdp ^= 1U;
  } else if (const auto* octav = std::get_if<OctavLayer>(&l.hw)) {
    bit = program_octav(mmio, *octav, g.octav);
    g.octav ^= 1U;
  } else if (const auto* sm = std::get_if<PpuSoftmaxLayer>(&l.hw)) {
    bit = ring_ppu(mmio, sm->channel, sm->push_buffer, sm->push_buffer_bytes);
  } else if (const auto* node = std::get_if<PpuNodeLayer>(&l.hw)) {
    bit = ring_ppu(mmio, node->channel, node->push_buffer, node->push_buffer_bytes);
  } else if (const auto* b = std::get_if<BdmaLayer>(&l.hw)) {
    for (const BdmaTransfer& t : bdma_copies(*b)) program_bdma(mmio, t);
    bit = launch_bdma(mmio, g.bdma);
    g.bdma ^= 1U;
  } else if (const auto* r = std::get_if<RubikContract>(&l.hw)) {
    bit = program_rubik(mmio, *r, g.rubik, atom);
    g.rubik ^= 1U;
  } else if (const auto* fq = std::get_if<FakeQuantSdpLayer>(&l.hw)) {
    // Its operands are OCTAV's (written into this group when OCTAV finished).
    bit = program_fake_quant_sdp(mmio, *fq, g.sdp, g.sdp_rdma, atom);
    g.sdp ^= 1U;
    g.sdp_rdma ^= 1U;
  } else {
    bit = program_sdp(mmio, std::get<SdpLayer>(l.hw), g.sdp, atom, static_cast<int>(g.sdp_rdma));
    g.sdp ^= 1U;
    g.sdp_rdma ^= 1U;
  }
  return count_raises(g, {bit});
}

namespace {

// The clip the OCTAV unit computes for `o` on the tensor in `mem` (models::octav with the
// unit's options; the unit keeps it as FP32).
float device_clip(const OctavLayer& o, const NetProgram& p, const models::ops::Memory& mem) {
  const models::ops::ConvCube cube = models::ops::read_feature_cube(
      conv_model_surface(o.src, p.hw.atom_bytes), models::ops::ConvPrecision::kInt8, mem);
  const std::vector<float> v(cube.data.begin(), cube.data.end());
  models::OctavOptions oo;
  oo.bits = o.bits;
  oo.sign = o.is_unsigned ? models::Signedness::kUnsigned : models::Signedness::kSigned;
  oo.init = o.init;
  oo.tolerance = static_cast<double>(o.tolerance);
  oo.max_iterations = o.max_iterations;
  return static_cast<float>(models::octav(v.data(), v.size(), oo).clip);
}

}  // namespace

LayerGolden run_layer_model(const NetProgram& p, std::size_t i, models::ops::Memory& dma_mem,
                            const LayerGolden* previous) {
  // models/ ops address surfaces as the program lays them out.
  PlacedMemory mem(dma_mem, p.placement);
  const NetLayer& l = p.layers.at(i);
  const unsigned atom = p.hw.atom_bytes;
  LayerGolden out;
  if (const auto* conv = std::get_if<ConvLayer>(&l.hw)) {
    const ConvGolden g = run_conv_model(*conv, p.hw, mem);
    out.saturations = g.cacc_saturation + g.sdp_saturation;
  } else if (const auto* cp = std::get_if<ConvPoolLayer>(&l.hw)) {
    const ConvGolden g = run_conv_pool_model(*cp, p.hw, mem);
    out.saturations = g.cacc_saturation + g.sdp_saturation;
  } else if (const auto* pdp = std::get_if<PdpLayer>(&l.hw)) {
    (void)models::ops::run_pdp_layer(pdp_model_params(*pdp, atom), mem);
  } else if (const auto* cdp = std::get_if<CdpLayer>(&l.hw)) {
    models::LutTables tables;
    tables.le = cdp->lut_tables.le;
    tables.lo = cdp->lut_tables.lo;
    const auto r = models::ops::run_cdp_layer(cdp_model_params(*cdp, atom), tables, mem);
    out.saturations = r.stats.out_saturation.value();
  } else if (const auto* octav = std::get_if<OctavLayer>(&l.hw)) {
    out.clip = device_clip(*octav, p, mem);
  } else if (const auto* sm = std::get_if<PpuSoftmaxLayer>(&l.hw)) {
    models::ops::SoftmaxShape shape;
    shape.width = sm->src.width;
    shape.height = sm->src.height;
    shape.channels = sm->src.channels;
    shape.atom_bytes = atom;
    shape.axis = static_cast<models::ops::SoftmaxAxis>(sm->axis);
    const auto place = [](const FeatureSurface& f) {
      return models::ops::SoftmaxSurface{f.address, f.line_stride, f.surface_stride};
    };
    models::ops::run_softmax(shape, place(sm->src), place(sm->dst), mem);
  } else if (const auto* node = std::get_if<PpuNodeLayer>(&l.hw)) {
    models::ops::run_node(node->image, mem);
  } else if (const auto* b = std::get_if<BdmaLayer>(&l.hw)) {
    for (const BdmaTransfer& t : bdma_copies(*b)) {
      models::ops::run_bdma_copy(bdma_model_copy(t), mem, mem);
    }
  } else if (const auto* rubik = std::get_if<RubikContract>(&l.hw)) {
    models::ops::run_rubik(rubik_model_params(*rubik, atom), mem, mem);
  } else if (const auto* fq = std::get_if<FakeQuantSdpLayer>(&l.hw)) {
    // OCTAV ran on this layer's input just before: the same clip.
    out.clip = previous != nullptr
                   ? previous->clip
                   : device_clip(std::get<OctavLayer>(p.layers.at(i - 1).hw), p, mem);
    const auto r = models::ops::run_sdp_layer(
        fake_quant_sdp_model_config(*fq, static_cast<double>(out.clip), atom), mem, nullptr);
    out.saturations = r.stats.out_saturation.value();
  } else {
    const auto r =
        models::ops::run_sdp_layer(sdp_model_config(std::get<SdpLayer>(l.hw), atom), mem, nullptr);
    out.saturations = r.stats.out_saturation.value();
  }
  return out;
}

ImageRun run_image(const NetProgram& p, const Tensor& batch, std::size_t index,
                   models::ops::Memory& device, Mmio& mmio, GroupState& groups,
                   models::ops::Memory& golden, Schedule schedule) {
  write_batch_input(p, batch, index, device);
  program_network(p, mmio, groups, schedule, &device);
  write_batch_input(p, batch, index, golden);
  ImageRun r;
  r.layers = run_network_model(p, golden);
  r.differing_output = p.outputs.size();
  for (std::size_t slot = 0; slot < p.images; ++slot) {
    bool exact = true;
    for (std::size_t k = 0; k < p.outputs.size() && exact; ++k) {
      exact = read_output_codes(p, k, device, slot) == read_output_codes(p, k, golden, slot);
      if (!exact) r.differing_output = std::min(r.differing_output, k);
    }
    r.exact_images += exact ? 1 : 0;
  }
  return r;
}

std::vector<LayerGolden> run_network_model(const NetProgram& p, models::ops::Memory& mem) {
  std::vector<LayerGolden> out;
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    out.push_back(run_layer_model(p, i, mem, out.empty() ? nullptr : &out.back()));
  }
  return out;
}

}  // namespace octasim::firmware::net
