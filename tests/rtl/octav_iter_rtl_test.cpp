// The verilated OCTAV iteration datapath (rtl/octav_iter.sv) against models::octav_reduce: the
// two counts, the 320-bit exact sum word for word (against a wide integer the bench keeps), and
// that sum rounded to FP64 equal to the model's sum_above, on tensors of every element type the
// unit's front end converts (sim/octav), at thresholds below, inside and above the data, and on
// data whose sum needs the accumulator's top words.
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <systemc>

#include "Voctav_iter.h"
#include "models/quant/exact_sum.hpp"
#include "models/quant/octav.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/memory_image.hpp"
#include "tests/octav/octav_test_util.hpp"

namespace {

using octasim::models::Signedness;
constexpr int kWords = 10;  // 320 bits
using Wide = std::array<std::uint32_t, kWords>;

struct Job {
  std::vector<float> x;
  double s = 0.0;
  Signedness sign = Signedness::kSigned;
};

struct Readout {
  std::uint32_t count_above = 0;
  std::uint32_t count_nonzero_below = 0;
  Wide sum{};
};

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// The bench's own wide sum: significand << (max(e,1) - 1), added word by word with carries.
Wide wide_sum(const Job& j) {
  const std::uint32_t t = octasim::models::octav_threshold_bits(j.s);
  Wide w{};
  for (float f : j.x) {
    const std::uint32_t m = octasim::models::octav_magnitude_bits(bits_of(f), j.sign);
    if (m <= t) continue;
    const std::uint32_t e = m >> 23;
    const std::uint64_t sig = (m & 0x7fffffu) | (e != 0 ? 0x800000u : 0u);
    const unsigned pos = e == 0 ? 0 : e - 1;
    // sig (24 bits) << pos spans at most two words plus a carry.
    std::uint64_t add_lo = sig << (pos % 32);  // up to 56 bits
    unsigned word = pos / 32;
    std::uint64_t carry = 0;
    for (unsigned k = word; k < kWords; ++k) {
      const std::uint64_t v = std::uint64_t{w[k]} + (add_lo & 0xffffffffu) + carry;
      w[k] = static_cast<std::uint32_t>(v);
      carry = v >> 32;
      add_lo >>= 32;
      if (add_lo == 0 && carry == 0) break;
    }
  }
  return w;
}

// The RTL's words rounded to FP64 through models' own rounding: word k (bit 32k) is the
// per-exponent entry e = 32k + 1 (which sits at bit e - 1); words 8 and 9 (bit 256) go to
// e = 255 (bit 254), times 4.
double round_words(const Wide& w) {
  std::uint64_t bins[256] = {};
  for (int k = 0; k < 8; ++k) bins[32 * k + 1] = w[k];
  bins[255] = ((std::uint64_t{w[9]} << 32) | w[8]) << 2;
  return octasim::models::ExactMagnitudeSum::round_to_double(bins);
}

SC_MODULE(OctavIterBench) {
  sc_core::sc_in<bool> clk{"clk"};
  sc_core::sc_out<bool> rst_n{"rst_n"}, clear{"clear"}, in_valid{"in_valid"},
      cfg_unsigned{"cfg_unsigned"};
  sc_core::sc_out<std::uint32_t> in_data{"in_data"}, cfg_threshold{"cfg_threshold"},
      rd_sel{"rd_sel"};
  sc_core::sc_in<std::uint32_t> count_above{"count_above"},
      count_nonzero_below{"count_nonzero_below"}, sum_word{"sum_word"};

  std::vector<Job> jobs;
  std::vector<Readout> readouts;
  // When set, runs OCTAV itself instead of `jobs`: `iterate` gets each pass's readout and
  // returns the next clipping scalar, or a negative value to stop.
  std::vector<float> sequence_input;
  Signedness sequence_sign = Signedness::kSigned;
  double sequence_start = 0.0;
  std::function<double(const Readout&, double)> iterate;

  SC_HAS_PROCESS(OctavIterBench);
  explicit OctavIterBench(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
    SC_THREAD(drive);
    sensitive << clk.neg();
  }

 private:
  Readout pass(const Job& j) {
    cfg_unsigned.write(j.sign == Signedness::kUnsigned);
    cfg_threshold.write(octasim::models::octav_threshold_bits(j.s));
    clear.write(true);
    wait();
    clear.write(false);
    for (float f : j.x) {
      in_valid.write(true);
      in_data.write(bits_of(f));
      wait();
    }
    in_valid.write(false);
    wait();
    Readout r;
    r.count_above = count_above.read();
    r.count_nonzero_below = count_nonzero_below.read();
    for (int k = 0; k < kWords; ++k) {
      rd_sel.write(static_cast<std::uint32_t>(k));
      wait();
      r.sum[k] = sum_word.read();
    }
    return r;
  }

  void drive() {
    rst_n.write(false);
    clear.write(false);
    in_valid.write(false);
    wait();
    wait();
    rst_n.write(true);
    if (iterate) {
      Job j{sequence_input, sequence_start, sequence_sign};
      while (j.s >= 0.0) {
        const Readout r = pass(j);
        readouts.push_back(r);
        j.s = iterate(r, j.s);
      }
      sc_core::sc_stop();
      return;
    }
    for (const Job& j : jobs) {
      cfg_unsigned.write(j.sign == Signedness::kUnsigned);
      cfg_threshold.write(octasim::models::octav_threshold_bits(j.s));
      clear.write(true);
      wait();
      clear.write(false);
      for (float f : j.x) {
        in_valid.write(true);
        in_data.write(bits_of(f));
        wait();
      }
      in_valid.write(false);
      wait();  // the last element is registered
      Readout r;
      r.count_above = count_above.read();
      r.count_nonzero_below = count_nonzero_below.read();
      for (int k = 0; k < kWords; ++k) {
        rd_sel.write(static_cast<std::uint32_t>(k));
        wait();
        r.sum[k] = sum_word.read();
      }
      readouts.push_back(r);
    }
    sc_core::sc_stop();
  }
};

std::vector<Readout> run_rtl(const std::vector<Job>& jobs,
                             const std::function<void(OctavIterBench&)>& setup = {}) {
  sc_core::sc_clock clk("clk", 2, sc_core::SC_NS);
  sc_core::sc_signal<bool> rst_n("rst_n"), clear("clear"), in_valid("in_valid"),
      cfg_unsigned("cfg_unsigned");
  sc_core::sc_signal<std::uint32_t> in_data("in_data"), cfg_threshold("cfg_threshold"),
      rd_sel("rd_sel"), count_above("count_above"), count_nonzero_below("count_nonzero_below"),
      sum_word("sum_word");
  Voctav_iter dut("dut");
  dut.clk(clk);
  dut.rst_n(rst_n);
  dut.clear(clear);
  dut.in_valid(in_valid);
  dut.in_data(in_data);
  dut.cfg_unsigned(cfg_unsigned);
  dut.cfg_threshold(cfg_threshold);
  dut.rd_sel(rd_sel);
  dut.count_above(count_above);
  dut.count_nonzero_below(count_nonzero_below);
  dut.sum_word(sum_word);
  OctavIterBench bench("bench");
  bench.clk(clk);
  bench.rst_n(rst_n);
  bench.clear(clear);
  bench.in_valid(in_valid);
  bench.in_data(in_data);
  bench.cfg_unsigned(cfg_unsigned);
  bench.cfg_threshold(cfg_threshold);
  bench.rd_sel(rd_sel);
  bench.count_above(count_above);
  bench.count_nonzero_below(count_nonzero_below);
  bench.sum_word(sum_word);
  bench.jobs = jobs;
  if (setup) setup(bench);
  sc_core::sc_start();
  dut.final();
  return bench.readouts;
}

bool already_elaborated() {
  return sc_core::sc_get_status() != sc_core::SC_ELABORATION;
}

void check_all(const std::vector<Job>& jobs) {
  const std::vector<Readout> got = run_rtl(jobs);
  ASSERT_EQ(got.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const auto want = octasim::models::octav_reduce(j.x.data(), j.x.size(), j.s, j.sign);
    const std::string what = fmt::format("job {} (n {}, s {})", i, j.x.size(), j.s);
    EXPECT_EQ(got[i].count_above, want.count_above) << what;
    EXPECT_EQ(got[i].count_nonzero_below, want.count_nonzero_at_or_below) << what;
    EXPECT_EQ(got[i].sum, wide_sum(j)) << what;
    EXPECT_EQ(round_words(got[i].sum), want.sum_above) << what;
  }
}

TEST(RtlOctavIter, EveryElementTypeMatchesModel) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  using octasim::octav::DataType;
  std::vector<Job> jobs;
  std::uint32_t seed = 1;
  for (DataType type :
       {DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kFp16, DataType::kFp32}) {
    const double b = type == DataType::kInt8    ? 12.0
                     : type == DataType::kInt16 ? 900.0
                     : type == DataType::kInt32 ? 3.0e7
                                                : 0.5;
    const auto t = octasim::test::laplace_tensor(type, 3000, b, seed++);
    for (Signedness sign : {Signedness::kSigned, Signedness::kUnsigned}) {
      // Below everything, inside the data (several), exactly on a data value, above everything.
      for (double s :
           {0.0, 0.3 * b, b, 2.5 * b, static_cast<double>(std::fabs(t.values[5])), 1e12}) {
        jobs.push_back({t.values, s, sign});
      }
    }
  }
  check_all(jobs);
}

