// End to end: image-input convolution layers (CDMA DATAIN_FORMAT=PIXEL) programmed register by
// register through the Mmio interface, recorded as NVDLA traces with golden CRCs from models/
// (models::ops::read_image_cube -> run_conv_int -> run_sdp_layer), then played on the
// functional device and by `octasim run` on the cycle-level device. Several pixel formats,
// mean subtraction, the CDMA convertor, x offset, padding and strides; a corrupted pixel and
// unsupported programming must fail.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "models/ops/conv.hpp"
#include "models/ops/conv_image.hpp"
#include "models/ops/sdp.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/firmware/e2e_util.hpp"

#ifndef OCTASIM_BIN
#error "OCTASIM_BIN must name the octasim executable"
#endif

namespace octasim::firmware {
namespace {

using octasim::test::run_octasim;
using octasim::test::TempDir;

namespace R = octasim::regs;
using models::ops::ConvCube;
using models::ops::ConvPrecision;
using models::ops::ConvWeights;
using models::ops::PixelFormat;

constexpr std::uint64_t kPlane0 = 0x80000000;
constexpr std::uint64_t kPlane1 = 0x80100000;
constexpr std::uint64_t kWeights = 0x80200000;
constexpr std::uint64_t kOutput = 0x80300000;

struct ImageCase {
  PixelFormat format = PixelFormat::kA8B8G8R8;
  std::uint32_t width = 9, height = 7, x_offset = 0;
  std::uint32_t kernels = 5, kernel_height = 3, kernel_width = 3;
  std::uint32_t stride_x = 1, stride_y = 1;
  std::uint32_t pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;
  std::uint16_t cdma_pad_value = 0, csc_pad_value = 0;
  bool sign_override = false;
  bool cvt = false;
  std::int16_t cvt_offset = 0, cvt_scale = 1;
  unsigned cvt_truncate = 0;
  bool mean = false;
  std::array<std::int16_t, 4> means{};
  unsigned clip_truncate = 0;
  std::int16_t sdp_scale = 1;
  unsigned sdp_shift = 8;
  unsigned seed = 1;
  // Register writes issued after the layer's programming, before D_OP_ENABLE (refusal tests).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> overrides;
};

struct Layer {
  models::ops::ImageSurface surface;
  models::ops::ImageConvert convert;
  std::uint32_t channels = 0, kernel_channels = 0;
  std::uint32_t out_width = 0, out_height = 0;
  std::uint32_t out_line_stride = 0, out_surface_stride = 0, out_bytes = 0;
  std::uint32_t weight_bytes = 0;
  std::uint32_t entries_per_slice = 0;
  unsigned data_banks = 1, weight_banks = 1;
};

Layer plan(const ImageCase& c, const HwConfig& hw) {
  Layer l;
  const models::ops::PixelFormatInfo& info = models::ops::pixel_format_info(c.format);
  l.channels = info.channels;
  l.kernel_channels = c.kernel_width * info.channels;
  l.surface.format = c.format;
  l.surface.base0 = kPlane0;
  l.surface.base1 = kPlane1;
  l.surface.width = c.width;
  l.surface.height = c.height;
  l.surface.x_offset = c.x_offset;
  l.surface.atom_elements = hw.dla.memory_atomic_size;
  l.surface.line_stride = ((c.x_offset + c.width) * info.bytes_per_pixel + 31) / 32 * 32;
  l.surface.uv_line_stride = ((c.x_offset + c.width) * info.uv_bytes_per_pixel + 31) / 32 * 32;
  l.convert.in_precision = info.in_precision;
  l.convert.proc_precision = ConvPrecision::kInt8;
  l.convert.sign_override = c.sign_override;
  l.convert.cvt_enable = c.cvt;
  l.convert.cvt_offset = c.cvt_offset;
  l.convert.cvt_scale = c.cvt_scale;
  l.convert.cvt_truncate = c.cvt_truncate;
  l.convert.mean_enable = c.mean;
  l.convert.mean = c.means;
  l.convert.pad_left = c.pad_left;
  l.convert.pad_right = c.pad_right;
  l.convert.pad_value = c.cdma_pad_value;
  l.out_width = models::ops::conv_output_size(c.width, c.pad_left, c.pad_right, c.kernel_width, 1,
                                              c.stride_x);
  l.out_height = models::ops::conv_output_size(c.height, c.pad_top, c.pad_bottom, c.kernel_height,
                                               1, c.stride_y);
  const unsigned atom = hw.dla.memory_atomic_size;
  l.out_line_stride = l.out_width * atom;
  l.out_surface_stride = l.out_line_stride * l.out_height;
  l.out_bytes = l.out_surface_stride * ((c.kernels + atom - 1) / atom);
  l.weight_bytes = (c.kernels * c.kernel_height * l.kernel_channels + 127) / 128 * 128;
  const std::uint32_t line_bytes = (c.pad_left + c.width + c.pad_right) * info.channels;
  const unsigned entry = hw.dla.cbuf_bank_width;
  l.entries_per_slice = (line_bytes + entry - 1) / entry;
  l.data_banks =
      (l.entries_per_slice * c.height + hw.dla.cbuf_bank_depth - 1) / hw.dla.cbuf_bank_depth;
  l.weight_banks = (l.weight_bytes / entry + hw.dla.cbuf_bank_depth - 1) / hw.dla.cbuf_bank_depth;
  return l;
}

// Raw pixel components: unsigned 8-bit or 16-bit (10-bit fields left-aligned) values.
ConvCube random_pixels(const ImageCase& c, const Layer& l, std::mt19937& rng) {
  const models::ops::PixelFormatInfo& info = models::ops::pixel_format_info(c.format);
  ConvCube px(c.width, c.height, l.channels);
  const bool ten_bit =
      c.format >= PixelFormat::kA2B10G10R10 && c.format <= PixelFormat::kV10U10Y10A2;
  for (auto& v : px.data) {
    if (info.in_precision == ConvPrecision::kInt8) {
      v = static_cast<std::int32_t>(rng() % 256);
    } else {
      v = static_cast<std::int32_t>(rng() % 65536);
      if (ten_bit) v &= 0xffc0;
    }
  }
  if (ten_bit) {
    for (std::uint32_t y = 0; y < c.height; ++y) {
      for (std::uint32_t x = 0; x < c.width; ++x) px.at(x, y, 3) &= 0xc000;
    }
  }
  return px;
}

std::vector<std::uint8_t> bytes_of(const HostMemory& mem, std::uint64_t addr, std::size_t size) {
  return mem.bytes(addr, size);
}

// Programs the layer (register group 0) and records the trace; returns the golden CRC of the
// output and the CACC / SDP saturation counts.
struct Golden {
  std::uint32_t crc = 0, cacc_saturation = 0;
};

Golden build(const ImageCase& c, const HwConfig& hw, TraceWriter& t) {
  const Layer l = plan(c, hw);
  std::mt19937 rng(c.seed);
  HostMemory golden;

  // Inputs: pixels and the pre-extended weights in NVDLA's weight format.
  const ConvCube pixels = random_pixels(c, l, rng);
  models::ops::write_image(l.surface, pixels, golden);
  ConvWeights w(c.kernels, c.kernel_height, c.kernel_width, l.channels);
  for (auto& v : w.data) v = static_cast<std::int32_t>(rng() % 255) - 127;
  const models::ops::ConvWeightLayout layout{hw.dla.mac_atomic_c, hw.dla.mac_atomic_k,
                                             ConvPrecision::kInt8};
  (void)models::ops::write_weights(models::ops::fold_image_weights(w), kWeights, layout, golden);

  const std::size_t plane0 = std::size_t{l.surface.line_stride} * c.height;
  t.mem_load(kPlane0, "pixels_y.dat", bytes_of(golden, kPlane0, plane0));
  if (models::ops::pixel_format_info(c.format).planes == 2) {
    const std::size_t plane1 = std::size_t{l.surface.uv_line_stride} * c.height;
    t.mem_load(kPlane1, "pixels_uv.dat", bytes_of(golden, kPlane1, plane1));
  }
  t.mem_load(kWeights, "weights.dat", bytes_of(golden, kWeights, l.weight_bytes));
  t.mem_init_zero(kOutput, l.out_bytes);

  // Golden: models/ only.
  const ConvCube in = models::ops::read_image_cube(l.surface, l.convert, golden);
  models::ops::ConvParams p;
  p.stride_x = c.stride_x;
  p.stride_y = c.stride_y;
  p.pad_left = 0;  // in the image cube
  p.pad_top = c.pad_top;
  p.out_width = l.out_width;
  p.out_height = l.out_height;
  p.pad_value = static_cast<std::int8_t>(c.csc_pad_value & 0xff);
  p.clip_truncate = c.clip_truncate;
  const unsigned atom = hw.dla.memory_atomic_size;
  const models::ops::ConvResult conv =
      models::ops::run_conv_int(in, w, p, (c.kernels + atom - 1) / atom * atom);
  models::ops::SdpConfig sdp;
  sdp.width = l.out_width;
  sdp.height = l.out_height;
  sdp.channels = c.kernels;
  sdp.atom_bytes = atom;
  sdp.flying = true;
  sdp.cvt.scale = c.sdp_scale;
  sdp.cvt.shift = static_cast<std::uint8_t>(c.sdp_shift);
  sdp.dst_base = kOutput;
  sdp.dst_line_stride = l.out_line_stride;
  sdp.dst_surface_stride = l.out_surface_stride;
  (void)models::ops::run_sdp_layer(sdp, golden, &conv.out);
  const std::vector<std::uint8_t> out = golden.bytes(kOutput, l.out_bytes);
  Golden g{models::crc32(out.data(), out.size()), conv.saturated};
  // A check worth having: the output is not a constant (all clamped or all zero).
  std::set<std::uint8_t> distinct(out.begin(), out.end());
  EXPECT_GT(distinct.size(), 8u) << "degenerate golden output";

  // Registers.
  namespace CD = R::CDMA;
  namespace CS = R::CSC;
  namespace CA = R::CACC;
  namespace S = R::SDP;
  const auto w32 = [&t](std::uint32_t addr, std::uint32_t v) { t.write32(addr, v); };
  const std::uint32_t in_prec =
      l.convert.in_precision == ConvPrecision::kInt8 ? 0u : 1u;  // proc: INT8 (0)
  for (std::uint32_t a :
       {S::S_POINTER::kAddr, CA::S_POINTER::kAddr, R::CMAC_A::S_POINTER::kAddr,
        R::CMAC_B::S_POINTER::kAddr, CS::S_POINTER::kAddr, CD::S_POINTER::kAddr}) {
    w32(a, 0);
  }
  w32(CA::D_MISC_CFG::kAddr, 0);
  w32(CA::D_DATAOUT_SIZE_0::kAddr,
      CA::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.set(0, l.out_width - 1) |
          CA::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.set(0, l.out_height - 1));
  w32(CA::D_DATAOUT_SIZE_1::kAddr, c.kernels - 1);
  w32(CA::D_DATAOUT_ADDR::kAddr, static_cast<std::uint32_t>(kOutput));
  w32(CA::D_LINE_STRIDE::kAddr, l.out_line_stride);
  w32(CA::D_SURF_STRIDE::kAddr, l.out_surface_stride);
  w32(CA::D_CLIP_CFG::kAddr, c.clip_truncate);
  w32(R::CMAC_A::D_MISC_CFG::kAddr, 0);
  w32(R::CMAC_B::D_MISC_CFG::kAddr, 0);

  w32(CS::D_MISC_CFG::kAddr, 0);
  w32(CS::D_DATAIN_FORMAT::kAddr, CS::D_DATAIN_FORMAT::DATAIN_FORMAT_PIXEL);
  w32(CS::D_DATAIN_SIZE_EXT_0::kAddr,
      CS::D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.set(0, c.width - 1) |
          CS::D_DATAIN_SIZE_EXT_0::DATAIN_HEIGHT_EXT.set(0, c.height - 1));
  w32(CS::D_DATAIN_SIZE_EXT_1::kAddr, l.channels - 1);
  w32(CS::D_BATCH_NUMBER::kAddr, 0);
  w32(CS::D_POST_Y_EXTENSION::kAddr, 0);
  w32(CS::D_ENTRY_PER_SLICE::kAddr, l.entries_per_slice - 1);
  w32(CS::D_WEIGHT_FORMAT::kAddr, 0);
  w32(CS::D_WEIGHT_SIZE_EXT_0::kAddr,
      CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_HEIGHT_EXT.set(0, c.kernel_height - 1));
  w32(CS::D_WEIGHT_SIZE_EXT_1::kAddr,
      CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_CHANNEL_EXT.set(0, l.kernel_channels - 1) |
          CS::D_WEIGHT_SIZE_EXT_1::WEIGHT_KERNEL.set(0, c.kernels - 1));
  w32(CS::D_WEIGHT_BYTES::kAddr, l.weight_bytes);
  w32(CS::D_DATAOUT_SIZE_0::kAddr,
      CS::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.set(0, l.out_width - 1) |
          CS::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.set(0, l.out_height - 1));
  w32(CS::D_DATAOUT_SIZE_1::kAddr, c.kernels - 1);
  w32(CS::D_ATOMICS::kAddr, l.out_width * l.out_height - 1);
  w32(CS::D_RELEASE::kAddr, c.height - 1);
  w32(CS::D_CONV_STRIDE_EXT::kAddr,
      CS::D_CONV_STRIDE_EXT::CONV_X_STRIDE_EXT.set(0, c.stride_x - 1) |
          CS::D_CONV_STRIDE_EXT::CONV_Y_STRIDE_EXT.set(0, c.stride_y - 1));
  w32(CS::D_DILATION_EXT::kAddr, 0);
  w32(CS::D_ZERO_PADDING::kAddr, CS::D_ZERO_PADDING::PAD_LEFT.set(0, c.pad_left) |
                                     CS::D_ZERO_PADDING::PAD_TOP.set(0, c.pad_top));
  w32(CS::D_ZERO_PADDING_VALUE::kAddr, c.csc_pad_value);
  w32(CS::D_BANK::kAddr, CS::D_BANK::DATA_BANK.set(0, l.data_banks - 1) |
                             CS::D_BANK::WEIGHT_BANK.set(0, l.weight_banks - 1));

  w32(CD::D_MISC_CFG::kAddr, CD::D_MISC_CFG::IN_PRECISION.set(0, in_prec));
  w32(CD::D_DATAIN_FORMAT::kAddr,
      CD::D_DATAIN_FORMAT::DATAIN_FORMAT.set(0, CD::D_DATAIN_FORMAT::DATAIN_FORMAT_PIXEL) |
          CD::D_DATAIN_FORMAT::PIXEL_FORMAT.set(0, static_cast<std::uint32_t>(c.format)) |
          CD::D_DATAIN_FORMAT::PIXEL_SIGN_OVERRIDE.set(0, c.sign_override ? 1 : 0));
  w32(CD::D_DATAIN_SIZE_0::kAddr, CD::D_DATAIN_SIZE_0::DATAIN_WIDTH.set(0, c.width - 1) |
                                      CD::D_DATAIN_SIZE_0::DATAIN_HEIGHT.set(0, c.height - 1));
  w32(CD::D_DATAIN_SIZE_1::kAddr, l.channels - 1);
  w32(CD::D_DATAIN_SIZE_EXT_0::kAddr,
      CD::D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.set(0, c.width - 1) |
          CD::D_DATAIN_SIZE_EXT_0::DATAIN_HEIGHT_EXT.set(0, c.height - 1));
  w32(CD::D_PIXEL_OFFSET::kAddr, CD::D_PIXEL_OFFSET::PIXEL_X_OFFSET.set(0, c.x_offset));
  w32(CD::D_DAIN_RAM_TYPE::kAddr, CD::D_DAIN_RAM_TYPE::DATAIN_RAM_TYPE_MCIF);
  w32(CD::D_DAIN_ADDR_HIGH_0::kAddr, 0);
  w32(CD::D_DAIN_ADDR_LOW_0::kAddr, static_cast<std::uint32_t>(kPlane0));
  w32(CD::D_DAIN_ADDR_HIGH_1::kAddr, 0);
  w32(CD::D_DAIN_ADDR_LOW_1::kAddr, static_cast<std::uint32_t>(kPlane1));
  w32(CD::D_LINE_STRIDE::kAddr, l.surface.line_stride);
  w32(CD::D_LINE_UV_STRIDE::kAddr, l.surface.uv_line_stride);
  w32(CD::D_SURF_STRIDE::kAddr, 0);
  w32(CD::D_DAIN_MAP::kAddr, 0);
  w32(CD::D_BATCH_NUMBER::kAddr, 0);
  w32(CD::D_ENTRY_PER_SLICE::kAddr, l.entries_per_slice - 1);
  w32(CD::D_FETCH_GRAIN::kAddr, 0);
  w32(CD::D_WEIGHT_FORMAT::kAddr, 0);
  w32(CD::D_WEIGHT_SIZE_0::kAddr, c.kernel_height * l.kernel_channels - 1);
  w32(CD::D_WEIGHT_SIZE_1::kAddr, c.kernels - 1);
  w32(CD::D_WEIGHT_RAM_TYPE::kAddr, CD::D_WEIGHT_RAM_TYPE::WEIGHT_RAM_TYPE_MCIF);
  w32(CD::D_WEIGHT_ADDR_HIGH::kAddr, 0);
  w32(CD::D_WEIGHT_ADDR_LOW::kAddr, static_cast<std::uint32_t>(kWeights));
  w32(CD::D_WEIGHT_BYTES::kAddr, l.weight_bytes);
  w32(CD::D_MEAN_FORMAT::kAddr, c.mean ? 1 : 0);
  w32(CD::D_MEAN_GLOBAL_0::kAddr,
      CD::D_MEAN_GLOBAL_0::MEAN_RY.set(0, static_cast<std::uint16_t>(c.means[0])) |
          CD::D_MEAN_GLOBAL_0::MEAN_GU.set(0, static_cast<std::uint16_t>(c.means[1])));
  w32(CD::D_MEAN_GLOBAL_1::kAddr,
      CD::D_MEAN_GLOBAL_1::MEAN_BV.set(0, static_cast<std::uint16_t>(c.means[2])) |
          CD::D_MEAN_GLOBAL_1::MEAN_AX.set(0, static_cast<std::uint16_t>(c.means[3])));
  w32(CD::D_CVT_CFG::kAddr, CD::D_CVT_CFG::CVT_EN.set(0, c.cvt ? 1 : 0) |
                                CD::D_CVT_CFG::CVT_TRUNCATE.set(0, c.cvt_truncate));
  w32(CD::D_CVT_OFFSET::kAddr, static_cast<std::uint16_t>(c.cvt_offset));
  w32(CD::D_CVT_SCALE::kAddr, static_cast<std::uint16_t>(c.cvt_scale));
  w32(CD::D_CONV_STRIDE::kAddr, CD::D_CONV_STRIDE::CONV_X_STRIDE.set(0, c.stride_x - 1) |
                                    CD::D_CONV_STRIDE::CONV_Y_STRIDE.set(0, c.stride_y - 1));
  w32(CD::D_ZERO_PADDING::kAddr, CD::D_ZERO_PADDING::PAD_LEFT.set(0, c.pad_left) |
                                     CD::D_ZERO_PADDING::PAD_RIGHT.set(0, c.pad_right) |
                                     CD::D_ZERO_PADDING::PAD_TOP.set(0, c.pad_top) |
                                     CD::D_ZERO_PADDING::PAD_BOTTOM.set(0, c.pad_bottom));
  w32(CD::D_ZERO_PADDING_VALUE::kAddr, c.cdma_pad_value);
  w32(CD::D_BANK::kAddr, CD::D_BANK::DATA_BANK.set(0, l.data_banks - 1) |
                             CD::D_BANK::WEIGHT_BANK.set(0, l.weight_banks - 1));

  // SDP in flying mode: stages bypassed, output convertor y = sat8((x * scale) >> shift).
  w32(S::D_DATA_CUBE_WIDTH::kAddr, l.out_width - 1);
  w32(S::D_DATA_CUBE_HEIGHT::kAddr, l.out_height - 1);
  w32(S::D_DATA_CUBE_CHANNEL::kAddr, c.kernels - 1);
  w32(S::D_DST_BASE_ADDR_LOW::kAddr, static_cast<std::uint32_t>(kOutput));
  w32(S::D_DST_BASE_ADDR_HIGH::kAddr, 0);
  w32(S::D_DST_LINE_STRIDE::kAddr, l.out_line_stride);
  w32(S::D_DST_SURFACE_STRIDE::kAddr, l.out_surface_stride);
  {
    using B = S::D_DP_BS_CFG;
    w32(B::kAddr, B::BS_BYPASS.set(0, 1) | B::BS_ALU_BYPASS.set(0, 1) | B::BS_MUL_BYPASS.set(0, 1) |
                      B::BS_RELU_BYPASS.set(0, 1));
    using N = S::D_DP_BN_CFG;
    w32(N::kAddr, N::BN_BYPASS.set(0, 1) | N::BN_ALU_BYPASS.set(0, 1) | N::BN_MUL_BYPASS.set(0, 1) |
                      N::BN_RELU_BYPASS.set(0, 1));
    using E = S::D_DP_EW_CFG;
    w32(E::kAddr, E::EW_BYPASS.set(0, E::EW_BYPASS_YES) |
                      E::EW_ALU_BYPASS.set(0, E::EW_ALU_BYPASS_YES) |
                      E::EW_MUL_BYPASS.set(0, E::EW_MUL_BYPASS_YES) |
                      E::EW_LUT_BYPASS.set(0, E::EW_LUT_BYPASS_YES));
    using M = S::D_FEATURE_MODE_CFG;
    w32(M::kAddr,
        M::FLYING_MODE.set(0, M::FLYING_MODE_ON) | M::OUTPUT_DST.set(0, M::OUTPUT_DST_MEM));
  }
  w32(S::D_DST_DMA_CFG::kAddr,
      S::D_DST_DMA_CFG::DST_RAM_TYPE.set(0, S::D_DST_DMA_CFG::DST_RAM_TYPE_MC));
  w32(S::D_DATA_FORMAT::kAddr, 0);
  w32(S::D_CVT_OFFSET::kAddr, 0);
  w32(S::D_CVT_SCALE::kAddr, static_cast<std::uint16_t>(c.sdp_scale));
  w32(S::D_CVT_SHIFT::kAddr, c.sdp_shift);
  w32(S::D_PERF_ENABLE::kAddr, 0);

  for (const auto& [addr, value] : c.overrides) w32(addr, value);
  for (std::uint32_t a :
       {S::D_OP_ENABLE::kAddr, CA::D_OP_ENABLE::kAddr, R::CMAC_A::D_OP_ENABLE::kAddr,
        R::CMAC_B::D_OP_ENABLE::kAddr, CS::D_OP_ENABLE::kAddr, CD::D_OP_ENABLE::kAddr}) {
    w32(a, 1);
  }
  t.wait_interrupt(R::GLB::S_INTR_STATUS::SDP_DONE_STATUS0.lsb);
  t.check_crc(kOutput, l.out_bytes, g.crc);
  t.check_register(CA::D_OUT_SATURATION::kAddr, g.cacc_saturation);
  return g;
}

trace::PlayResult play_functional(const std::string& cfg) {
  dla::FunctionalDevice device(load_hw_config("nv_small"));
  const trace::Trace t = trace::parse_trace_file(cfg);
  return trace::play(t, device, trace::PlayerOptions{});
}

// Records the case, plays it on the functional device (every check passes), then runs it with
// `octasim run` on the cycle-level device.
void expect_passes(const ImageCase& c, const std::string& tag) {
  const HwConfig hw = load_hw_config("nv_small");
  TraceWriter t;
  (void)build(c, hw, t);
  TempDir dir(tag);
  const std::string cfg = t.save(dir.str(), tag + ".cfg");

  const trace::PlayResult r = play_functional(cfg);
  ASSERT_EQ(r.checks.size(), 2u);
  for (const auto& chk : r.checks) {
    EXPECT_TRUE(chk.pass) << tag << " line " << chk.line << ": " << chk.description << ": "
                          << chk.detail;
  }
  std::string out;
  EXPECT_EQ(run_octasim("run " + cfg, &out), 0) << out;
  EXPECT_NE(out.find("checks: 2 passed, 0 failed"), std::string::npos) << out;
}

TEST(ConvImageEndToEnd, A8B8G8R8WithMeanAndConvertor) {
  ImageCase c;
  c.format = PixelFormat::kA8B8G8R8;
  c.cvt = true;
  c.cvt_scale = 3;
  c.cvt_truncate = 2;
  c.mean = true;
  c.means = {124, 117, 104, 0};
  c.pad_left = 1;
  c.pad_right = 1;
  c.pad_top = 1;
  c.pad_bottom = 1;
  c.csc_pad_value = 0;
  c.sdp_shift = 6;
  c.seed = 11;
  expect_passes(c, "a8b8g8r8_mean");
}

TEST(ConvImageEndToEnd, R8G8B8A8WithOffsetStrideAndPadValue) {
  ImageCase c;
  c.format = PixelFormat::kR8G8B8A8;
  c.width = 12;
  c.height = 9;
  c.kernels = 9;
  c.kernel_width = 4;
  c.kernel_height = 2;
  c.stride_x = 2;
  c.stride_y = 2;
  c.pad_left = 2;
  c.pad_right = 1;
  c.pad_top = 1;
  c.cvt = true;
  c.cvt_offset = 128;
  c.cvt_scale = 1;
  c.cdma_pad_value = 0xff80;  // low byte -128 on the left/right (CDMA)
  c.csc_pad_value = 0x0005;   // 5 on the top (CSC)
  c.clip_truncate = 2;
  c.sdp_shift = 5;
  c.seed = 12;
  expect_passes(c, "r8g8b8a8_stride");
}

TEST(ConvImageEndToEnd, X8R8G8B8RawPixelsWithXOffset) {
  ImageCase c;
  c.format = PixelFormat::kX8R8G8B8;
  c.width = 6;
  c.height = 5;
  c.x_offset = 3;
  c.kernels = 3;
  c.kernel_width = 2;
  c.kernel_height = 2;
  c.sdp_shift = 7;
  c.seed = 13;
  expect_passes(c, "x8r8g8b8_raw");
}

TEST(ConvImageEndToEnd, Y8U8V8SemiPlanarWithMean) {
  ImageCase c;
  c.format = PixelFormat::kY8___U8V8_N444;
  c.width = 10;
  c.height = 6;
  c.x_offset = 5;
  c.kernels = 4;
  c.kernel_width = 3;
  c.kernel_height = 3;
  c.pad_left = 1;
  c.pad_right = 1;
  c.cvt = true;
  c.cvt_scale = 1;
  c.mean = true;
  c.means = {16, 128, 128, 0};
  c.sdp_shift = 6;
  c.seed = 14;
  expect_passes(c, "y8_u8v8");
}

TEST(ConvImageEndToEnd, R8SingleChannel) {
  ImageCase c;
  c.format = PixelFormat::kR8;
  c.width = 16;
  c.height = 4;
  c.x_offset = 7;
  c.kernels = 2;
  c.kernel_width = 5;
  c.kernel_height = 2;
  c.cvt = true;
  c.cvt_offset = 100;
  c.cvt_scale = 5;
  c.cvt_truncate = 1;
  c.sign_override = true;
  c.sdp_shift = 4;
  c.seed = 15;
  expect_passes(c, "r8");
}

TEST(ConvImageEndToEnd, CorruptedPixelFailsTheCrc) {
  const HwConfig hw = load_hw_config("nv_small");
  ImageCase c;
  c.format = PixelFormat::kA8B8G8R8;
  c.seed = 21;
  TraceWriter t;
  (void)build(c, hw, t);
  TempDir dir("corrupt");
  const std::string cfg = t.save(dir.str(), "corrupt.cfg");
  const std::string dat = dir.str() + "/pixels_y.dat";
  std::stringstream s;
  s << std::ifstream(dat).rdbuf();
  std::string text = s.str();
  const auto pos = text.find("payload:0x");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos + 10, 2, text.substr(pos + 10, 2) == "00" ? "01" : "00");
  std::ofstream(dat, std::ios::trunc) << text;
  const trace::PlayResult r = play_functional(cfg);
  ASSERT_FALSE(r.checks.empty());
  EXPECT_FALSE(r.checks.at(0).pass);
}

// Programming octasim does not implement is refused with one line at D_OP_ENABLE.
void expect_refused(std::uint32_t addr, std::uint32_t value, const std::string& what) {
  const HwConfig hw = load_hw_config("nv_small");
  ImageCase c;
  c.overrides.emplace_back(addr, value);
  TraceWriter t;
  (void)build(c, hw, t);
  TempDir dir("refused");
  const std::string cfg = t.save(dir.str(), "refused.cfg");
  try {
    (void)play_functional(cfg);
    FAIL() << "expected a refusal mentioning '" << what << "'";
  } catch (const trace::TraceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(ConvImageEndToEnd, UnsupportedProgrammingIsRefused) {
  namespace CD = R::CDMA;
  namespace CS = R::CSC;
  using F = CD::D_DATAIN_FORMAT;
  const std::uint32_t pixel = F::DATAIN_FORMAT.set(0, F::DATAIN_FORMAT_PIXEL);
  expect_refused(F::kAddr, pixel | F::PIXEL_FORMAT.set(0, F::PIXEL_FORMAT_T_R16_F), "T_R16_F");
  expect_refused(F::kAddr, pixel | F::PIXEL_FORMAT.set(0, 0x3f), "reserved CDMA PIXEL_FORMAT");
  expect_refused(F::kAddr,
                 pixel | F::PIXEL_FORMAT.set(0, F::PIXEL_FORMAT_T_A8B8G8R8) |
                     F::PIXEL_MAPPING.set(0, F::PIXEL_MAPPING_RESERVED_LINEAR),
                 "PIXEL_MAPPING");
  expect_refused(CD::D_PIXEL_OFFSET::kAddr, CD::D_PIXEL_OFFSET::PIXEL_Y_OFFSET.set(0, 1),
                 "PIXEL_Y_OFFSET");
  expect_refused(CS::D_POST_Y_EXTENSION::kAddr, 1, "post-extension");
  expect_refused(CS::D_WEIGHT_SIZE_EXT_0::kAddr,
                 CS::D_WEIGHT_SIZE_EXT_0::WEIGHT_WIDTH_EXT.set(0, 2), "WEIGHT_WIDTH_EXT");
  expect_refused(CD::D_DATAIN_SIZE_1::kAddr, 2, "DATAIN_CHANNEL is 3");
  expect_refused(CS::D_DATAIN_FORMAT::kAddr, 0, "CSC's is FEATURE");
  // IN_PRECISION must be the pixel format's (INT16 for the 10-bit formats).
  expect_refused(F::kAddr, pixel | F::PIXEL_FORMAT.set(0, F::PIXEL_FORMAT_T_R10G10B10A2),
                 "pixels are INT16");
}

}  // namespace
}  // namespace octasim::firmware
