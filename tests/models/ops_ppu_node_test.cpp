// models/ops/ppu_node (the PPU kNode kernel's golden): the kernel image's byte format (a round
// trip through every field, every truncation and corrupted fields refused with NodeImageError),
// and run_node against values computed here from the inputs (FP16 in double, then rounded),
// never from the code under test: Erf and Sigmoid on an FP16 surface with padding lanes and
// stride gaps, ReduceMean over an axis, MatMul of two rows surfaces, Transpose, INT8 surfaces
// with steps, and channel-mapped surfaces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "models/graph/graph.hpp"
#include "models/numerics/float_format.hpp"
#include "models/ops/ppu_node.hpp"
#include "tests/models/vec_memory.hpp"

namespace octasim::models::ops {
namespace {

using graph::Attribute;
using graph::DType;
using test::VecMemory;

constexpr std::uint8_t kJunk = 0xab;

TensorPlace fp16_surface(std::uint64_t addr, std::vector<std::int64_t> shape, std::uint32_t w,
                         std::uint32_t h, std::uint32_t c, std::uint32_t atom,
                         std::uint32_t line_gap = 0, std::uint32_t surface_gap = 0) {
  TensorPlace p;
  p.storage = Storage::kSurfaceFp16;
  p.address = addr;
  p.shape = std::move(shape);
  p.width = w, p.height = h, p.channels = c, p.atom_bytes = atom;
  p.line_stride = w * atom + line_gap;
  p.surface_stride = h * p.line_stride + surface_gap;
  return p;
}

// The address of element (x, y, physical channel c) of a surface: NVDLA's feature format, as the
// header states it.
std::uint64_t element_address(const TensorPlace& p, std::uint32_t x, std::uint32_t y,
                              std::uint32_t c) {
  const unsigned eb = p.storage == Storage::kSurfaceFp16 ? 2 : 1;
  const std::uint32_t cpa = p.atom_bytes / eb;
  return p.address + std::uint64_t{c / cpa} * p.surface_stride + std::uint64_t{y} * p.line_stride +
         std::uint64_t{x} * p.atom_bytes + (c % cpa) * eb;
}

// Every byte of the memory that is not an atom of the surface (a stride gap).
bool in_atoms(const TensorPlace& p, std::uint64_t a) {
  if (a < p.address) return false;
  const std::uint64_t off = a - p.address;
  const unsigned eb = p.storage == Storage::kSurfaceFp16 ? 2 : 1;
  const std::uint32_t surfaces = (p.channels + p.atom_bytes / eb - 1) / (p.atom_bytes / eb);
  const std::uint64_t s = off / p.surface_stride, in_s = off % p.surface_stride;
  if (s >= surfaces) return false;
  const std::uint64_t y = in_s / p.line_stride, in_l = in_s % p.line_stride;
  return y < p.height && in_l < std::uint64_t{p.width} * p.atom_bytes;
}

// The FP16 nearest to v (ties to even), computed here: scale into [1024, 2048) and round.
std::uint16_t fp16_rne(double v) {
  if (v == 0.0) return std::signbit(v) ? 0x8000 : 0;
  const std::uint16_t sign = v < 0 ? 0x8000 : 0;
  double a = std::fabs(v);
  int e = std::ilogb(a);  // a in [2^e, 2^(e+1))
  if (e < -14) e = -14;   // subnormals: the fixed exponent of 2^-24 steps
  double m = std::nearbyint(std::ldexp(a, 10 - e));  // FE_TONEAREST: ties to even
  if (m >= 2048.0) m /= 2.0, ++e;
  if (e > 15) return static_cast<std::uint16_t>(sign | 0x7c00);
  if (m < 1024.0) return static_cast<std::uint16_t>(sign | static_cast<unsigned>(m));
  return static_cast<std::uint16_t>(sign | (e + 15) << 10 | (static_cast<unsigned>(m) - 1024));
}

// Ordered distance between two FP16 patterns of finite values.
int ulps(std::uint16_t a, std::uint16_t b) {
  const auto ord = [](std::uint16_t h) { return h & 0x8000 ? -(h & 0x7fff) : h & 0x7fff; };
  return std::abs(ord(a) - ord(b));
}

void fill_junk(VecMemory& mem, std::size_t size) {
  for (std::size_t a = 0; a < size; ++a) mem.write(a, &kJunk, 1);
}

// ---- The image format ------------------------------------------------------------------------

NodeImage full_image() {
  NodeImage im;
  im.op_type = "Gemm";
  im.name = "fc1";
  im.opset = 17;
  Attribute a;
  a.kind = Attribute::Kind::kInt, a.i = -5;
  im.attributes["transB"] = a;
  a = {};
  a.kind = Attribute::Kind::kFloat, a.f = 0.375F;
  im.attributes["alpha"] = a;
  a = {};
  a.kind = Attribute::Kind::kString, a.s = "constant";
  im.attributes["mode"] = a;
  a = {};
  a.kind = Attribute::Kind::kInts, a.ints = {1, -2, 1LL << 40};
  im.attributes["perm"] = a;
  a = {};
  a.kind = Attribute::Kind::kFloats, a.floats = {0.5F, -1.25F};
  im.attributes["scales"] = a;
  a = {};
  a.kind = Attribute::Kind::kTensor, a.t = graph::Tensor::floats({2, 1}, {1.5F, -2.0F});
  im.attributes["value"] = a;
  a = {};
  a.kind = Attribute::Kind::kTensor, a.t = graph::Tensor::ints(DType::kInt64, {3}, {7, 8, -9});
  im.attributes["value_ints"] = a;
  TensorPlace rows = fp16_surface(0x1000, {4, 6}, 1, 4, 6, 8);
  rows.rows = true;
  im.inputs.push_back(rows);
  TensorPlace absent;
  absent.present = false;
  im.inputs.push_back(absent);
  TensorPlace dense;
  dense.storage = Storage::kDenseInt64, dense.address = 0x9000, dense.shape = {2};
  im.inputs.push_back(dense);
  TensorPlace mapped = fp16_surface(0x20000, {1, 3, 2, 2}, 2, 2, 8, 8, 16, 0);
  mapped.storage = Storage::kSurfaceInt8;
  mapped.channel_map = {5, 0, 2};
  mapped.step = 0.0625;
  im.outputs.push_back(mapped);
  return im;
}

TEST(PpuNodeImage, RoundTripsEveryField) {
  const NodeImage im = full_image();
  const std::vector<std::uint8_t> bytes = encode_node(im);
  // The header, by hand: magic, version, op_type.
  ASSERT_GE(bytes.size(), 16u);
  EXPECT_EQ(bytes[0], 'P');
  EXPECT_EQ(bytes[3], 'D');
  EXPECT_EQ(bytes[4], 1);
  EXPECT_EQ(bytes[8], 4);  // "Gemm"
  const NodeImage d = decode_node(bytes.data(), bytes.size());
  EXPECT_EQ(d.op_type, "Gemm");
  EXPECT_EQ(d.name, "fc1");
  EXPECT_EQ(d.opset, 17);
  ASSERT_EQ(d.attributes.size(), 7u);
  EXPECT_EQ(d.attributes.at("transB").kind, Attribute::Kind::kInt);
  EXPECT_EQ(d.attributes.at("transB").i, -5);
  EXPECT_EQ(d.attributes.at("alpha").f, 0.375F);
  EXPECT_EQ(d.attributes.at("mode").s, "constant");
  EXPECT_EQ(d.attributes.at("perm").ints, (std::vector<std::int64_t>{1, -2, 1LL << 40}));
  EXPECT_EQ(d.attributes.at("scales").floats, (std::vector<float>{0.5F, -1.25F}));
  const graph::Tensor& tf = d.attributes.at("value").t;
  EXPECT_EQ(tf.dtype, DType::kFloat32);
  EXPECT_EQ(tf.shape, (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(tf.f, (std::vector<float>{1.5F, -2.0F}));
  const graph::Tensor& ti = d.attributes.at("value_ints").t;
  EXPECT_EQ(ti.dtype, DType::kInt64);
  EXPECT_EQ(ti.i, (std::vector<std::int64_t>{7, 8, -9}));
  ASSERT_EQ(d.inputs.size(), 3u);
  EXPECT_TRUE(d.inputs[0].present);
  EXPECT_TRUE(d.inputs[0].rows);
  EXPECT_EQ(d.inputs[0].shape, (std::vector<std::int64_t>{4, 6}));
  EXPECT_EQ(d.inputs[0].height, 4u);
  EXPECT_EQ(d.inputs[0].channels, 6u);
  EXPECT_EQ(d.inputs[0].address, 0x1000u);
  EXPECT_FALSE(d.inputs[1].present);
  EXPECT_EQ(d.inputs[2].storage, Storage::kDenseInt64);
  EXPECT_EQ(d.inputs[2].address, 0x9000u);
  ASSERT_EQ(d.outputs.size(), 1u);
  const TensorPlace& o = d.outputs[0];
  EXPECT_EQ(o.storage, Storage::kSurfaceInt8);
  EXPECT_EQ(o.channel_map, (std::vector<std::uint32_t>{5, 0, 2}));
  EXPECT_EQ(o.step, 0.0625);
  EXPECT_EQ(o.line_stride, 32u);
  EXPECT_EQ(o.surface_stride, 64u);
  EXPECT_EQ(encode_node(d), bytes);
  // place_bytes: the dense array's 2 INT64; the rows surface's 6 FP16 channels in 8-byte atoms
  // are 2 surfaces of 4 one-atom lines (surface stride 32).
  EXPECT_EQ(place_bytes(d.inputs[2]), 16u);
  EXPECT_EQ(place_bytes(d.inputs[0]), 32u + 3 * 8 + 8);
}

TEST(PpuNodeImage, EveryTruncationIsAnError) {
  const std::vector<std::uint8_t> bytes = encode_node(full_image());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW((void)decode_node(bytes.data(), n), NodeImageError) << n << " bytes";
  }
  std::vector<std::uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_THROW((void)decode_node(longer.data(), longer.size()), NodeImageError);
}

// Byte offset of the first occurrence of `needle` after `from`.
std::size_t find(const std::vector<std::uint8_t>& b, const std::vector<std::uint8_t>& needle,
                 std::size_t from = 0) {
  const auto it = std::search(b.begin() + static_cast<std::ptrdiff_t>(from), b.end(),
                              needle.begin(), needle.end());
  EXPECT_NE(it, b.end());
  return static_cast<std::size_t>(it - b.begin());
}

std::string error_of(std::vector<std::uint8_t> b) {
  try {
    (void)decode_node(b.data(), b.size());
  } catch (const NodeImageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(PpuNodeImage, CorruptFieldsNameFieldAndOffset) {
  const std::vector<std::uint8_t> good = encode_node(full_image());
  auto with = [&](std::size_t at, std::vector<std::uint8_t> v) {
    std::vector<std::uint8_t> b = good;
    std::copy(v.begin(), v.end(), b.begin() + static_cast<std::ptrdiff_t>(at));
    return b;
  };
  EXPECT_NE(error_of(with(0, {'X'})).find("magic"), std::string::npos);
  EXPECT_NE(error_of(with(4, {2})).find("version"), std::string::npos);
  // A string length of 2^32 - 1: beyond the limit, no allocation.
  const std::string huge = error_of(with(8, {0xff, 0xff, 0xff, 0xff}));
  EXPECT_NE(huge.find("op_type"), std::string::npos) << huge;
  EXPECT_NE(huge.find("at byte 8"), std::string::npos) << huge;
  // The attribute count (after "Gemm", "fc1", opset): 8 + 8 + 7 + 8 = 31.
  const std::string attrs = error_of(with(31, {65, 0, 0, 0}));
  EXPECT_NE(attrs.find("attributes 65"), std::string::npos) << attrs;
  EXPECT_NE(attrs.find("at byte 31"), std::string::npos) << attrs;
  // The first attribute ("alpha": std::map order) has kind 1 after its key (4 + 5 bytes).
  EXPECT_NE(error_of(with(35 + 9, {9})).find("attribute kind 9"), std::string::npos);
  // The output place: its storage byte is the last place's first byte. Find the map {5, 0, 2}.
  const std::size_t map_at = find(good, {3, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0});
  const std::string entry = error_of(with(map_at + 4, {8, 0, 0, 0}));
  EXPECT_NE(entry.find("channel map entry 8"), std::string::npos) << entry;
  EXPECT_NE(entry.find("at byte " + std::to_string(map_at + 4)), std::string::npos) << entry;
  const std::string count = error_of(with(map_at, {2, 0, 0, 0}));  // 2 entries, 3 channels
  EXPECT_NE(count.find("does not hold"), std::string::npos) << count;
  // The INT8 step: 0 is refused.
  EXPECT_NE(error_of(with(good.size() - 8, {0, 0, 0, 0, 0, 0, 0, 0})).find("step"),
            std::string::npos);
  // The atom (8) of the output: 12 is not a power of two. Its rows byte (0) follows the atom.
  const std::size_t atom_at = map_at - 1 - 4;
  EXPECT_NE(error_of(with(atom_at, {12})).find("atom"), std::string::npos);
  EXPECT_NE(error_of(with(atom_at + 4, {2})).find("rows"), std::string::npos);
  // An unknown storage (the output's first byte: 1 + 8 + 4 + 4 * 8 + 6 * 4 + 1 + 4 before the map).
  const std::size_t storage_at = map_at - (1 + 8 + 4 + 4 * 8 + 6 * 4 + 1);
  ASSERT_EQ(good[storage_at], 1);  // kSurfaceInt8
  EXPECT_NE(error_of(with(storage_at, {7})).find("storage 7"), std::string::npos);
  // A zero dim.
  EXPECT_NE(error_of(with(storage_at + 13, {0})).find("dim 0"), std::string::npos);
  // A rank of 9.
  EXPECT_NE(error_of(with(storage_at + 9, {9})).find("rank 9"), std::string::npos);
}

// ---- run_node ------------------------------------------------------------------------------

// A unary FP16 node on a 1 x 21 x 3 x 2 surface in 32-byte atoms (16 channels: 2 surfaces, 11
// padding lanes) with stride gaps, out to a second surface; checks every output element against
// `f` in double (within 1 FP16 ulp: the registry computes in FP32, so a value within a few FP32
// ulps of an FP16 rounding boundary may round the other way), the padding lanes 0 and every other
// byte untouched.
template <typename Fn>
void check_unary(const char* op, Fn f) {
  const std::uint32_t c = 21, h = 3, w = 2;
  VecMemory mem(0x8000);
  fill_junk(mem, 0x8000);
  const TensorPlace in = fp16_surface(0x100, {1, c, h, w}, w, h, c, 32, 64, 32);
  const TensorPlace out = fp16_surface(0x2000, {1, c, h, w}, w, h, c, 32, 32, 96);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  std::vector<std::uint16_t> x(std::size_t{c} * h * w);
  for (std::uint32_t ch = 0; ch < c; ++ch) {
    for (std::uint32_t y = 0; y < h; ++y) {
      for (std::uint32_t xx = 0; xx < w; ++xx) {
        const std::uint16_t v = fp16_rne(u(rng));
        x[(ch * h + y) * w + xx] = v;
        mem.put16(element_address(in, xx, y, ch), v);
      }
    }
  }
  NodeImage im;
  im.op_type = op;
  im.inputs = {in};
  im.outputs = {out};
  run_node(im, mem);
  for (std::uint32_t ch = 0; ch < 32; ++ch) {
    for (std::uint32_t y = 0; y < h; ++y) {
      for (std::uint32_t xx = 0; xx < w; ++xx) {
        const std::uint16_t got = mem.u16(element_address(out, xx, y, ch));
        if (ch >= c) {
          EXPECT_EQ(got, 0u) << op << " padding lane " << ch;
          continue;
        }
        const double xv = fp16_to_float(x[(ch * h + y) * w + xx]);
        const std::uint16_t want = fp16_rne(f(xv));
        EXPECT_LE(ulps(got, want), 1) << op << " x " << xv << " got " << got << " want " << want;
      }
    }
  }
  for (std::uint64_t a = out.address; a < 0x8000; ++a) {
    if (!in_atoms(out, a)) {
      ASSERT_EQ(mem.byte(a), kJunk) << op << " gap byte " << a;
    }
  }
  for (std::uint64_t a = 0; a < out.address; ++a) {
    if (!in_atoms(in, a)) {
      ASSERT_EQ(mem.byte(a), kJunk) << op << " byte " << a;
    }
  }
}

TEST(PpuNodeRun, ErfOnAPaddedStridedSurface) {
  check_unary("Erf", [](double v) { return std::erf(v); });
}

TEST(PpuNodeRun, SigmoidOnAPaddedStridedSurface) {
  check_unary("Sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
}

// Multiples of 1/8 summed over H = 4 and divided by 4: every step exact in FP32, and the mean a
// multiple of 1/32 below 16, exact in FP16. So the output equals the exact mean.
TEST(PpuNodeRun, ReduceMeanOverAnAxisIsExact) {
  const std::uint32_t c = 5, h = 4, w = 3;
  VecMemory mem(0x4000);
  fill_junk(mem, 0x4000);
  const TensorPlace in = fp16_surface(0x0, {1, c, h, w}, w, h, c, 8);
  const TensorPlace out = fp16_surface(0x1000, {1, c, 1, w}, w, 1, c, 8);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> u(-60, 60);
  std::vector<double> x(std::size_t{c} * h * w);
  for (std::uint32_t ch = 0; ch < c; ++ch) {
    for (std::uint32_t y = 0; y < h; ++y) {
      for (std::uint32_t xx = 0; xx < w; ++xx) {
        const double v = u(rng) / 8.0;
        x[(ch * h + y) * w + xx] = v;
        mem.put16(element_address(in, xx, y, ch), fp16_rne(v));
      }
    }
  }
  NodeImage im;
  im.op_type = "ReduceMean";
  im.opset = 13;
  Attribute axes;
  axes.kind = Attribute::Kind::kInts, axes.ints = {2};
  im.attributes["axes"] = axes;
  im.inputs = {in};
  im.outputs = {out};
  run_node(im, mem);
  for (std::uint32_t ch = 0; ch < c; ++ch) {
    for (std::uint32_t xx = 0; xx < w; ++xx) {
      double s = 0.0;
      for (std::uint32_t y = 0; y < h; ++y) s += x[(ch * h + y) * w + xx];
      EXPECT_EQ(mem.u16(element_address(out, xx, 0, ch)), fp16_rne(s / h)) << ch << "," << xx;
    }
  }
}

// M x K times K x N, both rows surfaces (H = M rows of C = K channels). Inputs are multiples of
// 1/4 in [-2, 2]: each product a multiple of 1/16, each partial sum below 2^7 in magnitude, so
// the FP32 accumulation is exact whatever its order, and the result (|v| < 2^7, a multiple of
// 1/16) is exact in FP16: the output equals the exact product.
TEST(PpuNodeRun, MatMulOfTwoRowsSurfacesIsExact) {
  const std::uint32_t m = 5, k = 19, n = 7;
  VecMemory mem(0x10000);
  fill_junk(mem, 0x10000);
  TensorPlace a = fp16_surface(0x0, {m, k}, 1, m, k, 16);
  TensorPlace b = fp16_surface(0x2000, {k, n}, 1, k, n, 16);
  TensorPlace d = fp16_surface(0x4000, {m, n}, 1, m, n, 16);
  a.rows = b.rows = d.rows = true;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> u(-8, 8);
  std::vector<double> av(std::size_t{m} * k), bv(std::size_t{k} * n);
  for (std::uint32_t r = 0; r < m; ++r) {
    for (std::uint32_t c = 0; c < k; ++c) {
      av[r * k + c] = u(rng) / 4.0;
      mem.put16(element_address(a, 0, r, c), fp16_rne(av[r * k + c]));
    }
  }
  for (std::uint32_t r = 0; r < k; ++r) {
    for (std::uint32_t c = 0; c < n; ++c) {
      bv[r * n + c] = u(rng) / 4.0;
      mem.put16(element_address(b, 0, r, c), fp16_rne(bv[r * n + c]));
    }
  }
  NodeImage im;
  im.op_type = "MatMul";
  im.inputs = {a, b};
  im.outputs = {d};
  run_node(im, mem);
  for (std::uint32_t r = 0; r < m; ++r) {
    for (std::uint32_t c = 0; c < n; ++c) {
      double s = 0.0;
      for (std::uint32_t j = 0; j < k; ++j) s += av[r * k + j] * bv[j * n + c];
      EXPECT_EQ(mem.u16(element_address(d, 0, r, c)), fp16_rne(s)) << r << "," << c;
    }
  }
  EXPECT_EQ(node_cost(im).macs, std::uint64_t{m} * n * k);
  EXPECT_EQ(node_cost(im).output_elements, std::uint64_t{m} * n);
}

// 1 x 3 x 2 x 5 -> perm (0, 1, 3, 2) -> 1 x 3 x 5 x 2: a copy, bit for bit.
TEST(PpuNodeRun, TransposeMovesEveryElement) {
  const std::uint32_t c = 3, h = 2, w = 5;
  VecMemory mem(0x4000);
  const TensorPlace in = fp16_surface(0x0, {1, c, h, w}, w, h, c, 8);
  const TensorPlace out = fp16_surface(0x1000, {1, c, w, h}, h, w, c, 8);
  for (std::uint32_t ch = 0; ch < c; ++ch) {
    for (std::uint32_t y = 0; y < h; ++y) {
      for (std::uint32_t x = 0; x < w; ++x) {
        mem.put16(element_address(in, x, y, ch),
                  static_cast<std::uint16_t>(0x3c00 + ch * 64 + y * 8 + x));
      }
    }
  }
  NodeImage im;
  im.op_type = "Transpose";
  Attribute perm;
  perm.kind = Attribute::Kind::kInts, perm.ints = {0, 1, 3, 2};
  im.attributes["perm"] = perm;
  im.inputs = {in};
  im.outputs = {out};
  run_node(im, mem);
  for (std::uint32_t ch = 0; ch < c; ++ch) {
    for (std::uint32_t y = 0; y < h; ++y) {
      for (std::uint32_t x = 0; x < w; ++x) {
        // Output element (c, x, y): its row is x, its column y.
        EXPECT_EQ(mem.u16(element_address(out, y, x, ch)), 0x3c00 + ch * 64 + y * 8 + x);
      }
    }
  }
  // A wrong output shape is a GraphError naming the shapes.
  NodeImage bad = im;
  bad.outputs[0].shape = {1, c, h, w};
  bad.outputs[0].width = w, bad.outputs[0].height = h;
  EXPECT_THROW(run_node(bad, mem), graph::GraphError);
}

// Relu from INT8 codes of step 0.15 to INT8 codes of step 0.1, 1 x 40 x 1 x 1 in 8-byte atoms:
// value = code * step (FP32), out = round-half-away(v / 0.1) saturated to [-128, 127] (codes
// above 84 saturate: 85 * 0.15 / 0.1 = 127.5).
TEST(PpuNodeRun, Int8SurfacesWithSteps) {
  const std::uint32_t c = 40;
  VecMemory mem(0x1000);
  TensorPlace in = fp16_surface(0x0, {1, c, 1, 1}, 1, 1, c, 8);
  in.storage = Storage::kSurfaceInt8, in.step = 0.15;
  in.line_stride = 8, in.surface_stride = 8;
  TensorPlace out = in;
  out.address = 0x400, out.step = 0.1;
  std::vector<int> codes(c);
  for (std::uint32_t ch = 0; ch < c; ++ch) {
    codes[ch] = ch < 20 ? static_cast<int>(ch) * 7 - 128 : static_cast<int>(ch) * 5 - 73;
    if (ch == 39) codes[ch] = 127;
    mem.set(element_address(in, 0, 0, ch), static_cast<std::int8_t>(codes[ch]));
  }
  NodeImage im;
  im.op_type = "Relu";
  im.inputs = {in};
  im.outputs = {out};
  run_node(im, mem);
  for (std::uint32_t ch = 0; ch < c; ++ch) {
    const float v = std::max(0.0F, static_cast<float>(codes[ch]) * 0.15F);
    const double q = std::round(static_cast<double>(v) / 0.1);
    const int want = static_cast<int>(std::min(127.0, q));
    EXPECT_EQ(mem.at(element_address(out, 0, 0, ch)), want) << "code " << codes[ch];
  }
  EXPECT_EQ(mem.at(element_address(out, 0, 0, 39)), 127);  // saturated
  EXPECT_EQ(mem.at(element_address(out, 0, 0, 0)), 0);
}

// Logical channels stored at physical ones: input 3 channels in lanes {6, 1, 3} of an 8-channel
// surface, output in lanes {2, 7, 0}; Neg of each; the output's other lanes keep their bytes.
TEST(PpuNodeRun, ChannelMappedSurfaces) {
  VecMemory mem(0x1000);
  fill_junk(mem, 0x1000);
  TensorPlace in = fp16_surface(0x0, {1, 3, 2, 2}, 2, 2, 8, 8);
  in.channel_map = {6, 1, 3};
  TensorPlace out = fp16_surface(0x400, {1, 3, 2, 2}, 2, 2, 8, 8);
  out.channel_map = {2, 7, 0};
  for (std::uint32_t ch = 0; ch < 3; ++ch) {
    for (std::uint32_t y = 0; y < 2; ++y) {
      for (std::uint32_t x = 0; x < 2; ++x) {
        mem.put16(element_address(in, x, y, in.channel_map[ch]),
                  fp16_rne(1.0 + ch + y * 0.5 + x * 0.25));
      }
    }
  }
  NodeImage im;
  im.op_type = "Neg";
  im.inputs = {in};
  im.outputs = {out};
  run_node(im, mem);
  for (std::uint32_t pc = 0; pc < 8; ++pc) {
    for (std::uint32_t y = 0; y < 2; ++y) {
      for (std::uint32_t x = 0; x < 2; ++x) {
        const std::uint16_t got = mem.u16(element_address(out, x, y, pc));
        const auto it = std::find(out.channel_map.begin(), out.channel_map.end(), pc);
        if (it == out.channel_map.end()) {
          EXPECT_EQ(got, 0xabab) << "unmapped lane " << pc;
        } else {
          const auto ch = static_cast<std::uint32_t>(it - out.channel_map.begin());
          EXPECT_EQ(got, fp16_rne(-(1.0 + ch + y * 0.5 + x * 0.25))) << pc;
        }
      }
    }
  }
}

// An integer network's INT16 surfaces (Storage::kSurfaceInt16): the codes are the values, read
// as the place's dtype. uint8 Add wraps modulo 256 (ONNX's, numpy's uint8); an int32 Mul whose
// result leaves INT16 saturates; a uint8 constant is a typed dense array; a bool output is 0/1.
TensorPlace int16_surface(std::uint64_t addr, std::uint32_t c, DType dtype) {
  TensorPlace p = fp16_surface(addr, {c}, 1, 1, c, 8);
  p.storage = Storage::kSurfaceInt16;
  p.dtype = dtype;
  return p;
}

// INT16 element c of a 1 x 1 x C surface of 8-byte atoms (4 channels an atom, no stride gaps).
std::uint64_t int16_address(const TensorPlace& p, std::uint32_t c) {
  return p.address + c / 4 * p.surface_stride + c % 4 * 2;
}

TEST(PpuNodeImage, Int16SurfacesAndTypedConstantsRoundTrip) {
  NodeImage im;
  im.op_type = "Add";
  im.inputs = {int16_surface(0x100, 6, DType::kUInt8)};
  TensorPlace c;
  c.storage = Storage::kDenseTyped;
  c.dtype = DType::kUInt8;
  c.address = 0x800;
  c.shape = {6};
  im.inputs.push_back(c);
  im.outputs = {int16_surface(0x200, 6, DType::kBool)};
  const std::vector<std::uint8_t> bytes = encode_node(im);
  const NodeImage d = decode_node(bytes.data(), bytes.size());
  EXPECT_EQ(d.inputs[0].storage, Storage::kSurfaceInt16);
  EXPECT_EQ(d.inputs[0].dtype, DType::kUInt8);
  EXPECT_EQ(d.inputs[1].storage, Storage::kDenseTyped);
  EXPECT_EQ(d.inputs[1].dtype, DType::kUInt8);
  EXPECT_EQ(d.outputs[0].dtype, DType::kBool);
  EXPECT_EQ(place_bytes(d.inputs[1]), 48u);      // 6 x INT64
  EXPECT_EQ(place_bytes(d.inputs[0]), 8u + 8u);  // 2 surfaces of one 8-byte atom
  EXPECT_EQ(encode_node(d), bytes);
  // The dtype bytes: the INT16 output's is the image's last; the typed constant's follows its dim.
  std::vector<std::uint8_t> b = bytes;
  b.back() = static_cast<std::uint8_t>(DType::kFloat32);
  EXPECT_NE(error_of(b).find("INT16 dtype 0 (an integer type or bool)"), std::string::npos)
      << error_of(b);
  b.back() = 99;
  EXPECT_NE(error_of(b).find("INT16 dtype 99"), std::string::npos) << error_of(b);
  const std::size_t dim =
      find(bytes, {6, 0, 0, 0, 0, 0, 0, 0, static_cast<std::uint8_t>(DType::kUInt8)},
           find(bytes, {0x00, 0x08, 0, 0, 0, 0, 0, 0}));
  b = bytes;
  b[dim + 8] = static_cast<std::uint8_t>(DType::kInt64);
  EXPECT_NE(error_of(b).find("dense dtype 6"), std::string::npos) << error_of(b);
  // An INT16 surface's step is 1.
  NodeImage stepped = im;
  stepped.outputs[0].step = 0.5;
  b = encode_node(stepped);
  EXPECT_NE(error_of(b).find("INT16 step 0.5"), std::string::npos) << error_of(b);
  // Storage kinds end at 5.
  b = bytes;
  const std::size_t storage = find(bytes, {0x05, 0x00, 0x08, 0, 0, 0, 0, 0, 0});
  b[storage] = 6;
  EXPECT_NE(error_of(b).find("storage 6 (0 .. 5)"), std::string::npos) << error_of(b);
}

TEST(PpuNodeRun, Int16SurfacesHoldExactIntegers) {
  VecMemory mem(0x1000);
  const TensorPlace x = int16_surface(0x100, 6, DType::kUInt8);
  const std::vector<std::int64_t> xs = {0, 1, 100, 200, 255, 128};
  const std::vector<std::int64_t> cs = {0, 255, 100, 100, 255, 128};
  for (std::uint32_t k = 0; k < 6; ++k)
    mem.put16(int16_address(x, k), static_cast<std::uint16_t>(xs[k]));
  TensorPlace c;
  c.storage = Storage::kDenseTyped;
  c.dtype = DType::kUInt8;
  c.address = 0x800;
  c.shape = {6};
  mem.write(0x800, reinterpret_cast<const std::uint8_t*>(cs.data()), 48);
  NodeImage add;
  add.op_type = "Add";
  add.inputs = {x, c};
  add.outputs = {int16_surface(0x200, 6, DType::kUInt8)};
  run_node(add, mem);
  for (std::uint32_t k = 0; k < 6; ++k) {
    EXPECT_EQ(mem.u16(int16_address(add.outputs[0], k)), (xs[k] + cs[k]) % 256) << k;
  }
  // Equal writes bool 0/1.
  NodeImage eq = add;
  eq.op_type = "Equal";
  eq.outputs = {int16_surface(0x300, 6, DType::kBool)};
  run_node(eq, mem);
  for (std::uint32_t k = 0; k < 6; ++k) {
    EXPECT_EQ(mem.u16(int16_address(eq.outputs[0], k)), xs[k] == cs[k] ? 1 : 0) << k;
  }
  // int32: negative codes are read signed; a product beyond INT16 saturates.
  TensorPlace a = int16_surface(0x400, 3, DType::kInt32);
  const std::vector<std::int16_t> as = {-300, 300, -7};
  for (std::uint32_t k = 0; k < 3; ++k)
    mem.put16(int16_address(a, k), static_cast<std::uint16_t>(as[k]));
  NodeImage mul;
  mul.op_type = "Mul";
  mul.inputs = {a, a};
  mul.outputs = {int16_surface(0x500, 3, DType::kInt32)};
  run_node(mul, mem);
  EXPECT_EQ(mem.u16(int16_address(mul.outputs[0], 0)), 32767);  // 90000 saturated
  EXPECT_EQ(mem.u16(int16_address(mul.outputs[0], 2)), 49);
  NodeImage div = mul;
  div.op_type = "Div";
  div.inputs = {a, int16_surface(0x700, 3, DType::kInt32)};
  for (std::uint32_t k = 0; k < 3; ++k) mem.put16(int16_address(div.inputs[1], k), 2);
  run_node(div, mem);  // truncation toward zero
  EXPECT_EQ(static_cast<std::int16_t>(mem.u16(int16_address(div.outputs[0], 0))), -150);
  EXPECT_EQ(static_cast<std::int16_t>(mem.u16(int16_address(div.outputs[0], 2))), -3);
  // A float result in an INT16 place is refused.
  NodeImage sqrt = mul;
  sqrt.op_type = "Sqrt";
  TensorPlace f = fp16_surface(0x900, {3}, 1, 1, 3, 8);
  sqrt.inputs = {f};
  EXPECT_THROW(run_node(sqrt, mem), graph::GraphError);
}

TEST(PpuNodeRun, UnknownOperatorIsAGraphError) {
  VecMemory mem(0x100);
  NodeImage im;
  im.op_type = "NoSuchOp";
  im.outputs = {fp16_surface(0x0, {1}, 1, 1, 1, 8)};
  EXPECT_THROW(run_node(im, mem), graph::GraphError);
}

TEST(PpuNodeCost, TranscendentalsCostMoreAndReductionsCountInputs) {
  NodeImage add;
  add.op_type = "Add";
  add.inputs = {fp16_surface(0x0, {1, 8, 4, 4}, 4, 4, 8, 16)};
  add.outputs = add.inputs;
  NodeImage erf = add;
  erf.op_type = "Erf";
  EXPECT_EQ(node_cost(add).ops_per_element, 1u);
  EXPECT_GT(node_cost(erf).ops_per_element, node_cost(add).ops_per_element);
  NodeImage mean = add;
  mean.op_type = "ReduceMean";
  mean.outputs = {fp16_surface(0x1000, {1, 8, 1, 4}, 4, 1, 8, 16)};
  EXPECT_GE(node_cost(mean).ops_per_element, 4u);  // 4 input elements per output
  EXPECT_EQ(node_cost(add).bytes_read, place_bytes(add.inputs[0]));
  EXPECT_EQ(node_cost(add).output_elements, 128u);
  EXPECT_EQ(node_cost(add).macs, 0u);
}

// ---- The INT8 matrix product (--precision mixed) ------------------------------------------------

// A 2 x 3 FP16 rows surface of A (step 0.5 per tensor) times a 3 x 2 INT8 rows surface of B's
// codes (steps 0.25 and 0.125 per column), by hand:
//   A / 0.5 = [[2.5, -1.5, 140], [-140, 0.5, 0]] -> codes [[3, -2, 127], [-127, 1, 0]] (halves
//   away from zero, saturated at +-127, not -128)
//   B codes [[1, -128], [2, 5], [-1, 127]] (taken as they are, -128 included)
//   sums [[3 - 4 - 127, -384 - 10 + 16129], [-127 + 2, 16256 + 5]] = [[-128, 15735], [-125, 16261]]
//   y = sum * 0.5 * step_n: [[-16, 983.4375], [-15.625, 1016.3125]], one rounding to FP16:
//   983.5 and 1016.5 (FP16's step is 0.5 in [512, 1024)), -16 and -15.625 exact.
struct Int8MatmulCase {
  VecMemory mem{0x4000};
  TensorPlace a, b, d;
  NodeImage im;
};

void int8_matmul_case(Int8MatmulCase& t) {
  fill_junk(t.mem, 0x4000);
  t.a = fp16_surface(0x0, {2, 3}, 1, 2, 3, 16);
  t.b = fp16_surface(0x1000, {3, 2}, 1, 3, 2, 16);
  t.b.storage = Storage::kSurfaceInt8, t.b.step = 1.0;
  t.d = fp16_surface(0x2000, {2, 2}, 1, 2, 2, 16);
  t.a.rows = t.b.rows = t.d.rows = true;
  const double av[2][3] = {{1.25, -0.75, 70.0}, {-70.0, 0.25, 0.0}};
  const int bc[3][2] = {{1, -128}, {2, 5}, {-1, 127}};
  for (std::uint32_t r = 0; r < 2; ++r) {
    for (std::uint32_t c = 0; c < 3; ++c)
      t.mem.put16(element_address(t.a, 0, r, c), fp16_rne(av[r][c]));
  }
  for (std::uint32_t r = 0; r < 3; ++r) {
    for (std::uint32_t c = 0; c < 2; ++c) {
      t.mem.set(element_address(t.b, 0, r, c), static_cast<std::int8_t>(bc[r][c]));
    }
  }
  t.im.op_type = "MatMul";
  t.im.name = "mm";
  t.im.inputs = {t.a, t.b};
  t.im.outputs = {t.d};
  MatmulQuant q;
  q.a_steps = {0.5};
  q.b_steps = {0.25, 0.125};
  t.im.int8_matmul = q;
}

TEST(PpuNodeInt8Matmul, CodesRoundingAndSaturationByHand) {
  Int8MatmulCase t;
  int8_matmul_case(t);
  run_node(t.im, t.mem);
  const double want[2][2] = {{-16.0, 983.4375}, {-15.625, 1016.3125}};
  for (std::uint32_t r = 0; r < 2; ++r) {
    for (std::uint32_t c = 0; c < 2; ++c) {
      EXPECT_EQ(t.mem.u16(element_address(t.d, 0, r, c)), fp16_rne(want[r][c])) << r << "," << c;
    }
  }
  EXPECT_EQ(t.mem.u16(element_address(t.d, 0, 0, 1)), fp16_rne(983.5));
  EXPECT_EQ(t.mem.u16(element_address(t.d, 0, 1, 1)), fp16_rne(1016.5));
  // The same node in FP32 (no int8_matmul): -17.5625 where the codes give -16.
  Int8MatmulCase f;
  int8_matmul_case(f);
  f.im.int8_matmul.reset();
  f.im.inputs[1].step = 0.25;  // plain INT8 codes of one step
  run_node(f.im, f.mem);
  EXPECT_EQ(f.mem.u16(element_address(f.d, 0, 0, 0)), fp16_rne(-17.5625));
}

// Gemm with transB (B is N x K: its steps per row), alpha, and a dense FP32 C per column:
//   A = [[0.5, -1]] / 0.25 -> codes [2, -4]; B = [[0.3, 0.2], [-0.1, 0.05]] (N = 2, K = 2) per row
//   n, max quantizer done here: step_0 = 0.3 / 127, codes round([127, 84.67]) = [127, 85];
//   step_1 = 0.1 / 127, codes [-127, 63.5 -> 64]. The compiler quantizes B; this test feeds codes.
TEST(PpuNodeInt8Matmul, GemmTransBAlphaAndBias) {
  VecMemory mem(0x4000);
  fill_junk(mem, 0x4000);
  TensorPlace a = fp16_surface(0x0, {1, 2}, 1, 1, 2, 16);
  TensorPlace b = fp16_surface(0x1000, {2, 2}, 1, 2, 2, 16);
  b.storage = Storage::kSurfaceInt8, b.step = 1.0;
  TensorPlace d = fp16_surface(0x2000, {1, 2}, 1, 1, 2, 16);
  a.rows = b.rows = d.rows = true;
  mem.put16(element_address(a, 0, 0, 0), fp16_rne(0.5));
  mem.put16(element_address(a, 0, 0, 1), fp16_rne(-1.0));
  const int bc[2][2] = {{127, 85}, {-127, 64}};
  for (std::uint32_t r = 0; r < 2; ++r) {
    for (std::uint32_t c = 0; c < 2; ++c) {
      mem.set(element_address(b, 0, r, c), static_cast<std::int8_t>(bc[r][c]));
    }
  }
  TensorPlace c;
  c.storage = Storage::kDenseFp32, c.address = 0x3000, c.shape = {2};
  const float cv[2] = {0.5F, -2.0F};
  mem.write(0x3000, reinterpret_cast<const std::uint8_t*>(cv), 8);
  NodeImage im;
  im.op_type = "Gemm";
  Attribute ab;
  ab.kind = Attribute::Kind::kFloat, ab.f = 2.0F;
  im.attributes["alpha"] = ab;
  ab.f = 0.5F;
  im.attributes["beta"] = ab;
  Attribute tb;
  tb.kind = Attribute::Kind::kInt, tb.i = 1;
  im.attributes["transB"] = tb;
  im.inputs = {a, b, c};
  im.outputs = {d};
  MatmulQuant q;
  q.a_steps = {0.25};
  q.b_steps = {0.3 / 127, 0.1 / 127};
  im.int8_matmul = q;
  run_node(im, mem);
  // sums: n = 0: 2 * 127 - 4 * 85 = -86; n = 1: 2 * -127 - 4 * 64 = -510.
  const double y0 = 2.0 * 0.25 * (0.3 / 127) * -86 + 0.5 * 0.5;
  const double y1 = 2.0 * 0.25 * (0.1 / 127) * -510 + 0.5 * -2.0;
  EXPECT_EQ(mem.u16(element_address(d, 0, 0, 0)), fp16_rne(y0));
  EXPECT_EQ(mem.u16(element_address(d, 0, 0, 1)), fp16_rne(y1));
  const NodeCost cost = node_cost(im);
  EXPECT_TRUE(cost.int8_macs);
  EXPECT_EQ(cost.macs, 4u);
  // A wrong number of steps is a GraphError.
  im.int8_matmul->b_steps = {0.1, 0.2, 0.3};
  EXPECT_THROW(run_node(im, mem), graph::GraphError);
}

// Two activations with batch axes broadcast: 2 x 2 x 3 times 3 x 2 (B broadcast over the
// batch), both per tensor at step 1/8: values that are multiples of 1/8 are their codes exactly.
TEST(PpuNodeInt8Matmul, BatchedMatMulOfTwoActivations) {
  VecMemory mem(0x4000);
  TensorPlace a = fp16_surface(0x0, {1, 2, 2, 3}, 3, 2, 2, 16);  // N C H W: C=2, H=2, W=3
  TensorPlace b = fp16_surface(0x1000, {3, 2}, 1, 3, 2, 16);
  b.rows = true;
  TensorPlace d = fp16_surface(0x2000, {1, 2, 2, 2}, 2, 2, 2, 16);
  std::vector<int> ac(12), bc(6);
  for (int i = 0; i < 12; ++i) ac[i] = (i * 37) % 23 - 11;
  for (int i = 0; i < 6; ++i) bc[i] = (i * 19) % 17 - 8;
  for (std::uint32_t i = 0; i < 12; ++i) {
    mem.put16(element_address(a, i % 3, i / 3 % 2, i / 6), fp16_rne(ac[i] / 8.0));
  }
  for (std::uint32_t i = 0; i < 6; ++i)
    mem.put16(element_address(b, 0, i / 2, i % 2), fp16_rne(bc[i] / 8.0));
  NodeImage im;
  im.op_type = "MatMul";
  im.inputs = {a, b};
  im.outputs = {d};
  MatmulQuant q;
  q.a_steps = {0.125};
  q.b_steps = {0.125};
  im.int8_matmul = q;
  run_node(im, mem);
  for (std::uint32_t ch = 0; ch < 2; ++ch) {
    for (std::uint32_t r = 0; r < 2; ++r) {
      for (std::uint32_t c = 0; c < 2; ++c) {
        int acc = 0;
        for (std::uint32_t k = 0; k < 3; ++k) acc += ac[ch * 6 + r * 3 + k] * bc[k * 2 + c];
        EXPECT_EQ(mem.u16(element_address(d, c, r, ch)), fp16_rne(acc / 64.0)) << ch << r << c;
      }
    }
  }
}

TEST(PpuNodeInt8Matmul, ImageRoundTripsAndRefusesBadTrailers) {
  Int8MatmulCase t;
  int8_matmul_case(t);
  const std::vector<std::uint8_t> bytes = encode_node(t.im);
  const NodeImage d = decode_node(bytes.data(), bytes.size());
  ASSERT_TRUE(d.int8_matmul.has_value());
  EXPECT_EQ(d.int8_matmul->a_steps, (std::vector<double>{0.5}));
  EXPECT_EQ(d.int8_matmul->b_steps, (std::vector<double>{0.25, 0.125}));
  EXPECT_EQ(encode_node(d), bytes);
  // Without the trailer the image is the version-1 image it always was: 4 + 4 + 8 + 4 + 2 x 8
  // bytes shorter (tag, two counts, three steps).
  NodeImage plain = t.im;
  plain.int8_matmul.reset();
  EXPECT_EQ(encode_node(plain).size() + 36, bytes.size());
  // Every truncation inside the trailer is refused.
  for (std::size_t n = encode_node(plain).size() + 1; n < bytes.size(); ++n) {
    EXPECT_THROW((void)decode_node(bytes.data(), n), NodeImageError) << n;
  }
  const auto refused = [](const NodeImage& im) {
    const std::vector<std::uint8_t> b = encode_node(im);
    EXPECT_THROW((void)decode_node(b.data(), b.size()), NodeImageError);
  };
  NodeImage bad = t.im;
  bad.int8_matmul->b_steps = {0.25, 0.0};  // a step of 0
  refused(bad);
  bad = t.im;
  bad.int8_matmul->a_steps = {std::nan("")};
  refused(bad);
  bad = t.im;
  bad.op_type = "Add";  // not a matrix product
  refused(bad);
  bad = t.im;
  bad.inputs[1].step = 0.5;  // an INT8 operand's step is the trailer's
  refused(bad);
  bad = t.im;
  bad.outputs[0].storage = Storage::kSurfaceInt8;  // rounded once: to FP16
  refused(bad);
  std::vector<std::uint8_t> tag = bytes;
  tag[encode_node(plain).size()] ^= 1;  // a wrong tag
  EXPECT_THROW((void)decode_node(tag.data(), tag.size()), NodeImageError);
}

}  // namespace
}  // namespace octasim::models::ops
