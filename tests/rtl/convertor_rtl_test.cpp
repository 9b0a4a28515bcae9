// The verilated NVDLA convertor (rtl/nvdla_convertor.sv) against models/precision/convertor.hpp:
// outputs, saturation flags and the running saturation counter, bit for bit.
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <systemc>

#include "Vnvdla_convertor.h"
#include "models/precision/convertor.hpp"

namespace {

using octasim::models::ConvertorParams;
using octasim::models::IntPrecision;
using octasim::models::SaturationCounter;

struct Vector {
  std::int32_t x;
  ConvertorParams p;
  IntPrecision out;
  bool clear_counter = false;
};

std::uint32_t precision_code(IntPrecision p) {
  switch (p) {
    case IntPrecision::kInt8:
      return 0;
    case IntPrecision::kInt16:
      return 1;
    case IntPrecision::kInt32:
      return 2;
  }
  return 3;
}

// Drives one vector per clock on the falling edge and checks the registered result of the
// previous vector, keeping a models/ SaturationCounter in lock step with the RTL's.
SC_MODULE(ConvertorBench) {
  sc_core::sc_in<bool> clk{"clk"};
  sc_core::sc_out<bool> rst_n{"rst_n"}, in_valid{"in_valid"}, sat_clear{"sat_clear"};
  sc_core::sc_out<std::uint32_t> in_data{"in_data"}, cfg_offset{"cfg_offset"},
      cfg_scale{"cfg_scale"}, cfg_shift{"cfg_shift"}, cfg_out_precision{"cfg_out_precision"};
  sc_core::sc_in<bool> out_valid{"out_valid"}, out_saturated{"out_saturated"};
  sc_core::sc_in<std::uint32_t> out_data{"out_data"}, sat_count{"sat_count"};

  std::function<std::optional<Vector>()> next_vector;
  std::uint64_t checked = 0;
  std::uint64_t mismatches = 0;
  std::string first_mismatch;

  SC_HAS_PROCESS(ConvertorBench);
  explicit ConvertorBench(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
    SC_METHOD(on_falling_edge);
    sensitive << clk.neg();
    dont_initialize();
  }

 private:
  int reset_cycles_ = 2;
  std::optional<Vector> pending_;
  SaturationCounter model_counter_;

  void mismatch(const std::string& what) {
    if (mismatches++ == 0) first_mismatch = what;
  }

  void check(const Vector& v) {
    const auto want = octasim::models::convert(v.x, v.p, v.out);
    if (v.clear_counter) {
      model_counter_.reset();
    } else {
      model_counter_.record(want.saturated);
    }
    const auto got = static_cast<std::int32_t>(out_data.read());
    if (!out_valid.read() || got != want.value || out_saturated.read() != want.saturated ||
        sat_count.read() != model_counter_.value()) {
      mismatch(fmt::format(
          "x={} offset={} scale={} shift={} out=INT{}: rtl y={} sat={} count={} valid={}; "
          "model y={} sat={} count={}",
          v.x, v.p.offset, v.p.scale, v.p.shift, static_cast<int>(v.out), got, out_saturated.read(),
          sat_count.read(), out_valid.read(), want.value, want.saturated, model_counter_.value()));
    }
    ++checked;
  }

  void on_falling_edge() {
    if (reset_cycles_ > 0) {
      --reset_cycles_;
      rst_n.write(false);
      in_valid.write(false);
      sat_clear.write(false);
      return;
    }
    rst_n.write(true);
    if (pending_) check(*pending_);
    pending_ = next_vector();
    if (!pending_) {
      sc_core::sc_stop();
      return;
    }
    in_valid.write(true);
    in_data.write(static_cast<std::uint32_t>(pending_->x));
    cfg_offset.write(static_cast<std::uint32_t>(pending_->p.offset));
    cfg_scale.write(static_cast<std::uint16_t>(pending_->p.scale));
    cfg_shift.write(pending_->p.shift);
    cfg_out_precision.write(precision_code(pending_->out));
    sat_clear.write(pending_->clear_counter);
  }
};

struct RunResult {
  std::uint64_t checked;
  std::uint64_t mismatches;
  std::string first_mismatch;
};

// Elaborates the RTL with the bench and simulates until the generator runs dry.
RunResult run_rtl(std::function<std::optional<Vector>()> generator) {
  sc_core::sc_clock clk("clk", 2, sc_core::SC_NS);
  sc_core::sc_signal<bool> rst_n("rst_n"), in_valid("in_valid"), sat_clear("sat_clear"),
      out_valid("out_valid"), out_saturated("out_saturated");
  sc_core::sc_signal<std::uint32_t> in_data("in_data"), cfg_offset("cfg_offset"),
      cfg_scale("cfg_scale"), cfg_shift("cfg_shift"), cfg_out_precision("cfg_out_precision"),
      out_data("out_data"), sat_count("sat_count");

  Vnvdla_convertor dut("dut");
  dut.clk(clk);
  dut.rst_n(rst_n);
  dut.in_valid(in_valid);
  dut.in_data(in_data);
  dut.cfg_offset(cfg_offset);
  dut.cfg_scale(cfg_scale);
  dut.cfg_shift(cfg_shift);
  dut.cfg_out_precision(cfg_out_precision);
  dut.sat_clear(sat_clear);
  dut.out_valid(out_valid);
  dut.out_data(out_data);
  dut.out_saturated(out_saturated);
  dut.sat_count(sat_count);

  ConvertorBench bench("bench");
  bench.clk(clk);
  bench.rst_n(rst_n);
  bench.in_valid(in_valid);
  bench.in_data(in_data);
  bench.cfg_offset(cfg_offset);
  bench.cfg_scale(cfg_scale);
  bench.cfg_shift(cfg_shift);
  bench.cfg_out_precision(cfg_out_precision);
  bench.sat_clear(sat_clear);
  bench.out_valid(out_valid);
  bench.out_data(out_data);
  bench.out_saturated(out_saturated);
  bench.sat_count(sat_count);
  bench.next_vector = std::move(generator);

  sc_core::sc_start();
  dut.final();
  return {bench.checked, bench.mismatches, bench.first_mismatch};
}

// One elaboration per process: ctest runs each TEST alone (gtest_discover_tests).
bool already_elaborated() {
  return sc_core::sc_get_status() != sc_core::SC_ELABORATION;
}

constexpr IntPrecision kPrecisions[] = {IntPrecision::kInt8, IntPrecision::kInt16,
                                        IntPrecision::kInt32};

TEST(RtlConvertor, EdgeCasesMatchModel) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  const std::vector<std::int32_t> xs{kMin, kMin + 1, -65536, -1, 0, 1, 65535, kMax};
  const std::vector<std::int32_t> offsets{kMin, -1, 0, 1, kMax};
  const std::vector<std::int16_t> scales{-32768, -1, 0, 1, 32767};
  const std::vector<std::uint8_t> shifts{0, 1, 2, 15, 31, 32, 47, 48, 49, 62, 63};
  std::vector<Vector> vectors;
  for (auto x : xs)
    for (auto o : offsets)
      for (auto s : scales)
        for (auto sh : shifts)
          for (auto prec : kPrecisions) vectors.push_back({x, {o, s, sh}, prec});
  // Exact .5 ties at every shift a 49-bit product can reach, both signs of data and scale:
  // product = (2m+1) * 2^(shift-1) with the power of two split between x and scale.
  std::mt19937 rng(7);
  for (unsigned shift = 1; shift <= 46; ++shift) {
    const unsigned scale_pow = std::min(shift - 1, 14u);
    for (int m : {0, 1, 2, 5, 63}) {
      const std::int64_t x_mag = (2 * m + 1) * (std::int64_t{1} << (shift - 1 - scale_pow));
      if (x_mag > kMax) continue;
      for (int xs_sign : {1, -1})
        for (int sc_sign : {1, -1})
          for (auto prec : kPrecisions) {
            vectors.push_back({static_cast<std::int32_t>(xs_sign * x_mag),
                               {0, static_cast<std::int16_t>(sc_sign * (1 << scale_pow)),
                                static_cast<std::uint8_t>(shift)},
                               prec});
          }
    }
  }
  // Counter clear in the middle of a saturating run.
  for (int i = 0; i < 40; ++i)
    vectors.push_back({kMax, {0, 32767, 0}, IntPrecision::kInt8, i == 20});

