#include "models/ops/sdp_lut.hpp"

#include "models/numerics/int_range.hpp"
#include "models/precision/convertor.hpp"

namespace octasim::models::ops {
namespace {

// floor(log2(d)) for d > 0.
unsigned log2_floor(std::uint32_t d) {
  unsigned n = 0;
  while (d >>= 1) ++n;
  return n;
}

// x - start as the hardware's 32-bit unsigned difference; only used when x > start.
std::uint32_t positive_difference(std::int32_t x, std::int32_t start) {
  return static_cast<std::uint32_t>(std::int64_t{x} - start);
}

}  // namespace

SdpLutIndex sdp_lut_exponent_index(std::int32_t x, std::int32_t start, std::int8_t index_offset) {
  SdpLutIndex r;
  if (x <= start) {
    r.uflow = true;
    return r;
  }
  const std::uint32_t d = positive_difference(x, start);
  const unsigned exponent = log2_floor(d);
  if (static_cast<int>(exponent) < index_offset) {
    r.uflow = true;
    return r;
  }
  const unsigned index = static_cast<unsigned>(static_cast<int>(exponent) - index_offset);
  if (index >= kSdpLutLeEntries - 1) {
    r.oflow = true;
    r.index = kSdpLutLeEntries - 1;
    return r;
  }
  r.index = index;
  // The bits below the leading one, as a fraction of 2^exponent (exponent <= 31 < 35).
  const std::uint64_t below = d - (std::uint64_t{1} << exponent);
  r.fraction = below << (kSdpLutFractionBits - exponent);
  return r;
}

SdpLutIndex sdp_lut_linear_index(std::int32_t x, std::int32_t start, std::int8_t index_select,
                                 unsigned entries) {
  SdpLutIndex r;
  if (x <= start) {
    r.uflow = true;
    return r;
  }
  const std::uint64_t u = positive_difference(x, start);
  // The index is u >> select truncated toward zero and saturated to 9 bits; a negative select
  // shifts left.
  constexpr std::uint64_t kIndexMax = 511;
  std::uint64_t index = 0;
  if (index_select >= 0) {
    index = index_select >= 32 ? 0 : u >> index_select;
  } else {
    const int left = -index_select;
    index = left >= 10 ? kIndexMax : u << left;
  }
  if (index > kIndexMax) index = kIndexMax;
  if (index >= entries - 1) {
    r.oflow = true;
    r.index = entries - 1;
    return r;
  }
  r.index = static_cast<unsigned>(index);
  if (index_select > 0) {
    const int sel = index_select;
    const std::uint64_t below = sel >= 32 ? u : u & ((std::uint64_t{1} << sel) - 1);
    if (sel <= static_cast<int>(kSdpLutFractionBits)) {
      r.fraction = below << (static_cast<int>(kSdpLutFractionBits) - sel);
    } else {
      const int right = sel - static_cast<int>(kSdpLutFractionBits);
      r.fraction = right >= 64 ? 0 : below >> right;
    }
  }
  return r;
}

SdpLutResult sdp_lut_lookup(const SdpLutConfig& lut, std::int32_t x) {
  const SdpLutIndex le =
      lut.le_linear ? sdp_lut_linear_index(x, lut.le_start, lut.le_index_select, kSdpLutLeEntries)
                    : sdp_lut_exponent_index(x, lut.le_start, lut.le_index_offset);
  const SdpLutIndex lo =
      sdp_lut_linear_index(x, lut.lo_start, lut.lo_index_select, kSdpLutLoEntries);

  // Which table answers: both under (uflow priority), both over (oflow priority), both in range
  // or one under and one over (hybrid priority), otherwise the one in range.
  bool use_lo = false;
  if (le.uflow && lo.uflow) {
    use_lo = lut.uflow_priority_lo;
  } else if (le.oflow && lo.oflow) {
    use_lo = lut.oflow_priority_lo;
  } else if (le.hit() == lo.hit()) {
    use_lo = lut.hybrid_priority_lo;
  } else {
    use_lo = lo.hit();
  }
  const SdpLutIndex& sel = use_lo ? lo : le;

  SdpLutResult r;
  r.uflow = sel.uflow;
  r.oflow = sel.oflow;
  r.le_hit = le.hit();
  r.lo_hit = lo.hit();

  const std::int16_t* table = use_lo ? lut.lo.data() : lut.le.data();
  const std::int64_t y0 = table[sel.index];
  if (sel.hit()) {
    // y0 * (1 - f) + y1 * f with a 35-bit fraction, rounded, saturated to INT32.
    const std::int64_t y1 = table[sel.index + 1];
    const std::int64_t f = static_cast<std::int64_t>(sel.fraction);
    const std::int64_t sum = y0 * ((std::int64_t{1} << kSdpLutFractionBits) - f) + y1 * f;
    r.value =
        static_cast<std::int32_t>(truncate(sum, kSdpLutFractionBits, IntPrecision::kInt32).value);
    return r;
  }

  // Outside the table: y0 + ((x - point) * scale) >> shift, where point is the table's start
  // (underflow) or end (overflow); the LE exponent table's first entry sits at
  // start + 2^index_offset.
  std::int64_t point = 0;
  std::int16_t scale = 0;
  int shift = 0;
  if (use_lo) {
    point = sel.oflow ? lut.lo_end : lut.lo_start;
    scale = sel.oflow ? lut.lo_oflow_scale : lut.lo_uflow_scale;
    shift = sel.oflow ? lut.lo_oflow_shift : lut.lo_uflow_shift;
  } else {
    point = sel.oflow ? lut.le_end : lut.le_start;
    scale = sel.oflow ? lut.le_oflow_scale : lut.le_uflow_scale;
    shift = sel.oflow ? lut.le_oflow_shift : lut.le_uflow_shift;
    if (!lut.le_linear && sel.uflow && lut.le_index_offset > 0 && lut.le_index_offset < 32) {
      point += std::int64_t{1} << lut.le_index_offset;
    }
  }
  const std::int64_t scaled = (std::int64_t{x} - point) * scale;
  const std::int64_t slope =
      shift >= 0
          ? truncate(scaled, static_cast<unsigned>(shift), IntPrecision::kInt32).value
          : shift_left_saturate(scaled, static_cast<unsigned>(-shift), IntPrecision::kInt32).value;
  r.value = static_cast<std::int32_t>(saturate(y0 + slope, IntPrecision::kInt32).value);
  return r;
}

}  // namespace octasim::models::ops
