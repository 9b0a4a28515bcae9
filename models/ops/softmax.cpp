#include "models/ops/softmax.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "models/numerics/float_format.hpp"

namespace octasim::models::ops {

std::uint32_t SoftmaxShape::line_length() const {
  switch (axis) {
    case SoftmaxAxis::kC:
      return channels;
    case SoftmaxAxis::kH:
      return height;
    case SoftmaxAxis::kW:
      return width;
  }
  return 0;
}

std::uint64_t SoftmaxShape::lines() const {
  const std::uint64_t all = std::uint64_t{width} * height * channels;
  const std::uint32_t n = line_length();
  return n == 0 ? 0 : all / n;
}

void softmax_line_fp32(const float* v, std::size_t n, float* y) {
  if (n == 0) return;
  float m = v[0];
  for (std::size_t i = 1; i < n; ++i) {
    if (v[i] > m) m = v[i];
  }
  // y holds e[i] until the division.
  for (std::size_t i = 0; i < n; ++i) {
    const float d = v[i] - m;
    y[i] = std::exp(d);
  }
  float s = 0.0f;
  for (std::size_t i = 0; i < n; ++i) s = s + y[i];
  for (std::size_t i = 0; i < n; ++i) y[i] = y[i] / s;
}

void softmax_line_fp16(const std::uint16_t* x, std::size_t n, std::uint16_t* y,
                       std::vector<float>& scratch) {
  scratch.resize(2 * n);
  float* v = scratch.data();
  float* q = scratch.data() + n;
  for (std::size_t i = 0; i < n; ++i) v[i] = fp16_to_float(x[i]);
  softmax_line_fp32(v, n, q);
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = std::isnan(q[i]) ? kSoftmaxNan : fp16_from_float(q[i]);
  }
}

namespace {

std::string surface_error(const SoftmaxShape& shape, const SoftmaxSurface& s, const char* what) {
  const std::uint64_t atom = shape.atom_bytes;
  if (s.address % atom != 0) {
    return std::string(what) + ": address " + std::to_string(s.address) +
           " is not a multiple of the " + std::to_string(atom) + "-byte atom";
  }
  if (s.line_stride % atom != 0 || s.surface_stride % atom != 0) {
    return std::string(what) + ": strides " + std::to_string(s.line_stride) + " / " +
           std::to_string(s.surface_stride) + " are not multiples of the " + std::to_string(atom) +
           "-byte atom";
  }
  const std::uint64_t line = std::uint64_t{shape.width} * atom;
  if (shape.height > 1 && s.line_stride < line) {
    return std::string(what) + ": line stride " + std::to_string(s.line_stride) +
           " is below one line of " + std::to_string(line) + " bytes";
  }
  const std::uint64_t plane = std::uint64_t{shape.height - 1} * s.line_stride + line;
  if (shape.surfaces() > 1 && s.surface_stride < plane) {
    return std::string(what) + ": surface stride " + std::to_string(s.surface_stride) +
           " is below one surface of " + std::to_string(plane) + " bytes";
  }
  const std::uint64_t bytes = softmax_surface_bytes(shape, s);
  if (bytes > kSoftmaxMaxSurfaceBytes) {
    return std::string(what) + ": the surface spans " + std::to_string(bytes) +
           " bytes, more than 2^28";
  }
  if (s.address > std::numeric_limits<std::uint64_t>::max() - bytes) {
    return std::string(what) + ": the surface runs past the end of the address space";
  }
  return {};
}

}  // namespace

std::string softmax_layout_error(const SoftmaxShape& shape, const SoftmaxSurface& in,
                                 const SoftmaxSurface& out) {
  const auto axis = static_cast<std::uint32_t>(shape.axis);
  if (axis > 2) return "axis " + std::to_string(axis) + " (0 C, 1 H, 2 W)";
  const unsigned a = shape.atom_bytes;
  if (a < 2 || a > 128 || (a & (a - 1)) != 0) {
    return "atom of " + std::to_string(a) + " bytes (a power of two from 2 to 128)";
  }
  const std::pair<const char*, std::uint32_t> dims[] = {
      {"width", shape.width}, {"height", shape.height}, {"channels", shape.channels}};
  for (const auto& [name, v] : dims) {
    if (v == 0 || v > kSoftmaxMaxDim) {
      return std::string(name) + " " + std::to_string(v) + " is outside 1.." +
             std::to_string(kSoftmaxMaxDim);
    }
  }
  std::string why = surface_error(shape, in, "input");
  if (why.empty()) why = surface_error(shape, out, "output");
  return why;
}

