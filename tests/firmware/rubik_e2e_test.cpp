// End to end: Rubik contract, split and merge on nv_full, programmed by firmware/dla/rubik and
// recorded as NVDLA traces whose golden CRC comes from models/ops/rubik. The golden itself is
// checked here element by element against the mode's definition written out in the test (not
// by calling the op), so wrong strides in firmware or model cannot agree by accident. Played on
// the functional device in this process and by `octasim run --config nv_full` on the
// cycle-level device in its own process, whose cycles must be at least the bytes moved over
// the interface's bytes per cycle. nv_large (no Rubik), CV-SRAM surfaces and inconsistent
// programming are refused with one line.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/dla/rubik.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "models/ops/rubik.hpp"
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

constexpr std::uint64_t kInput = 0x80000000, kOutput = 0x80400000;
constexpr unsigned kAtom = 32;  // nv_full's memory atom

enum class Kind { kContract, kSplit, kMerge };

struct RubikCase {
  std::string name;
  Kind kind = Kind::kContract;
  Precision precision = Precision::kInt8;
  std::uint32_t width = 4, height = 3, channels = 32;  // contract: C' (output channels)
  unsigned x_stride = 2, y_stride = 2;
  std::uint32_t planes = 0;  // split: planes taken (0: all channels)
};

