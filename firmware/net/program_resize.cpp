// Nearest upsampling on BDMA (program.hpp BdmaLayer). A pixel of one C' surface is one atom
// (format.rst), so output pixel (x, y) = input pixel (x / f_w, y / f_h) is, for each phase
// (dy, dx), a strided copy: lines of one atom read from consecutive atoms and written to every
// f_w-th one from atom dx, surfaces stepping one input line and f_h output lines from line dy.
// Where both surfaces are packed, input line r of C' surface s is line s * H + r of one long
// column of lines (and output line (s * H + r) * f_h + dy likewise), so one copy per phase covers
// every C' surface: f_h x f_w copies in one launch.
// DepthToSpace (DCR) on Rubik's contract mode (program.hpp RubikContract): channel group
// g = by b + bx of input pixel (x, y) is output pixel (x b + bx, y b + by), each group's C'
// surfaces moving whole.
#include <fmt/core.h>

#include "firmware/net/builder.hpp"

namespace octasim::firmware::net {

namespace {

BdmaRam bdma_ram(Ram r) {
  return r == Ram::kCv ? BdmaRam::kCvSram : BdmaRam::kMc;
}

}  // namespace

std::vector<BdmaTransfer> bdma_copies(const BdmaLayer& l) {
  const unsigned atom = l.atom_bytes;
  if (atom % 32 != 0) {
    throw FirmwareError(fmt::format(
        "BDMA copies 32-byte lines: a {}-byte atom (one pixel of a C' surface) is not one", atom));
  }
  if (l.dst.width != l.src.width * l.scale_w || l.dst.height != l.src.height * l.scale_h ||
      l.dst.channels != l.src.channels) {
    throw FirmwareError(
        fmt::format("nearest upsampling x {} x {}: {}x{}x{} to {}x{}x{} (W x H x C) is not that",
                    l.scale_w, l.scale_h, l.src.width, l.src.height, l.src.channels, l.dst.width,
                    l.dst.height, l.dst.channels));
  }
  const std::uint32_t planes = surface_count(l.src, l.precision, atom);
  const bool packed =
      std::uint64_t{l.src.surface_stride} == std::uint64_t{l.src.height} * l.src.line_stride &&
      std::uint64_t{l.dst.surface_stride} == std::uint64_t{l.dst.height} * l.dst.line_stride;
  const std::uint32_t per_copy = packed ? planes : 1;  // C' surfaces one copy covers
  const std::size_t count = std::size_t{l.scale_h} * l.scale_w * (planes / per_copy);
  if (count > kBdmaSlots) {
    throw FirmwareError(fmt::format(
        "nearest upsampling x {} x {} of {} C' surfaces that are not packed needs {} BDMA copies; "
        "one launch holds {}",
        l.scale_w, l.scale_h, planes, count, kBdmaSlots));
  }
  std::vector<BdmaTransfer> out;
  out.reserve(count);
  for (std::uint32_t s = 0; s < planes; s += per_copy) {
    for (unsigned dy = 0; dy < l.scale_h; ++dy) {
      for (unsigned dx = 0; dx < l.scale_w; ++dx) {
        BdmaTransfer t;
        t.src = l.src.address + std::uint64_t{s} * l.src.surface_stride;
        t.dst = l.dst.address + std::uint64_t{s} * l.dst.surface_stride +
                std::uint64_t{dy} * l.dst.line_stride + std::uint64_t{dx} * atom;
        t.line_bytes = atom;
        t.lines = l.src.width;
        t.src_line_stride = atom;
        t.dst_line_stride = atom * l.scale_w;
        t.surfaces = l.src.height * per_copy;
        t.src_surface_stride = l.src.line_stride;
        t.dst_surface_stride = l.dst.line_stride * l.scale_h;
        t.src_ram = bdma_ram(l.src.ram);
        t.dst_ram = bdma_ram(l.dst.ram);
        out.push_back(t);
      }
    }
  }
  return out;
}

namespace detail {

BdmaLayer Builder::lower_resize(const PlannedLayer& l, const NetTensor& in, const NetTensor& dst) {
  if (!hw_.dla.bdma) {
    throw GraphError(fmt::format("{}: nearest upsampling runs on BDMA, which {} does not have",
                                 layer_nodes_label(g_, l), hw_.name));
  }
  BdmaLayer b;
  b.src = in.surface;
  b.dst = dst.surface;
  b.precision = elem();
  b.scale_h = l.resize.scale_h;
  b.scale_w = l.resize.scale_w;
  b.atom_bytes = atom();
  (void)bdma_copies(b);  // checks the layer
  return b;
}

RubikContract Builder::lower_depth_to_space(const PlannedLayer& l, const NetTensor& in,
                                            const NetTensor& dst) {
  const std::string who = layer_nodes_label(g_, l);
  if (!hw_.dla.rubik) {
    throw GraphError(
        fmt::format("{}: DepthToSpace runs on Rubik (contract mode), which {} does "
                    "not have",
                    who, hw_.name));
  }
  // Each of the b^2 channel groups must start a C' surface: Rubik moves whole atoms.
  const unsigned per_atom = channels_per_atom(elem(), atom());
  if (dst.surface.channels % per_atom != 0) {
    throw GraphError(
        fmt::format("{}: DepthToSpace to {} channels: Rubik's contract moves whole atoms, so the "
                    "output channels must be a multiple of {} at {}",
                    who, dst.surface.channels, per_atom, precision_name(options_.precision)));
  }
  RubikContract r;
  r.precision = elem();
  r.src = in.surface;
  r.dst = dst.surface;
  r.x_stride = r.y_stride = l.depth_to_space.block;
  try {
    (void)rubik_model_params(r, atom());  // checks the operation
  } catch (const FirmwareError& e) {
    throw GraphError(fmt::format("{}: {}", who, e.what()));
  }
  return r;
}

}  // namespace detail

}  // namespace octasim::firmware::net
