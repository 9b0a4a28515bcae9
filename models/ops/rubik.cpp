#include "models/ops/rubik.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace octasim::models::ops {
namespace {

[[noreturn]] void rubik_fail(const std::string& what) {
  throw std::invalid_argument("Rubik: " + what);
}

unsigned lanes(const RubikParams& p) {
  return p.atom_bytes / p.element_bytes;
}

std::uint32_t surfaces(std::uint32_t channels, unsigned per_atom) {
  return (channels + per_atom - 1) / per_atom;
}

// Contract, atom by atom: lanes map one to one because C' fills whole atoms.
void contract(const RubikParams& p, const Memory& src, Memory& dst) {
  const std::uint32_t group_surfaces = p.out_channels / lanes(p);
  std::vector<std::uint8_t> atom(p.atom_bytes);
  for (std::uint32_t h = 0; h < p.height; ++h) {
    for (unsigned gy = 0; gy < p.y_stride; ++gy) {
      for (unsigned gx = 0; gx < p.x_stride; ++gx) {
        const std::uint64_t g = std::uint64_t{gy} * p.x_stride + gx;
        for (std::uint32_t s = 0; s < group_surfaces; ++s) {
          const std::uint64_t in_line =
              p.in_base + g * p.contract_stride_0 + s * p.in_surface_stride + h * p.in_line_stride;
          const std::uint64_t out_line = p.out_base + h * p.contract_stride_1 +
                                         std::uint64_t{gy} * p.out_line_stride +
                                         s * p.out_surface_stride;
          for (std::uint32_t w = 0; w < p.width; ++w) {
            src.read(in_line + std::uint64_t{w} * p.atom_bytes, atom.data(), atom.size());
            const std::uint64_t ow = std::uint64_t{w} * p.x_stride + gx;
            dst.write(out_line + ow * p.atom_bytes, atom.data(), atom.size());
          }
        }
      }
    }
  }
}

void split(const RubikParams& p, const Memory& src, Memory& dst) {
  const unsigned eb = p.element_bytes;
  std::vector<std::uint8_t> atom(p.atom_bytes), line(std::size_t{p.width} * eb);
  for (std::uint32_t c = 0; c < p.out_channels; ++c) {
    const std::uint64_t surface = p.in_base + (c / lanes(p)) * p.in_surface_stride;
    const std::uint64_t lane = std::uint64_t{c % lanes(p)} * eb;
    for (std::uint32_t h = 0; h < p.height; ++h) {
      for (std::uint32_t w = 0; w < p.width; ++w) {
        src.read(surface + h * p.in_line_stride + std::uint64_t{w} * p.atom_bytes + lane,
                 line.data() + std::size_t{w} * eb, eb);
      }
      dst.write(p.out_base + c * p.out_planar_stride + h * p.out_line_stride, line.data(),
                line.size());
    }
  }
}

void merge(const RubikParams& p, const Memory& src, Memory& dst) {
  const unsigned eb = p.element_bytes;
  const unsigned per_atom = lanes(p);
  std::vector<std::uint8_t> plane_line(std::size_t{p.width} * eb);
  std::vector<std::uint8_t> out_line(std::size_t{p.width} * p.atom_bytes);
  for (std::uint32_t s = 0; s < surfaces(p.out_channels, per_atom); ++s) {
    for (std::uint32_t h = 0; h < p.height; ++h) {
      std::fill(out_line.begin(), out_line.end(), std::uint8_t{0});
      for (unsigned l = 0; l < per_atom && s * per_atom + l < p.out_channels; ++l) {
        const std::uint64_t c = std::uint64_t{s} * per_atom + l;
        src.read(p.in_base + c * p.in_planar_stride + h * p.in_line_stride, plane_line.data(),
                 plane_line.size());
        for (std::uint32_t w = 0; w < p.width; ++w) {
          for (unsigned b = 0; b < eb; ++b) {
            out_line[std::size_t{w} * p.atom_bytes + std::size_t{l} * eb + b] =
                plane_line[std::size_t{w} * eb + b];
          }
        }
      }
      dst.write(p.out_base + s * p.out_surface_stride + h * p.out_line_stride, out_line.data(),
                out_line.size());
    }
  }
}

}  // namespace

RubikCube rubik_output_cube(const RubikParams& p) {
  if (p.mode == RubikMode::kContract) {
    return {p.width * p.x_stride, p.height * p.y_stride, p.out_channels};
  }
  return {p.width, p.height, p.out_channels};
}

void check_rubik(const RubikParams& p) {
  if (p.element_bytes != 1 && p.element_bytes != 2) {
    rubik_fail("element size " + std::to_string(p.element_bytes) + " is not 1 or 2 bytes");
  }
  if (p.atom_bytes == 0 || p.atom_bytes % p.element_bytes != 0) {
    rubik_fail("atom of " + std::to_string(p.atom_bytes) + " bytes does not hold whole elements");
  }
  if (p.width == 0 || p.height == 0 || p.in_channels == 0 || p.out_channels == 0) {
    rubik_fail("empty cube");
  }
  switch (p.mode) {
    case RubikMode::kContract: {
      const std::uint64_t groups = std::uint64_t{p.x_stride} * p.y_stride;
      if (groups == 0) rubik_fail("contract stride of 0");
      if (std::uint64_t{p.out_channels} * groups != p.in_channels) {
        rubik_fail("contract of " + std::to_string(p.in_channels) + " channels into " +
                   std::to_string(groups) + " groups of " + std::to_string(p.out_channels));
      }
      if (std::uint64_t{p.out_channels} * p.element_bytes % p.atom_bytes != 0) {
        rubik_fail("contract output channels (" + std::to_string(p.out_channels) +
                   ") do not fill whole " + std::to_string(p.atom_bytes) + "-byte atoms");
      }
      return;
    }
    case RubikMode::kSplit:
      if (p.out_channels > p.in_channels) {
        rubik_fail("split of " + std::to_string(p.out_channels) + " planes from " +
                   std::to_string(p.in_channels) + " channels");
      }
      return;
    case RubikMode::kMerge:
      if (p.out_channels != p.in_channels) {
        rubik_fail("merge of " + std::to_string(p.in_channels) + " planes into " +
                   std::to_string(p.out_channels) + " channels");
      }
      return;
  }
  rubik_fail("mode " + std::to_string(static_cast<unsigned>(p.mode)) +
             " is not contract, split or merge");
}

void run_rubik(const RubikParams& p, const Memory& src, Memory& dst) {
  check_rubik(p);
  switch (p.mode) {
    case RubikMode::kContract:
      contract(p, src, dst);
      return;
    case RubikMode::kSplit:
      split(p, src, dst);
      return;
    case RubikMode::kMerge:
      merge(p, src, dst);
      return;
  }
}

}  // namespace octasim::models::ops