void PrintTo(const RubikCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<RubikCase> cases() {
  std::vector<RubikCase> v;
  v.push_back({"contract_int8_2x3", Kind::kContract, Precision::kInt8, 5, 4, 32, 2, 3, 0});
  v.push_back({"contract_int16_3x2", Kind::kContract, Precision::kInt16, 7, 3, 32, 3, 2, 0});
  v.push_back({"contract_int8_1x4_c64", Kind::kContract, Precision::kInt8, 6, 2, 64, 1, 4, 0});
  v.push_back({"split_int8_c40", Kind::kSplit, Precision::kInt8, 9, 5, 40, 1, 1, 0});
  v.push_back({"split_int16_c21_of_30", Kind::kSplit, Precision::kInt16, 33, 3, 30, 1, 1, 21});
  v.push_back({"merge_int8_c37", Kind::kMerge, Precision::kInt8, 70, 3, 37, 1, 1, 0});
  v.push_back({"merge_int16_c9", Kind::kMerge, Precision::kInt16, 12, 4, 9, 1, 1, 0});
  return v;
}

struct Recorded {
  std::string cfg;
  std::uint64_t bytes_read = 0, bytes_written = 0;  // from the geometry, worked out here
};

std::vector<std::uint8_t> element(const HostMemory& m, std::uint64_t addr, Precision p) {
  return m.bytes(addr, element_bytes(p));
}

// Register value overrides applied to the recorded programming (refusal tests).
using Overrides = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
class OverrideMmio final : public Mmio {
 public:
  OverrideMmio(Mmio& to, Overrides o) : to_(to), o_(std::move(o)) {}
  void write32(std::uint32_t addr, std::uint32_t value) override {
    for (const auto& [a, v] : o_) {
      if (a == addr) value = v;
    }
    to_.write32(addr, value);
  }
  [[nodiscard]] std::uint32_t read32(std::uint32_t addr) override { return to_.read32(addr); }
  void wait_interrupt(unsigned bit) override { to_.wait_interrupt(bit); }

 private:
  Mmio& to_;
  Overrides o_;
};

// Fills the input with random bytes (padding lanes included), runs the models/ golden, checks
// it element by element against the mode's definition and records the trace.
Recorded record(const RubikCase& rc, const std::string& dir, const Overrides& overrides = {}) {
  const Precision p = rc.precision;
  const unsigned eb = element_bytes(p);
  std::mt19937 rng(static_cast<std::uint32_t>(std::hash<std::string>{}(rc.name) & 0xffffffffu));
  HostMemory golden;
  std::vector<std::uint8_t> input;
  std::uint64_t out_bytes = 0;
  Recorded r;
  TraceWriter t;
  OverrideMmio mmio(t, overrides);
  unsigned bit = 0;
  models::ops::RubikParams params;
  const auto random_bytes = [&](std::uint64_t n) {
    std::vector<std::uint8_t> b(n);
    for (auto& x : b) x = static_cast<std::uint8_t>(rng());
    return b;
  };
  if (rc.kind == Kind::kContract) {
    RubikContract op;
    op.precision = p;
    op.x_stride = rc.x_stride, op.y_stride = rc.y_stride;
    const std::uint32_t c_in = rc.channels * rc.x_stride * rc.y_stride;
    op.src = packed_surface(kInput, rc.width, rc.height, c_in, kAtom);
    op.dst = packed_surface(kOutput, rc.width * rc.x_stride, rc.height * rc.y_stride, rc.channels,
                            kAtom);
    input = random_bytes(surface_bytes(op.src, p, kAtom));
    out_bytes = surface_bytes(op.dst, p, kAtom);
    golden.write(kInput, input.data(), input.size());
    params = rubik_model_params(op, kAtom);
    models::ops::run_rubik(params, golden, golden);
    // out(w * sx + gx, h * sy + gy, c) = in(w, h, (gy * sx + gx) * C' + c).
    for (std::uint32_t h = 0; h < rc.height; ++h) {
      for (std::uint32_t w = 0; w < rc.width; ++w) {
        for (std::uint32_t ci = 0; ci < c_in; ++ci) {
          const std::uint32_t g = ci / rc.channels, c = ci % rc.channels;
          const std::uint32_t gx = g % rc.x_stride, gy = g / rc.x_stride;
          EXPECT_EQ(element(golden,
                            kOutput + element_offset(op.dst, p, kAtom, w * rc.x_stride + gx,
                                                     h * rc.y_stride + gy, c),
                            p),
                    element(golden, kInput + element_offset(op.src, p, kAtom, w, h, ci), p))
              << rc.name << " w " << w << " h " << h << " c " << ci;
        }
      }
    }
    r.bytes_read = std::uint64_t{rc.width} * rc.height * c_in * eb;
    r.bytes_written = r.bytes_read;
    t.mem_load(kInput, rc.name + "_input.dat", input);
    t.mem_init_zero(kOutput, out_bytes);
    bit = program_rubik(mmio, op, 0, kAtom);
  } else if (rc.kind == Kind::kSplit) {
    RubikSplit op;
    op.precision = p;
    op.src = packed_surface(kInput, rc.width, rc.height, rc.channels, kAtom);
    const std::uint32_t planes = rc.planes == 0 ? rc.channels : rc.planes;
    op.dst = packed_planar(kOutput, rc.width, rc.height, planes, p);
    input = random_bytes(surface_bytes(op.src, p, kAtom));
    out_bytes = planar_bytes(op.dst, p);
    golden.write(kInput, input.data(), input.size());
    params = rubik_model_params(op, kAtom);
    models::ops::run_rubik(params, golden, golden);
    for (std::uint32_t c = 0; c < planes; ++c) {
      for (std::uint32_t h = 0; h < rc.height; ++h) {
        for (std::uint32_t w = 0; w < rc.width; ++w) {
          const std::uint64_t at = kOutput + std::uint64_t{c} * op.dst.planar_stride +
                                   std::uint64_t{h} * op.dst.line_stride + w * eb;
          EXPECT_EQ(element(golden, at, p),
                    element(golden, kInput + element_offset(op.src, p, kAtom, w, h, c), p))
              << rc.name;
        }
      }
    }
    const std::uint64_t lanes = kAtom / eb;
    r.bytes_read = (planes + lanes - 1) / lanes * rc.height * rc.width * kAtom;
    r.bytes_written = std::uint64_t{planes} * rc.height * rc.width * eb;
    t.mem_load(kInput, rc.name + "_input.dat", input);
    t.mem_init_zero(kOutput, out_bytes);
    bit = program_rubik(mmio, op, 0, kAtom);
  } else {
    RubikMerge op;
    op.precision = p;
    op.src = packed_planar(kInput, rc.width, rc.height, rc.channels, p);
    op.dst = packed_surface(kOutput, rc.width, rc.height, rc.channels, kAtom);
    input = random_bytes(planar_bytes(op.src, p));
    out_bytes = surface_bytes(op.dst, p, kAtom);
    golden.write(kInput, input.data(), input.size());
    params = rubik_model_params(op, kAtom);
    models::ops::run_rubik(params, golden, golden);
    const std::uint32_t lanes = kAtom / eb;
    const std::uint32_t padded = (rc.channels + lanes - 1) / lanes * lanes;
    for (std::uint32_t c = 0; c < padded; ++c) {
      for (std::uint32_t h = 0; h < rc.height; ++h) {
        for (std::uint32_t w = 0; w < rc.width; ++w) {
          const std::uint64_t from = kInput + std::uint64_t{c} * op.src.planar_stride +
                                     std::uint64_t{h} * op.src.line_stride + w * eb;
          const std::vector<std::uint8_t> want =
              c < rc.channels ? element(golden, from, p) : std::vector<std::uint8_t>(eb, 0);
          EXPECT_EQ(element(golden, kOutput + element_offset(op.dst, p, kAtom, w, h, c), p), want)
              << rc.name << " c " << c;
        }
      }
    }
    r.bytes_read = std::uint64_t{rc.channels} * rc.height * rc.width * eb;
    r.bytes_written = std::uint64_t{padded / lanes} * rc.height * rc.width * kAtom;
    t.mem_load(kInput, rc.name + "_input.dat", input);
    t.mem_init_zero(kOutput, out_bytes);
    bit = program_rubik(mmio, op, 0, kAtom);
  }
  const std::vector<std::uint8_t> want = golden.bytes(kOutput, static_cast<std::size_t>(out_bytes));
  std::size_t nonzero = 0;
  for (std::uint8_t b : want) nonzero += b != 0;
  EXPECT_GT(nonzero, r.bytes_written / 2) << "degenerate golden output";
  t.wait_interrupt(bit);
  t.check_crc(kOutput, out_bytes, models::crc32(want.data(), want.size()));
  r.cfg = t.save(dir, rc.name + ".cfg");
  return r;
}

trace::PlayResult play_functional(const std::string& cfg, const std::string& config) {
  dla::FunctionalDevice device(load_hw_config(config));
  return trace::play(trace::parse_trace_file(cfg), device, trace::PlayerOptions{});
}

long long number(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return -1;
  return std::stoll(m[1].str());
}

class Rubik : public ::testing::TestWithParam<RubikCase> {};

TEST_P(Rubik, PassesOnTheFunctionalDevice) {
  TempDir dir(GetParam().name + "-functional");
  const Recorded r = record(GetParam(), dir.str());
  const trace::PlayResult result = play_functional(r.cfg, "nv_full");
  ASSERT_EQ(result.checks.size(), 1u);
  EXPECT_TRUE(result.checks[0].pass) << result.checks[0].detail;
}

// The cycle-level device: the CRC passes, the layer moves the bytes the geometry says, and it
// takes at least max(read, written) / (primary_memif_width / 8) cycles.
TEST_P(Rubik, CycleLevelMovesTheBytesWithinTheInterfaceBound) {
  TempDir dir(GetParam().name + "-cycle");
  const Recorded r = record(GetParam(), dir.str());
  std::string out;
  ASSERT_EQ(run_octasim("run " + r.cfg + " --config nv_full", &out), 0) << out;
  EXPECT_NE(out.find("checks: 1 passed, 0 failed"), std::string::npos) << out;
  EXPECT_EQ(number(out, R"(RUBIK group 0: [^\n]* read (\d+) B)"),
            static_cast<long long>(r.bytes_read))
      << out;
  EXPECT_EQ(number(out, R"(RUBIK group 0: [^\n]* wrote (\d+) B)"),
            static_cast<long long>(r.bytes_written))
      << out;
  const long long cycles =
      number(out, R"(RUBIK group 0:[^\n]*\n\s*cycles \d+\.\.\d+ \((\d+) cycles)");
  ASSERT_GT(cycles, 0) << out;
  const HwConfig hw = load_hw_config("nv_full");
  const unsigned bytes_per_cycle = hw.dla.primary_memif_width / 8;
  EXPECT_GE(cycles * bytes_per_cycle, static_cast<long long>(r.bytes_read)) << out;
  EXPECT_GE(cycles * bytes_per_cycle, static_cast<long long>(r.bytes_written)) << out;
}

INSTANTIATE_TEST_SUITE_P(Modes, Rubik, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<RubikCase>& p) { return p.param.name; });