TEST(RtlOctavIter, WideSumsSubnormalsAndSignedZeros) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  std::vector<Job> jobs;
  // 4000 values near FLT_MAX: the sum reaches 2^140, bits up to 289 (accumulator word 9).
  std::vector<float> huge(4000);
  std::mt19937 rng(3);
  for (float& f : huge) {
    f = std::nextafter(FLT_MAX, 0.0f) * (rng() % 2 ? 1.0f : -1.0f);
    if (rng() % 7 == 0) f = FLT_MAX;
  }
  jobs.push_back({huge, 1.0, Signedness::kSigned});
  // Subnormals (exponent 0: no hidden bit, position 0), the smallest, -0 and +0.
  std::vector<float> tiny;
  for (int i = 0; i < 500; ++i) {
    std::uint32_t b = static_cast<std::uint32_t>(rng()) & 0x807fffffu;  // subnormal or zero
    if (i % 50 == 0) b = 0x80000000u;                                   // -0
    float f;
    std::memcpy(&f, &b, 4);
    tiny.push_back(f);
  }
  tiny.push_back(std::nextafter(0.0f, 1.0f));
  tiny.push_back(FLT_MIN);
  for (double s : {0.0, 1e-40, 1e-39}) {
    jobs.push_back({tiny, s, Signedness::kSigned});
    jobs.push_back({tiny, s, Signedness::kUnsigned});
  }
  // Random bit patterns over the whole finite range.
  std::vector<float> any(20000);
  for (float& f : any) {
    std::uint32_t b;
    do {
      b = static_cast<std::uint32_t>(rng());
    } while ((b & 0x7f800000u) == 0x7f800000u);
    std::memcpy(&f, &b, 4);
  }
  for (double s : {0.0, 1e-20, 1.0, 1e20, 1e38}) jobs.push_back({any, s, Signedness::kSigned});
  check_all(jobs);
}