std::uint64_t softmax_surface_bytes(const SoftmaxShape& shape, const SoftmaxSurface& s) {
  return std::uint64_t{shape.surfaces() - 1} * s.surface_stride +
         std::uint64_t{shape.height - 1} * s.line_stride +
         std::uint64_t{shape.width} * shape.atom_bytes;
}

std::uint64_t softmax_element_offset(const SoftmaxShape& shape, const SoftmaxSurface& s,
                                     SoftmaxCoord e) {
  const unsigned cpa = shape.channels_per_atom();
  return std::uint64_t{e.c / cpa} * s.surface_stride + std::uint64_t{e.h} * s.line_stride +
         std::uint64_t{e.w} * shape.atom_bytes + std::uint64_t{e.c % cpa} * 2;
}

SoftmaxCoord softmax_line_element(const SoftmaxShape& shape, std::uint64_t line, std::uint32_t i) {
  SoftmaxCoord e;
  switch (shape.axis) {
    case SoftmaxAxis::kC:
      e.h = static_cast<std::uint32_t>(line / shape.width);
      e.w = static_cast<std::uint32_t>(line % shape.width);
      e.c = i;
      break;
    case SoftmaxAxis::kH:
      e.c = static_cast<std::uint32_t>(line / shape.width);
      e.w = static_cast<std::uint32_t>(line % shape.width);
      e.h = i;
      break;
    case SoftmaxAxis::kW:
      e.c = static_cast<std::uint32_t>(line / shape.height);
      e.h = static_cast<std::uint32_t>(line % shape.height);
      e.w = i;
      break;
  }
  return e;
}

void softmax_surface_line(const SoftmaxShape& shape, const SoftmaxSurface& in_surface,
                          const std::uint8_t* in, const SoftmaxSurface& out_surface,
                          std::uint8_t* out, std::uint64_t line, SoftmaxScratch& scratch) {
  const std::uint32_t n = shape.line_length();
  scratch.x.resize(n);
  scratch.y.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint8_t* p =
        in + softmax_element_offset(shape, in_surface, softmax_line_element(shape, line, i));
    scratch.x[i] = static_cast<std::uint16_t>(p[0] | p[1] << 8);
  }
  softmax_line_fp16(scratch.x.data(), n, scratch.y.data(), scratch.f);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint8_t* p =
        out + softmax_element_offset(shape, out_surface, softmax_line_element(shape, line, i));
    p[0] = static_cast<std::uint8_t>(scratch.y[i]);
    p[1] = static_cast<std::uint8_t>(scratch.y[i] >> 8);
  }
}

void softmax_surface(const SoftmaxShape& shape, const SoftmaxSurface& in_surface,
                     const std::uint8_t* in, const SoftmaxSurface& out_surface, std::uint8_t* out) {
  // Padding lanes: channels C .. S*C'-1 of the last surface, at every (w, h).
  const unsigned cpa = shape.channels_per_atom();
  const std::uint32_t last = shape.surfaces() - 1;
  for (std::uint32_t c = shape.channels; c < (last + 1) * cpa; ++c) {
    for (std::uint32_t h = 0; h < shape.height; ++h) {
      for (std::uint32_t w = 0; w < shape.width; ++w) {
        std::uint8_t* p = out + softmax_element_offset(shape, out_surface, {w, h, c});
        p[0] = p[1] = 0;
      }
    }
  }
  SoftmaxScratch scratch;
  const std::uint64_t lines = shape.lines();
  for (std::uint64_t l = 0; l < lines; ++l) {
    softmax_surface_line(shape, in_surface, in, out_surface, out, l, scratch);
  }
}

void run_softmax(const SoftmaxShape& shape, const SoftmaxSurface& in, const SoftmaxSurface& out,
                 Memory& mem) {
  const std::string why = softmax_layout_error(shape, in, out);
  if (!why.empty()) throw std::invalid_argument("softmax: " + why);
  std::vector<std::uint8_t> src(softmax_surface_bytes(shape, in));
  std::vector<std::uint8_t> dst(softmax_surface_bytes(shape, out));
  mem.read(in.address, src.data(), src.size());
  mem.read(out.address, dst.data(), dst.size());  // keeps the stride gaps
  softmax_surface(shape, in, src.data(), out, dst.data());
  // Only the atoms: one write per (surface, line) run of W atoms.
  const std::uint64_t run = std::uint64_t{shape.width} * shape.atom_bytes;
  for (std::uint32_t s = 0; s < shape.surfaces(); ++s) {
    for (std::uint32_t h = 0; h < shape.height; ++h) {
      const std::uint64_t off =
          std::uint64_t{s} * out.surface_stride + std::uint64_t{h} * out.line_stride;
      mem.write(out.address + off, dst.data() + off, run);
    }
  }
}

}  // namespace octasim::models::ops
