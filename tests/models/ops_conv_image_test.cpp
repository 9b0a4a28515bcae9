// models/ops/conv_image: pixel formats -> CBUF components, cc_cvt with mean, CDMA padding, the
// UV plane's x offset, channel pre-extension. Expectations derived by hand from format.rst and
// NVDLA's C-model rules (see conv_image.hpp).
#include "models/ops/conv_image.hpp"
#include "tests/models/vec_memory.hpp"

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace octasim::models::ops {
namespace {

using test::VecMemory;

ImageSurface surface(PixelFormat f, std::uint32_t w = 1, std::uint32_t h = 1) {
  ImageSurface s;
  s.format = f;
  s.base0 = 0;
  s.base1 = 0x800;
  s.line_stride = 64;
  s.uv_line_stride = 64;
  s.width = w;
  s.height = h;
  s.atom_elements = 8;
  return s;
}

using Px = std::array<std::int32_t, 4>;

TEST(PixelFormats, TableMatchesFormatRst) {
  EXPECT_STREQ(pixel_format_info(PixelFormat::kA8B8G8R8).name, "T_A8B8G8R8");
  EXPECT_EQ(pixel_format_info(PixelFormat::kA8B8G8R8).channels, 4u);
  EXPECT_EQ(pixel_format_info(PixelFormat::kR8).channels, 1u);
  EXPECT_EQ(pixel_format_info(PixelFormat::kY8___U8V8_N444).channels, 3u);
  EXPECT_EQ(pixel_format_info(PixelFormat::kY8___U8V8_N444).planes, 2u);
  EXPECT_EQ(pixel_format_info(PixelFormat::kY16___V16U16_N444).uv_bytes_per_pixel, 4u);
  EXPECT_EQ(pixel_format_info(PixelFormat::kA16B16G16R16).bytes_per_pixel, 8u);
  EXPECT_EQ(pixel_format_info(PixelFormat::kR10).in_precision, ConvPrecision::kInt16);
  EXPECT_EQ(pixel_format_info(PixelFormat::kA2B10G10R10).in_precision, ConvPrecision::kInt16);
  EXPECT_EQ(pixel_format_info(PixelFormat::kR16_F).in_precision, ConvPrecision::kFp16);
  EXPECT_EQ(pixel_format_info(0x23u)->name, std::string("T_Y16___V16U16_N444"));
  EXPECT_EQ(pixel_format_info(0x24u), nullptr);
  EXPECT_EQ(pixel_format_name(0x3f), "reserved pixel format 63");
}

TEST(ReadPixel, PackedEightBitComponentOrders) {
  VecMemory mem(0x1000);
  mem.put(0, {0x11, 0x22, 0x33, 0x44});
  // Names list components from the word's most significant byte: byte 0 is the last one.
  EXPECT_EQ(read_pixel(surface(PixelFormat::kA8B8G8R8), 0, 0, false, mem),
            (Px{0x11, 0x22, 0x33, 0x44}));
  EXPECT_EQ(read_pixel(surface(PixelFormat::kX8B8G8R8), 0, 0, false, mem),
            (Px{0x11, 0x22, 0x33, 0x44}));
  EXPECT_EQ(read_pixel(surface(PixelFormat::kR8G8B8A8), 0, 0, false, mem),
            (Px{0x44, 0x33, 0x22, 0x11}));
  EXPECT_EQ(read_pixel(surface(PixelFormat::kA8R8G8B8), 0, 0, false, mem),
            (Px{0x33, 0x22, 0x11, 0x44}));
  EXPECT_EQ(read_pixel(surface(PixelFormat::kX8R8G8B8), 0, 0, false, mem),
            (Px{0x33, 0x22, 0x11, 0x44}));
  EXPECT_EQ(read_pixel(surface(PixelFormat::kB8G8R8A8), 0, 0, false, mem),
            (Px{0x22, 0x33, 0x44, 0x11}));
  EXPECT_EQ(read_pixel(surface(PixelFormat::kA8Y8U8V8), 0, 0, false, mem),
            (Px{0x33, 0x22, 0x11, 0x44}));  // Y, U, V, A
  EXPECT_EQ(read_pixel(surface(PixelFormat::kV8U8Y8A8), 0, 0, false, mem),
            (Px{0x22, 0x33, 0x44, 0x11}));
  EXPECT_EQ(read_pixel(surface(PixelFormat::kR8), 0, 0, false, mem), (Px{0x11, 0, 0, 0}));
}

TEST(ReadPixel, UnsignedUnlessSignOverride) {
  VecMemory mem(0x1000);
  mem.put(0, {0xc8, 0x05, 0xff, 0x80});
  EXPECT_EQ(read_pixel(surface(PixelFormat::kA8B8G8R8), 0, 0, false, mem), (Px{200, 5, 255, 128}));
  EXPECT_EQ(read_pixel(surface(PixelFormat::kA8B8G8R8), 0, 0, true, mem), (Px{-56, 5, -1, -128}));
  // R16: one little-endian word.
  mem.put(0x100, {0x34, 0xf2});
  ImageSurface s = surface(PixelFormat::kR16);
  s.base0 = 0x100;
  EXPECT_EQ(read_pixel(s, 0, 0, false, mem)[0], 0xf234);
  EXPECT_EQ(read_pixel(s, 0, 0, true, mem)[0], 0xf234 - 0x10000);
}

TEST(ReadPixel, TenBitFieldsAreLeftAligned) {
  VecMemory mem(0x1000);
  // A2B10G10R10: R bits 0..9 = 1, G bits 10..19 = 2, B bits 20..29 = 0x3ff, A bits 30..31 = 3.
  const std::uint32_t word = 1u | (2u << 10) | (0x3ffu << 20) | (3u << 30);
  mem.put(0, {static_cast<std::uint8_t>(word), static_cast<std::uint8_t>(word >> 8),
              static_cast<std::uint8_t>(word >> 16), static_cast<std::uint8_t>(word >> 24)});
  EXPECT_EQ(read_pixel(surface(PixelFormat::kA2B10G10R10), 0, 0, false, mem),
            (Px{64, 128, 0xffc0, 0xc000}));
  EXPECT_EQ(read_pixel(surface(PixelFormat::kA2B10G10R10), 0, 0, true, mem),
            (Px{64, 128, -64, -16384}));
  // The same word read as A2R10G10B10: R is bits 20..29, B bits 0..9.
  EXPECT_EQ(read_pixel(surface(PixelFormat::kA2R10G10B10), 0, 0, false, mem),
            (Px{0xffc0, 128, 64, 0xc000}));
  // R10G10B10A2: A bits 0..1 (= 1 here), B bits 2..11, G 12..21, R 22..31.
  EXPECT_EQ(read_pixel(surface(PixelFormat::kR10G10B10A2), 0, 0, false, mem),
            (Px{(word >> 22 & 0x3ff) << 6, (word >> 12 & 0x3ff) << 6, (word >> 2 & 0x3ff) << 6,
                (word & 3) << 14}));
}

TEST(ReadPixel, XOffsetSkipsWholePixelsAndLinesUseTheStride) {
  VecMemory mem(0x1000);
  mem.put(0, {9, 8, 7, 6, 5});
  mem.put(64, {19, 18, 17, 16, 15});
  ImageSurface s = surface(PixelFormat::kR8, 3, 2);
  s.x_offset = 2;
  EXPECT_EQ(read_pixel(s, 0, 0, false, mem)[0], 7);
  EXPECT_EQ(read_pixel(s, 2, 0, false, mem)[0], 5);
  EXPECT_EQ(read_pixel(s, 1, 1, false, mem)[0], 16);
  mem.put(0x200, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  ImageSurface r = surface(PixelFormat::kA8B8G8R8, 1, 1);
  r.base0 = 0x200;
  r.x_offset = 2;
  EXPECT_EQ(read_pixel(r, 0, 0, false, mem), (Px{9, 10, 11, 12}));
}

TEST(ReadPixel, SemiPlanarChromaOrder) {
  VecMemory mem(0x1000);
  mem.put(0, {10, 20, 30});
  mem.put(0x800, {1, 2, 3, 4, 5, 6});
  // U8V8: V is the first chroma sample, U the second.
  EXPECT_EQ(read_pixel(surface(PixelFormat::kY8___U8V8_N444, 3), 1, 0, false, mem),
            (Px{20, 4, 3, 0}));
  EXPECT_EQ(read_pixel(surface(PixelFormat::kY8___V8U8_N444, 3), 1, 0, false, mem),
            (Px{20, 3, 4, 0}));
  // 16-bit samples.
  mem.put(0x100, {0x01, 0x10, 0x02, 0x20});
  mem.put(0x900, {0x03, 0x30, 0x04, 0x40, 0x05, 0x50, 0x06, 0x60});
  ImageSurface s = surface(PixelFormat::kY16___U16V16_N444, 2);
  s.base0 = 0x100;
  s.base1 = 0x900;
  EXPECT_EQ(read_pixel(s, 1, 0, false, mem), (Px{0x2002, 0x6006, 0x5005, 0}));
}

TEST(ReadPixel, ChromaPlaneTakesTheXOffsetModuloOneAtom) {
  VecMemory mem(0x1000);
  mem.put(0, {0, 0, 0, 0, 42});
  mem.put(0x800, {7, 9});
  mem.put(0x808, {17, 19});
  // nv_small: 8-byte atoms. x_offset 4 * 2 chroma bytes = 8 reaches an atom: base1 is taken to
  // point at pixel 4's chroma.
  ImageSurface s = surface(PixelFormat::kY8___U8V8_N444);
  s.x_offset = 4;
  EXPECT_EQ(read_pixel(s, 0, 0, false, mem), (Px{42, 9, 7, 0}));
  // 32-byte atoms: 8 bytes stay inside the first atom, chroma at base1 + 8.
  s.atom_elements = 32;
  EXPECT_EQ(read_pixel(s, 0, 0, false, mem), (Px{42, 19, 17, 0}));
}

TEST(ConvertPixel, WithoutConvertorTheBitsPassUnchanged) {
  ImageConvert c;
  EXPECT_EQ(convert_pixel_component(200, 0, c), -56);
  EXPECT_EQ(convert_pixel_component(100, 0, c), 100);
  c.mean_enable = true;  // no effect without CVT_EN
  c.mean = {50, 50, 50, 50};
  EXPECT_EQ(convert_pixel_component(200, 0, c), -56);
  c.in_precision = c.proc_precision = ConvPrecision::kInt16;
  EXPECT_EQ(convert_pixel_component(0xf234, 2, c), 0xf234 - 0x10000);
}

TEST(ConvertPixel, OffsetScaleTruncateRoundHalfAwayAndSaturate) {
  ImageConvert c;
  c.cvt_enable = true;
  c.cvt_offset = 128;
  EXPECT_EQ(convert_pixel_component(200, 0, c), 72);
  EXPECT_EQ(convert_pixel_component(0, 0, c), -128);
  EXPECT_EQ(convert_pixel_component(255, 0, c), 127);
  c.cvt_offset = 10;
  c.cvt_scale = 3;
  c.cvt_truncate = 2;
  EXPECT_EQ(convert_pixel_component(100, 0, c), 68);  // 270 / 4 = 67.5 -> 68
  EXPECT_EQ(convert_pixel_component(0, 0, c), -8);    // -30 / 4 = -7.5 -> -8
  EXPECT_EQ(convert_pixel_component(99, 0, c), 67);   // 267 / 4 = 66.75
  c.cvt_offset = 0;
  c.cvt_scale = 2;
  c.cvt_truncate = 0;
  EXPECT_EQ(convert_pixel_component(255, 0, c), 127);  // 510 saturates at INT8
  c.proc_precision = ConvPrecision::kInt16;
  EXPECT_EQ(convert_pixel_component(255, 0, c), 510);
  c.cvt_scale = -300;
  EXPECT_EQ(convert_pixel_component(255, 0, c), -32768);  // -76500 saturates at INT16
  // 16-bit pixels to INT8.
  c.in_precision = ConvPrecision::kInt16;
  c.proc_precision = ConvPrecision::kInt8;
  c.cvt_scale = 1;
  c.cvt_truncate = 8;
  c.cvt_offset = -32768;                                  // 0x8000 as a signed 16-bit offset
  EXPECT_EQ(convert_pixel_component(0xffc0, 0, c), 127);  // (65472 + 32768) >> 8 = 383.75
  c.cvt_offset = 0x7000;
  EXPECT_EQ(convert_pixel_component(0x7180, 0, c), 2);  // 0x180 >> 8 = 1.5 -> 2
}

TEST(ConvertPixel, MeanReplacesTheOffsetPerChannel) {
  ImageConvert c;
  c.cvt_enable = true;
  c.cvt_offset = 99;  // ignored while MEAN_FORMAT is enabled
  c.mean_enable = true;
  c.mean = {100, 50, 25, -7};
  EXPECT_EQ(convert_pixel_component(60, 0, c), -40);
  EXPECT_EQ(convert_pixel_component(60, 1, c), 10);
  EXPECT_EQ(convert_pixel_component(60, 2, c), 35);
  EXPECT_EQ(convert_pixel_component(60, 3, c), 67);
  c.sign_override = true;  // raw values are already signed
  EXPECT_EQ(convert_pixel_component(-56, 1, c), -106);
}

TEST(ReadImageCube, CdmaPadsLeftAndRightWithItsPaddingValue) {
  VecMemory mem(0x1000);
  mem.put(0, {200, 7});
  mem.put(64, {1, 2});
  ImageSurface s = surface(PixelFormat::kR8, 2, 2);
  ImageConvert c;
  c.pad_left = 1;
  c.pad_right = 2;
  c.pad_value = 0x1280;  // INT8 takes the low byte: -128
  const ConvCube cube = read_image_cube(s, c, mem);
  ASSERT_EQ(cube.width, 5u);
  ASSERT_EQ(cube.height, 2u);
  ASSERT_EQ(cube.channels, 1u);
  EXPECT_EQ(cube.data,
            (std::vector<std::int32_t>{-128, -56, 7, -128, -128, -128, 1, 2, -128, -128}));
  // INT16 processing (via the convertor) pads with all 16 bits, unconverted.
  c.cvt_enable = true;
  c.cvt_offset = 0;
  c.proc_precision = ConvPrecision::kInt16;
  const ConvCube wide = read_image_cube(s, c, mem);
  EXPECT_EQ(wide.at(0, 0, 0), 0x1280);
  EXPECT_EQ(wide.at(1, 0, 0), 200);
}

TEST(ReadImageCube, RefusesFp16AndUnconvertedPrecisionChange) {
  VecMemory mem(0x1000);
  ImageConvert c;
  EXPECT_THROW((void)read_image_cube(surface(PixelFormat::kR16_F), c, mem), std::runtime_error);
  c.proc_precision = ConvPrecision::kInt16;
  EXPECT_THROW((void)read_image_cube(surface(PixelFormat::kR8), c, mem), std::runtime_error);
}

TEST(ImageWeights, PreExtensionFoldsKernelWidthIntoChannels) {
  ConvWeights ext(1, 1, 1, 6);
  ext.data = {1, 2, 3, 4, 5, 6};
  const ConvWeights w = unfold_image_weights(ext, 3);
  ASSERT_EQ(w.kernel_width, 2u);
  ASSERT_EQ(w.channels, 3u);
  EXPECT_EQ(w.at(0, 0, 0, 0), 1);
  EXPECT_EQ(w.at(0, 0, 0, 2), 3);
  EXPECT_EQ(w.at(0, 0, 1, 0), 4);
  EXPECT_EQ(w.at(0, 0, 1, 2), 6);
  EXPECT_EQ(fold_image_weights(w).data, ext.data);
  EXPECT_THROW((void)unfold_image_weights(ext, 4), std::runtime_error);
}

TEST(ImageWeights, ExtendedKernelUsesTheDirectConvolutionLayout) {
  // K=1, R=2, S=3, C=4 -> extended 1 x 2 x 1 x 12; atomic-C 8: block 0 (channels 0..7) of rows
  // 0 and 1, then block 1 (channels 8..11) of rows 0 and 1.
  ConvWeights w(1, 2, 3, 4);
  const ConvWeights ext = fold_image_weights(w);
  const ConvWeightLayout layout{8, 8, ConvPrecision::kInt8};
  EXPECT_EQ(layout.offset(ext, 0, 0, 0, 7), 7u);
  EXPECT_EQ(layout.offset(ext, 0, 1, 0, 0), 8u);
  EXPECT_EQ(layout.offset(ext, 0, 0, 0, 8), 16u);
  EXPECT_EQ(layout.offset(ext, 0, 1, 0, 9), 21u);  // s = 2, c = 1 of row 1
}

TEST(ImageConv, PaddedCubeAndUnfoldedWeightsGiveTheHandResult) {
  // R8 line [1, 2, 3], raw; pad_left 1 (value 0); kernel 1 x 2 with taps [10, 1], stride 1.
  VecMemory mem(0x1000);
  mem.put(0, {1, 2, 3});
  ImageConvert c;
  c.pad_left = 1;
  const ConvCube in = read_image_cube(surface(PixelFormat::kR8, 3, 1), c, mem);
  ConvWeights ext(1, 1, 1, 2);
  ext.data = {10, 1};
  ConvParams p;
  p.out_width = conv_output_size(3, 1, 0, 2, 1, 1);
  ASSERT_EQ(p.out_width, 3u);
  const ConvResult r = run_conv_int(in, unfold_image_weights(ext, 1), p, 8);
  EXPECT_EQ(r.out.at(0, 0, 0), 1);   // 0*10 + 1*1
  EXPECT_EQ(r.out.at(1, 0, 0), 12);  // 1*10 + 2*1
  EXPECT_EQ(r.out.at(2, 0, 0), 23);  // 2*10 + 3*1
}

TEST(ImageFetch, WholeAtomsOfEachPlane) {
  ImageSurface s = surface(PixelFormat::kA8B8G8R8, 5, 3);
  s.x_offset = 1;
  EXPECT_EQ(image_fetch_bytes(s), 24u * 3);  // 6 pixels * 4 bytes = 3 atoms
  ImageSurface y = surface(PixelFormat::kY8___U8V8_N444, 10, 2);
  y.x_offset = 5;
  // Y: 15 bytes -> 16; UV: 5*2 % 8 = 2, + 20 = 22 -> 24.
  EXPECT_EQ(image_fetch_bytes(y), 40u * 2);
}

TEST(WriteImage, RoundTripsEveryIntegerFormat) {
  std::mt19937 rng(5);
  for (unsigned enc = 0; enc < 0x24; ++enc) {
    const PixelFormatInfo& info = *pixel_format_info(enc);
    if (info.in_precision == ConvPrecision::kFp16) continue;
    const auto f = static_cast<PixelFormat>(enc);
    ImageSurface s = surface(f, 5, 3);
    s.line_stride = 128;
    s.uv_line_stride = 128;
    s.x_offset = 3;
    ConvCube px(5, 3, info.channels);
    const bool ten = f >= PixelFormat::kA2B10G10R10 && f <= PixelFormat::kV10U10Y10A2;
    for (std::size_t i = 0; i < px.data.size(); ++i) {
      const unsigned c = static_cast<unsigned>(i / (5 * 3));
      std::uint32_t v = info.in_precision == ConvPrecision::kInt8 ? rng() % 256 : rng() % 65536;
      if (ten) v &= c == 3 ? 0xc000u : 0xffc0u;
      px.data[i] = static_cast<std::int32_t>(v);
    }
    VecMemory mem(0x1000);
    write_image(s, px, mem);
    for (std::uint32_t y = 0; y < 3; ++y) {
      for (std::uint32_t x = 0; x < 5; ++x) {
        const Px got = read_pixel(s, x, y, false, mem);
        for (unsigned c = 0; c < info.channels; ++c) {
          EXPECT_EQ(got[c], px.at(x, y, c)) << info.name << " x " << x << " y " << y << " c " << c;
        }
      }
    }
  }
}

}  // namespace
}  // namespace octasim::models::ops