  std::size_t next = 0;
  const auto result = run_rtl([&]() -> std::optional<Vector> {
    if (next == vectors.size()) return std::nullopt;
    return vectors[next++];
  });
  EXPECT_EQ(result.checked, vectors.size());
  EXPECT_EQ(result.mismatches, 0u) << "first: " << result.first_mismatch;
}

TEST(RtlConvertor, MillionRandomVectorsMatchModel) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  constexpr std::uint64_t kVectors = 1'050'000;
  std::mt19937_64 rng(20261122);
  std::uint64_t produced = 0;
  const auto result = run_rtl([&]() -> std::optional<Vector> {
    if (produced == kVectors) return std::nullopt;
    ++produced;
    const std::uint64_t r = rng();
    Vector v;
    // Mix full-range operands with small ones so rounding (not only saturation) is exercised.
    const bool small = (r & 3) == 0;
    v.x = static_cast<std::int32_t>(small ? static_cast<std::int32_t>(rng() % 2001) - 1000
                                          : static_cast<std::int32_t>(rng()));
    v.p.offset = ((r >> 2) & 3) == 0 ? static_cast<std::int32_t>(rng())
                                     : static_cast<std::int32_t>(rng() % 257) - 128;
    v.p.scale = static_cast<std::int16_t>(rng());
    v.p.shift = static_cast<std::uint8_t>(rng() % 64);
    v.out = kPrecisions[(r >> 4) % 3];
    v.clear_counter = (r >> 8) % 100000 == 0;
    return v;
  });
  EXPECT_GE(result.checked, 1'000'000u);
  EXPECT_EQ(result.mismatches, 0u) << "first: " << result.first_mismatch;
}

}  // namespace

int sc_main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
