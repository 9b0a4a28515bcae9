// NVDLA image input (CDMA DATAIN_FORMAT=PIXEL): pixel surfaces -> the cube the CSC convolves,
// and the image-weight pre-extension. Rules from format.rst ("Pixel Format", "Basic Weight for
// image input"), v1_ias_unit_description.rst ("Convolution with Image Input") and NVDLA's
// C-model (cmod/cdma image sequencer, cmod/csc image data path); bit-exact with them.
//
// - Pixel layout. A pixel surface is pitch linear: line y of plane 0 at base0 + y*line_stride,
//   pixel x of the region at byte (x_offset + x) * bytes_per_pixel of the line (PIXEL_X_OFFSET
//   skips whole pixels after the 32-byte aligned start). Format names list components from the
//   most significant end of the little-endian pixel word: A8B8G8R8 holds R in byte 0, A in
//   byte 3; R8G8B8A8 holds A in byte 0, R in byte 3; the 10-bit formats pack a 32-bit word the
//   same way (A2B10G10R10: R in bits 0..9, A in bits 30..31).
// - Semi-planar YUV (Y8___U8V8_N444 ...): Y in plane 0 (1 or 2 bytes a pixel), the two chroma
//   samples of every pixel in plane 1 at base1 + y*LINE_UV_STRIDE (2 or 4 bytes a pixel);
//   "U8V8" puts V in the first chroma sample and U in the second ("V8U8" the reverse). Plane 1
//   applies the x offset modulo one memory atom: when x_offset * chroma bytes reaches an atom,
//   base1 is taken to point one atom further in, i.e. chroma of pixel x is at
//   (x_offset + x - atom / chroma bytes) * chroma bytes (NVDLA's C-model).
// - CBUF order. Components are stored R/Y, G/U, B/V, A/X (1, 3 or 4 a pixel — the format's
//   channel count, which DATAIN_CHANNEL must equal); X components are data like any other.
// - Component value: 8-bit components as 0..255 and 10/12/16-bit words as 0..65535 (10-bit
//   fields left-aligned: v << 6, 2-bit alpha << 14), or as two's-complement signed values when
//   PIXEL_SIGN_OVERRIDE is set.
// - cc_cvt (CDMA D_CVT_CFG/OFFSET/SCALE) when CVT_EN: y = saturate_proc(round_half_away(
//   ((x - m) * scale) >> truncate)), m = the channel's MEAN_GLOBAL value (RY, GU, BV, AX) when
//   MEAN_FORMAT is enabled, else CVT_OFFSET (the mean replaces the offset, it does not add to
//   it); means, offset and scale are signed 16-bit. Without CVT_EN the component's bits pass
//   unchanged into the pipeline's element (so 8-bit 200 is INT8 -56) and MEAN_FORMAT has no
//   effect; the input and processing precisions must then be equal.
// - Left/right padding is done by CDMA: PAD_LEFT and PAD_RIGHT pixels of CDMA's PADDING_VALUE
//   (INT8: its low byte) in every component, not converted. Top/bottom padding is CSC's
//   (PADDING_VALUE of CSC), handled by run_conv_int as for feature input.
// - Channel pre-extension (mandatory): CSC convolves each output position with a kernel of
//   width 1, height R and S*C channels; extended channel e = s*C + c of kernel row r is weight
//   (r, s, c) — the CSC reads S*C consecutive elements of the CBUF line starting at output
//   x * stride_x * C. Software lays the extended kernel out in the direct-convolution weight
//   format (ConvWeightLayout with kernel_width 1, channels S*C). unfold_image_weights and
//   fold_image_weights convert between the two views, so run_conv_int on the padded image
//   cube gives NVDLA's result.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "models/ops/conv.hpp"
#include "models/ops/memory.hpp"