// A whole OCTAV run with the RTL computing every pass's reductions: the iterate chain of
// models::octav_update on the RTL's counts and sum (rounded once), with the unit's convergence
// rule, ends on the clipping scalar the OCTAV unit reports (sim/octav run_octav's D_CLIP_RESULT)
// and models::octav computes.
TEST(RtlOctavIter, DrivesAWholeOctavRunToTheUnitsClip) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  using octasim::octav::DataType;
  const auto t = octasim::test::laplace_tensor(DataType::kInt16, 2500, 600.0, 77);
  octasim::models::OctavOptions o;
  o.bits = 3;
  o.max_iterations = 30;
  o.tolerance = 1e-5;
  // The unit on the same data (flat INT16 in memory).
  octasim::MemoryImage mem;
  mem.write(0x1000, t.raw.data(), t.raw.size());
  octasim::test::RegMap regs;
  namespace R = octasim::regs;
  regs.set(R::OCTAV::D_MISC_CFG::kAddr,
           R::OCTAV::D_MISC_CFG::DATA_TYPE.set(0, R::OCTAV::D_MISC_CFG::DATA_TYPE_INT16) |
               R::OCTAV::D_MISC_CFG::LAYOUT.set(0, R::OCTAV::D_MISC_CFG::LAYOUT_FLAT));
  regs.set(R::OCTAV::D_BITS::kAddr, 3);
  regs.set(R::OCTAV::D_SRC_BASE_ADDR_LOW::kAddr, 0x1000);
  regs.set(R::OCTAV::D_FLAT_LENGTH::kAddr, 2500);
  regs.set(R::OCTAV::D_MAX_ITERATIONS::kAddr, 30);
  regs.set(R::OCTAV::D_TOLERANCE::kAddr, octasim::test::fp32_bits(1e-5f));
  o.tolerance = 1e-5f;
  const auto unit = octasim::octav::run_octav(octasim::HwConfig{}, regs.reader(), {}, mem);
  std::uint32_t unit_clip = 0;
  for (const auto& [addr, v] : unit.status) {
    if (addr == R::OCTAV::D_CLIP_RESULT::kAddr) unit_clip = v;
  }
  const auto model = octasim::models::octav(t.values.data(), t.values.size(), o);
  ASSERT_EQ(unit_clip, octasim::test::fp32_bits(static_cast<float>(model.clip)));

  // The RTL run: s_0 = max/2, then the unit's update and models::octav_convergence.
  float max_mag = 0.0f;
  for (float f : t.values) max_mag = std::max(max_mag, std::fabs(f));
  double previous = -1.0;
  int iterations = 0;
  double clip = 0.0;
  (void)run_rtl({}, [&](OctavIterBench& b) {
    b.sequence_input = t.values;
    b.sequence_start = 0.5 * static_cast<double>(max_mag);
    b.iterate = [&](const Readout& r, double s) {
      octasim::models::OctavReductions red;
      red.count_above = r.count_above;
      red.count_nonzero_at_or_below = r.count_nonzero_below;
      red.sum_above = round_words(r.sum);
      const double next = octasim::models::octav_update(red, o.bits, o.sign);
      ++iterations;
      const octasim::models::OctavConvergence c =
          octasim::models::octav_convergence(previous, s, next, o.tolerance);
      clip = c.clip;
      if (c.converged || iterations >= o.max_iterations) return -1.0;
      previous = s;
      return next;
    };
  });
  EXPECT_EQ(iterations, model.iterations);
  EXPECT_EQ(octasim::test::fp32_bits(static_cast<float>(clip)), unit_clip);
  EXPECT_EQ(clip, model.clip);
}

}  // namespace

int sc_main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
