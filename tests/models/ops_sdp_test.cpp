// The SDP datapath and layer walker (models/ops/sdp.hpp) on hand-computed cases.
#include "models/ops/sdp.hpp"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace octasim::models::ops {
namespace {

// A sparse byte memory; unwritten bytes read as zero.
class MapMemory final : public Memory {
 public:
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override {
    for (std::size_t i = 0; i < size; ++i) {
      const auto it = bytes_.find(addr + i);
      dst[i] = it == bytes_.end() ? 0 : it->second;
    }
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override {
    for (std::size_t i = 0; i < size; ++i) bytes_[addr + i] = src[i];
  }
  void put8(std::uint64_t addr, std::int8_t v) { bytes_[addr] = static_cast<std::uint8_t>(v); }
  void put16(std::uint64_t addr, std::int16_t v) {
    bytes_[addr] = static_cast<std::uint8_t>(v & 0xff);
    bytes_[addr + 1] = static_cast<std::uint8_t>((static_cast<std::uint16_t>(v) >> 8) & 0xff);
  }
  [[nodiscard]] std::int8_t get8(std::uint64_t addr) const {
    const auto it = bytes_.find(addr);
    return static_cast<std::int8_t>(it == bytes_.end() ? 0 : it->second);
  }
  [[nodiscard]] bool written(std::uint64_t addr) const { return bytes_.count(addr) != 0; }

 private:
  std::map<std::uint64_t, std::uint8_t> bytes_;
};

SdpXConfig bs_add_mul(std::int16_t add, unsigned add_shift, std::int16_t mul, unsigned mul_shift,
                      bool relu) {
  SdpXConfig x;
  x.bypass = false;
  x.alu_bypass = false;
  x.alu_algo = SdpAluAlgo::kSum;
  x.alu_operand = add;
  x.alu_shift = static_cast<std::uint8_t>(add_shift);
  x.mul_bypass = false;
  x.mul_operand = mul;
  x.mul_shift = static_cast<std::uint8_t>(mul_shift);
  x.relu_bypass = !relu;
  return x;
}

TEST(SdpXStage, AluMultiplierTruncationRelu) {
  // (in + (3 << 2)) * 5 >> 1, then ReLU.
  const SdpXConfig x = bs_add_mul(3, 2, 5, 1, true);
  EXPECT_EQ(SdpDatapath::x_stage(x, 10, 0, 0), 55);  // 22 * 5 / 2
  EXPECT_EQ(SdpDatapath::x_stage(x, -20, 0, 0), 0);  // -8 * 5 / 2 = -20 -> ReLU
  EXPECT_EQ(SdpDatapath::x_stage(x, -11, 0, 0), 3);  // 1 * 5 / 2 = 2.5 -> 3
}

TEST(SdpXStage, MemoryOperandsReplaceRegisters) {
  SdpXConfig x = bs_add_mul(3, 0, 5, 0, false);
  x.alu_src = SdpOperandSource::kMemory;
  x.mul_src = SdpOperandSource::kMemory;
  EXPECT_EQ(SdpDatapath::x_stage(x, 10, -4, 7), 42);  // (10 - 4) * 7
}

TEST(SdpXStage, PreluOnNegativeOnly) {
  SdpXConfig x;
  x.bypass = false;
  x.mul_bypass = false;
  x.mul_prelu = true;
  x.mul_operand = 3;
  x.mul_shift = 2;
  EXPECT_EQ(SdpDatapath::x_stage(x, 9, 0, 0), 9);
  EXPECT_EQ(SdpDatapath::x_stage(x, -9, 0, 0), -7);  // -27 / 4 = -6.75
}

TEST(SdpDatapath, StagesRunInOrderThenConvert) {
  SdpConfig cfg;
  cfg.bs = bs_add_mul(2, 0, 1, 0, false);  // + 2
  cfg.bn = bs_add_mul(0, 0, 3, 0, false);  // * 3
  cfg.cvt = {1, 1, 1};                     // (x - 1) / 2
  const SdpDatapath dp(cfg);
  SdpStats stats;
  EXPECT_EQ(dp.process(4, {}, stats), 9);       // ((4 + 2) * 3 - 1) / 2 = 8.5 -> 9
  EXPECT_EQ(dp.process(-4, {}, stats), -4);     // (-6 - 1) / 2 = -3.5 -> -4
  EXPECT_EQ(dp.process(100, {}, stats), 127);   // (306 - 1) / 2 -> 153 clamps to INT8 ...
  EXPECT_EQ(stats.out_saturation.value(), 0u);  // ... without a 17-bit saturation
}

TEST(SdpDatapath, SaturationCounterCountsSeventeenBitOverflow) {
  SdpConfig cfg;
  cfg.cvt = {0, 1000, 0};
  const SdpDatapath dp(cfg);
  SdpStats stats;
  EXPECT_EQ(dp.process(65, {}, stats), 127);  // 65000 fits 17 bits
  EXPECT_EQ(dp.process(66, {}, stats), 127);  // 66000 does not
  EXPECT_EQ(dp.process(-66, {}, stats), -128);
  EXPECT_EQ(stats.out_saturation.value(), 2u);
}

TEST(SdpDatapath, EwMultiplierThenAlu) {
  SdpConfig cfg;
  cfg.ew.bypass = false;
  cfg.ew.mul_bypass = false;
  cfg.ew.mul_operand = 3;
  cfg.ew.truncate = 1;
  cfg.ew.alu_bypass = false;
  cfg.ew.alu_algo = SdpAluAlgo::kSum;
  cfg.ew.alu_operand = 10;
  const SdpDatapath dp(cfg);
  SdpStats stats;
  EXPECT_EQ(dp.process(5, {}, stats), 18);  // 15 / 2 = 7.5 -> 8, + 10
}

TEST(SdpDatapath, EwMemoryOperandsGoThroughTheirConvertors) {
  SdpConfig cfg;
  cfg.ew.bypass = false;
  cfg.ew.alu_bypass = false;
  cfg.ew.alu_algo = SdpAluAlgo::kSum;
  cfg.ew.alu_src = SdpOperandSource::kMemory;
  cfg.ew.alu_cvt = {false, 4, 3, 1};  // (10 - 4) * 3 / 2 = 9
  const SdpDatapath dp(cfg);
  SdpStats stats;
  SdpOperands ops;
  ops.ew_alu = 10;
  EXPECT_EQ(dp.process(5, ops, stats), 14);
  cfg.ew.alu_cvt.bypass = true;  // the raw operand
  const SdpDatapath raw(cfg);
  EXPECT_EQ(raw.process(5, ops, stats), 15);
}

TEST(SdpDatapath, EqlModeReportsMismatches) {
  SdpConfig cfg;
  cfg.ew.bypass = false;
  cfg.ew.alu_bypass = false;
  cfg.ew.alu_algo = SdpAluAlgo::kEql;
  cfg.ew.alu_operand = 5;
  const SdpDatapath dp(cfg);
  SdpStats stats;
  EXPECT_EQ(dp.process(5, {}, stats), 0);
  EXPECT_FALSE(stats.unequal);
  EXPECT_EQ(dp.process(6, {}, stats), 1);
  EXPECT_TRUE(stats.unequal);
}

TEST(SdpDatapath, LutCountersFollowTheChosenTable) {
  SdpConfig cfg;
  cfg.ew.bypass = false;
  cfg.ew.lut_bypass = false;
  cfg.lut.le_linear = true;
  cfg.lut.le_start = 0;
  cfg.lut.lo_start = 100;
  for (unsigned i = 0; i < kSdpLutLeEntries; ++i) cfg.lut.le[i] = static_cast<std::int16_t>(i);
  const SdpDatapath dp(cfg);
  SdpStats stats;
  EXPECT_EQ(dp.process(7, {}, stats), 7);  // LE hit, LO under: LE answers
  (void)dp.process(-7, {}, stats);         // both under
  (void)dp.process(1000, {}, stats);       // LE over, LO over (1000 - 100 >= 256)
  EXPECT_EQ(stats.lut_le_hit.value(), 1u);
  EXPECT_EQ(stats.lut_lo_hit.value(), 0u);
  EXPECT_EQ(stats.lut_uflow.value(), 1u);
  EXPECT_EQ(stats.lut_oflow.value(), 1u);
  EXPECT_EQ(stats.lut_hybrid.value(), 1u);
}

// A 2x2x10 INT8 cube with 8-byte atoms: two surfaces, the second with 2 real channels and 6
// padding channels.
SdpConfig small_layer() {
  SdpConfig cfg;
  cfg.width = 2;
  cfg.height = 2;
  cfg.channels = 10;
  cfg.atom_bytes = 8;
  cfg.src_base = 0x1000;
  cfg.src_line_stride = 0x40;
  cfg.src_surface_stride = 0x100;
  cfg.dst_base = 0x8000;
  cfg.dst_line_stride = 0x20;
  cfg.dst_surface_stride = 0x80;
  return cfg;
}

std::int8_t input_value(unsigned w, unsigned h, unsigned c) {
  return static_cast<std::int8_t>(static_cast<int>(c * 10 + h * 3 + w) - 40);
}

void fill_input(MapMemory& mem, const SdpConfig& cfg) {
  for (unsigned c = 0; c < cfg.channels; ++c) {
    for (unsigned h = 0; h < cfg.height; ++h) {
      for (unsigned w = 0; w < cfg.width; ++w) {
        const std::uint64_t addr = sdp_atom_address(cfg.src_base, cfg.src_line_stride,
                                                    cfg.src_surface_stride, 8, w, h, c / 8) +
                                   c % 8;
        mem.put8(addr, input_value(w, h, c));
      }
    }
  }
}

std::uint64_t out_addr(const SdpConfig& cfg, unsigned w, unsigned h, unsigned c) {
  return cfg.dst_base + (c / 8) * cfg.dst_surface_stride + h * cfg.dst_line_stride + w * 8 + c % 8;
}

TEST(SdpAtomAddress, PitchLinear) {
  EXPECT_EQ(sdp_atom_address(0x1000, 0x40, 0x100, 8, 0, 0, 0), 0x1000u);
  EXPECT_EQ(sdp_atom_address(0x1000, 0x40, 0x100, 8, 3, 0, 0), 0x1018u);
  EXPECT_EQ(sdp_atom_address(0x1000, 0x40, 0x100, 8, 1, 2, 3), 0x1000u + 0x300 + 0x80 + 8);
}

TEST(SdpLayer, WalksSurfacesLinesAndAtomsIncludingPadding) {
  SdpConfig cfg = small_layer();
  cfg.bs = bs_add_mul(1, 0, 1, 0, false);  // + 1
  MapMemory mem;
  fill_input(mem, cfg);
  const SdpLayerResult r = run_sdp_layer(cfg, mem);
  for (unsigned c = 0; c < 16; ++c) {
    for (unsigned h = 0; h < 2; ++h) {
      for (unsigned w = 0; w < 2; ++w) {
        const int want = c < 10 ? input_value(w, h, c) + 1 : 1;  // padding: 0 + 1
        EXPECT_EQ(mem.get8(out_addr(cfg, w, h, c)), want) << "w=" << w << " h=" << h << " c=" << c;
      }
    }
  }
  // Between lines nothing is written.
  EXPECT_FALSE(mem.written(cfg.dst_base + 16));
  EXPECT_EQ(r.bytes_read, 2u * 2 * 2 * 8);
  EXPECT_EQ(r.bytes_written, 2u * 2 * 2 * 8);
}

TEST(SdpLayer, PerChannelOperandsWithBothComponents) {
  SdpConfig cfg = small_layer();
  cfg.bn = bs_add_mul(0, 0, 0, 0, false);
  cfg.bn.alu_src = SdpOperandSource::kMemory;
  cfg.bn.mul_src = SdpOperandSource::kMemory;
  cfg.nrdma.enabled = true;
  cfg.nrdma.use = SdpDataUse::kBoth;
  cfg.nrdma.bytes_per_component = 2;
  cfg.nrdma.mode = SdpDataMode::kPerChannel;
  cfg.nrdma.base = 0x4000;
  MapMemory mem;
  fill_input(mem, cfg);
  // Channel c: ALU operand c (INT16), then multiplier operand (c % 3) - 1 (INT16).
  for (unsigned c = 0; c < 16; ++c) {
    mem.put16(0x4000 + c * 4, static_cast<std::int16_t>(c));
    mem.put16(0x4000 + c * 4 + 2, static_cast<std::int16_t>(static_cast<int>(c % 3) - 1));
  }
  const SdpLayerResult r = run_sdp_layer(cfg, mem);
  for (unsigned c = 0; c < 16; ++c) {
    const int in = c < 10 ? input_value(1, 1, c) : 0;
    int want = (in + static_cast<int>(c)) * (static_cast<int>(c % 3) - 1);
    want = want > 127 ? 127 : (want < -128 ? -128 : want);
    EXPECT_EQ(mem.get8(out_addr(cfg, 1, 1, c)), want) << "c=" << c;
  }
  EXPECT_EQ(r.bytes_read, 64u + 16 * 4);
}

TEST(SdpLayer, PerElementOperandSurface) {
  SdpConfig cfg = small_layer();
  cfg.bs = bs_add_mul(0, 1, 1, 0, false);  // + (operand << 1)
  cfg.bs.alu_src = SdpOperandSource::kMemory;
  cfg.brdma.enabled = true;
  cfg.brdma.use = SdpDataUse::kAlu;
  cfg.brdma.bytes_per_component = 1;
  cfg.brdma.mode = SdpDataMode::kPerElement;
  cfg.brdma.base = 0x6000;
  cfg.brdma.line_stride = 0x10;
  cfg.brdma.surface_stride = 0x40;
  MapMemory mem;
  fill_input(mem, cfg);
  // Operand at (w=1, h=1, c=9): surface 1, line 1, atom 1, element 1.
  mem.put8(0x6000 + 0x40 + 0x10 + 8 + 1, 5);
  (void)run_sdp_layer(cfg, mem);
  EXPECT_EQ(mem.get8(out_addr(cfg, 1, 1, 9)), input_value(1, 1, 9) + 10);
  EXPECT_EQ(mem.get8(out_addr(cfg, 0, 1, 9)), input_value(0, 1, 9));
}

TEST(SdpLayer, OneByOneCubeIsPacked) {
  SdpConfig cfg = small_layer();
  cfg.width = 1;
  cfg.height = 1;
  cfg.channels = 16;
  cfg.src_surface_stride = 0x1000;  // ignored for 1x1: atoms are packed
  cfg.dst_surface_stride = 0x1000;
  MapMemory mem;
  for (unsigned c = 0; c < 16; ++c) mem.put8(cfg.src_base + c, static_cast<std::int8_t>(c));
  (void)run_sdp_layer(cfg, mem);
  for (unsigned c = 0; c < 16; ++c) EXPECT_EQ(mem.get8(cfg.dst_base + c), static_cast<int>(c));
}

TEST(SdpLayer, EqlModeWritesNothing) {
  SdpConfig cfg = small_layer();
  cfg.ew.bypass = false;
  cfg.ew.alu_bypass = false;
  cfg.ew.alu_algo = SdpAluAlgo::kEql;
  cfg.ew.alu_operand = 0;
  MapMemory mem;
  const SdpLayerResult same = run_sdp_layer(cfg, mem);  // all-zero input equals 0
  EXPECT_FALSE(same.stats.unequal);
  EXPECT_EQ(same.bytes_written, 0u);
  EXPECT_FALSE(mem.written(cfg.dst_base));
  fill_input(mem, cfg);
  EXPECT_TRUE(run_sdp_layer(cfg, mem).stats.unequal);
}

TEST(SdpLayer, RejectsWhatItCannotRun) {
  MapMemory mem;
  SdpConfig cfg = small_layer();
  cfg.flying = true;
  EXPECT_THROW((void)run_sdp_layer(cfg, mem), std::runtime_error);
  cfg = small_layer();
  cfg.proc_precision = SdpPrecision::kFp16;
  EXPECT_THROW((void)run_sdp_layer(cfg, mem), std::runtime_error);
  cfg = small_layer();
  cfg.out_precision = SdpPrecision::kInt16;
  EXPECT_THROW((void)run_sdp_layer(cfg, mem), std::runtime_error);
  cfg = small_layer();
  cfg.bs = bs_add_mul(0, 0, 1, 0, false);
  cfg.bs.alu_src = SdpOperandSource::kMemory;  // BRDMA left disabled
  EXPECT_THROW((void)run_sdp_layer(cfg, mem), std::runtime_error);
  cfg.brdma.enabled = true;
  cfg.brdma.use = SdpDataUse::kMul;  // streams the multiplier operand only
  EXPECT_THROW((void)run_sdp_layer(cfg, mem), std::runtime_error);
}

}  // namespace
}  // namespace octasim::models::ops