namespace octasim::models::ops {

// CDMA D_DATAIN_FORMAT PIXEL_FORMAT encodings.
enum class PixelFormat : std::uint8_t {
  kR8 = 0x0,
  kR10 = 0x1,
  kR12 = 0x2,
  kR16 = 0x3,
  kR16_I = 0x4,
  kR16_F = 0x5,
  kA16B16G16R16 = 0x6,
  kX16B16G16R16 = 0x7,
  kA16B16G16R16_F = 0x8,
  kA16Y16U16V16 = 0x9,
  kV16U16Y16A16 = 0xa,
  kA16Y16U16V16_F = 0xb,
  kA8B8G8R8 = 0xc,
  kA8R8G8B8 = 0xd,
  kB8G8R8A8 = 0xe,
  kR8G8B8A8 = 0xf,
  kX8B8G8R8 = 0x10,
  kX8R8G8B8 = 0x11,
  kB8G8R8X8 = 0x12,
  kR8G8B8X8 = 0x13,
  kA2B10G10R10 = 0x14,
  kA2R10G10B10 = 0x15,
  kB10G10R10A2 = 0x16,
  kR10G10B10A2 = 0x17,
  kA2Y10U10V10 = 0x18,
  kV10U10Y10A2 = 0x19,
  kA8Y8U8V8 = 0x1a,
  kV8U8Y8A8 = 0x1b,
  kY8___U8V8_N444 = 0x1c,
  kY8___V8U8_N444 = 0x1d,
  kY10___U10V10_N444 = 0x1e,
  kY10___V10U10_N444 = 0x1f,
  kY12___U12V12_N444 = 0x20,
  kY12___V12U12_N444 = 0x21,
  kY16___U16V16_N444 = 0x22,
  kY16___V16U16_N444 = 0x23,
};

struct PixelFormatInfo {
  const char* name;             // NVDLA's name, e.g. "T_A8B8G8R8"
  unsigned planes;              // 1 (packed) or 2 (semi-planar Y + UV)
  unsigned channels;            // components a pixel in CBUF: the valid DATAIN_CHANNEL
  unsigned bytes_per_pixel;     // plane 0
  unsigned uv_bytes_per_pixel;  // plane 1 (semi-planar), else 0
  ConvPrecision in_precision;   // the valid IN_PRECISION (INT8, INT16 or FP16)
};

// The format with CDMA PIXEL_FORMAT encoding `encoding`, or nullptr for a reserved encoding.
[[nodiscard]] const PixelFormatInfo* pixel_format_info(unsigned encoding);
[[nodiscard]] const PixelFormatInfo& pixel_format_info(PixelFormat f);

// A pitch-linear pixel region in memory.
struct ImageSurface {
  PixelFormat format = PixelFormat::kA8B8G8R8;
  std::uint64_t base0 = 0, base1 = 0;  // D_DAIN_ADDR_*_0 (Y or packed), D_DAIN_ADDR_*_1 (UV)
  std::uint32_t line_stride = 0, uv_line_stride = 0;
  std::uint32_t width = 0, height = 0;  // region size in pixels
  std::uint32_t x_offset = 0;           // PIXEL_X_OFFSET
  unsigned atom_elements = 8;  // the configuration's memory atom (NVDLA_MEMORY_ATOMIC_SIZE)
};

// CDMA's conversion of pixel components to the processing precision, and its padding.
struct ImageConvert {
  ConvPrecision in_precision = ConvPrecision::kInt8;    // CDMA IN_PRECISION
  ConvPrecision proc_precision = ConvPrecision::kInt8;  // CDMA PROC_PRECISION
  bool sign_override = false;                           // PIXEL_SIGN_OVERRIDE
  bool cvt_enable = false;                              // D_CVT_CFG CVT_EN
  std::int16_t cvt_offset = 0;
  std::int16_t cvt_scale = 1;
  unsigned cvt_truncate = 0;                  // 0..63
  bool mean_enable = false;                   // D_MEAN_FORMAT
  std::array<std::int16_t, 4> mean{};         // RY, GU, BV, AX
  std::uint32_t pad_left = 0, pad_right = 0;  // CDMA PAD_LEFT / PAD_RIGHT (pixels)
  std::uint16_t pad_value = 0;                // CDMA PADDING_VALUE (16 bits as programmed)
};

// The raw components of pixel (x, y) of the region in CBUF order (R/Y, G/U, B/V, A/X; unused
// entries 0), as unsigned values, or signed with `sign_override`.
[[nodiscard]] std::array<std::int32_t, 4> read_pixel(const ImageSurface& s, std::uint32_t x,
                                                     std::uint32_t y, bool sign_override,
                                                     const Memory& mem);

// One component (CBUF channel `channel`, 0..3) converted to the processing precision: the
// value the CMAC multiplies (sign-extended INT8/INT16).
[[nodiscard]] std::int32_t convert_pixel_component(std::int32_t raw, unsigned channel,
                                                   const ImageConvert& cvt);

// The cube CSC convolves: (pad_left + width + pad_right) x height x channels, left/right
// padding included, components converted. Throws std::runtime_error for an FP16 format or
// precision, or INT precisions that differ without CVT_EN.
[[nodiscard]] ConvCube read_image_cube(const ImageSurface& s, const ImageConvert& cvt,
                                       const Memory& mem);

// Bytes CDMA fetches for the region: per line, x_offset + width pixels of each plane rounded
// up to whole atoms.
[[nodiscard]] std::uint64_t image_fetch_bytes(const ImageSurface& s);

// Writes a pixel region (inverse of read_pixel for unsigned components): `pixels` holds
// channels x width x height raw component values, channel-planar like ConvCube. Lines are
// written from the 32-byte aligned start (the x_offset pixels before the region are zero).
// For firmware and tests.
void write_image(const ImageSurface& s, const ConvCube& pixels, Memory& mem);

// Pre-extension views of image weights. `extended` is kernels x R x 1 x (S*C) (what the CSC
// sees); the result is kernels x R x S x C with weight (k, r, s, c) = extended (k, r, 0, s*C+c).
[[nodiscard]] ConvWeights unfold_image_weights(const ConvWeights& extended,
                                               std::uint32_t pixel_channels);
// The inverse: kernels x R x S x C -> kernels x R x 1 x (S*C).
[[nodiscard]] ConvWeights fold_image_weights(const ConvWeights& w);

[[nodiscard]] std::string pixel_format_name(unsigned encoding);

}  // namespace octasim::models::ops