void expect_refused(const std::string& cfg, const std::string& config, const std::string& what) {
  try {
    (void)play_functional(cfg, config);
    FAIL() << "expected a refusal mentioning '" << what << "'";
  } catch (const trace::TraceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(RubikRefusals, NotPresentOnNvLargeOrNvSmall) {
  TempDir dir("absent");
  const Recorded r = record(cases()[0], dir.str());
  expect_refused(r.cfg, "nv_large", "Rubik (RBK) is not present in this configuration (nv_large)");
  expect_refused(r.cfg, "nv_small", "Rubik (RBK) is not present in this configuration (nv_small)");
}

TEST(RubikRefusals, CvSramSurfaces) {
  namespace R = regs::RBK;
  {
    TempDir dir("cv-in");
    const Recorded r = record(cases()[0], dir.str(), {{R::D_DAIN_RAM_TYPE::kAddr, 0}});
    expect_refused(r.cfg, "nv_full", "D_DAIN_RAM_TYPE=CVIF");
  }
  {
    TempDir dir("cv-out");
    const Recorded r = record(cases()[3], dir.str(), {{R::D_DAOUT_RAM_TYPE::kAddr, 0}});
    expect_refused(r.cfg, "nv_full", "D_DAOUT_RAM_TYPE=CVIF");
  }
}

TEST(RubikRefusals, InconsistentProgramming) {
  namespace R = regs::RBK;
  {
    // contract_int8_2x3: 192 channels, C' = 32; claiming C' = 16 does not make 6 groups.
    TempDir dir("channels");
    const Recorded r = record(cases()[0], dir.str(), {{R::D_DATAOUT_SIZE_1::kAddr, 15}});
    expect_refused(r.cfg, "nv_full", "contract of 192 channels into 6 groups of 16");
  }
  {
    TempDir dir("mode");
    const Recorded r = record(cases()[0], dir.str(), {{R::D_MISC_CFG::kAddr, 3}});
    expect_refused(r.cfg, "nv_full", "RUBIK_MODE 3 is reserved");
  }
  {
    // Split output planes must be 64-byte aligned; 0x80400020 is only 32-byte aligned.
    TempDir dir("planar");
    const Recorded r = record(cases()[3], dir.str(), {{R::D_DAOUT_ADDR_LOW::kAddr, 0x80400020}});
    expect_refused(r.cfg, "nv_full", "D_DAOUT_ADDR 0x80400020 is not a multiple of 64 bytes");
  }
}

TEST(RubikFirmware, RefusesWhatTheHardwareCannotDo) {
  TraceWriter t;
  RubikContract c;
  c.src = packed_surface(kInput, 4, 4, 64, kAtom);
  c.dst = packed_surface(kOutput, 8, 8, 16, kAtom);  // 16 INT8 channels: half an atom
  EXPECT_THROW((void)program_rubik(t, c, 0, kAtom), FirmwareError);
  c.dst = packed_surface(kOutput, 8, 8, 16, kAtom);
  c.precision = Precision::kInt16;  // 16 INT16 channels fill the atom
  c.src = packed_surface(kInput, 4, 4, 64, kAtom);
  EXPECT_EQ(program_rubik(t, c, 1, kAtom), 9u);
  EXPECT_THROW((void)program_rubik(t, c, 2, kAtom), FirmwareError);
  RubikSplit s;
  s.src = packed_surface(kInput, 4, 4, 8, kAtom);
  s.dst = packed_planar(kOutput + 32, 4, 4, 8, Precision::kInt8);
  EXPECT_THROW((void)program_rubik(t, s, 0, kAtom), FirmwareError);
  s.dst = packed_planar(kOutput, 4, 4, 9, Precision::kInt8);
  EXPECT_THROW((void)program_rubik(t, s, 0, kAtom), FirmwareError);
  RubikMerge m;
  m.src = packed_planar(kInput, 4, 4, 8, Precision::kInt8);
  m.dst = packed_surface(kOutput, 4, 4, 7, kAtom);
  EXPECT_THROW((void)program_rubik(t, m, 0, kAtom), FirmwareError);
}

}  // namespace
}  // namespace octasim::firmware
