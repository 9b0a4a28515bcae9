// firmware/net/quant.hpp: the device's code formats (TensorQuant), the bits handed to the
// calibrators, and the calibration table file (octasim's and NVDLA's JSON forms, and every way
// a table can be wrong). Expected codes are worked by hand from the formats in quant.hpp's
// header comment: codes round-half-away(x / step) clamped to [-M, M] (signed) or [0, M]
// (unsigned), step = clip / M.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "firmware/net/quant.hpp"

namespace octasim::firmware::net {
namespace {

TensorQuant format(double clip, int bits, bool is_unsigned) {
  TensorQuant q;
  q.clip = clip;
  q.bits = bits;
  q.is_unsigned = is_unsigned;
  return q;
}

TEST(TensorQuant, Int8SignedCodes) {
  // M = 127; clip 127 gives step 1 exactly.
  const TensorQuant q = format(127.0, 8, false);
  EXPECT_EQ(q.max_code(), 127);
  EXPECT_DOUBLE_EQ(q.step(), 1.0);
  EXPECT_EQ(q.code(0.49), 0);
  EXPECT_EQ(q.code(2.5), 3);    // half away from zero
  EXPECT_EQ(q.code(-2.5), -3);  // half away from zero, not to even
  EXPECT_EQ(q.code(3.5), 4);
  EXPECT_EQ(q.code(126.6), 127);
  EXPECT_EQ(q.code(1000.0), 127);
  EXPECT_EQ(q.code(-1000.0), -127);  // symmetric: -128 is never produced
  // clip 2.54: step 0.02; 1.0 / 0.02 = 50.
  const TensorQuant r = format(2.54, 8, false);
  EXPECT_NEAR(r.step(), 0.02, 1e-15);
  EXPECT_EQ(r.code(1.0), 50);
  EXPECT_EQ(r.code(-1.0), -50);
}

TEST(TensorQuant, Int8UnsignedCodes) {
  // After a ReLU the INT8 datapath still holds signed bytes: codes 0..127.
  const TensorQuant q = format(127.0, 8, true);
  EXPECT_EQ(q.max_code(), 127);
  EXPECT_DOUBLE_EQ(q.step(), 1.0);
  EXPECT_EQ(q.code(-5.0), 0);
  EXPECT_EQ(q.code(-0.4), 0);
  EXPECT_EQ(q.code(0.5), 1);
  EXPECT_EQ(q.code(300.0), 127);
}

TEST(TensorQuant, Int4SignedCodes) {
  // M = 7; clip 3.5: step 0.5.
  const TensorQuant q = format(3.5, 4, false);
  EXPECT_EQ(q.max_code(), 7);
  EXPECT_DOUBLE_EQ(q.step(), 0.5);
  EXPECT_EQ(q.code(0.25), 1);
  EXPECT_EQ(q.code(-0.25), -1);
  EXPECT_EQ(q.code(0.74), 1);
  EXPECT_EQ(q.code(0.76), 2);
  EXPECT_EQ(q.code(3.4), 7);
  EXPECT_EQ(q.code(100.0), 7);
  EXPECT_EQ(q.code(-100.0), -7);
}

TEST(TensorQuant, Int4UnsignedCodes) {
  // M = 15 (4-bit codes 0..15 held in INT8 elements); clip 7.5: step 0.5.
  const TensorQuant q = format(7.5, 4, true);
  EXPECT_EQ(q.max_code(), 15);
  EXPECT_DOUBLE_EQ(q.step(), 0.5);
  EXPECT_EQ(q.code(1.25), 3);
  EXPECT_EQ(q.code(7.4), 15);
  EXPECT_EQ(q.code(7.6), 15);
  EXPECT_EQ(q.code(-1.0), 0);
}

TEST(TensorQuant, Int16SignedAndZeroClip) {
  EXPECT_EQ(format(1.0, 16, false).max_code(), 32767);
  // A tensor that was never calibrated (clip 0) codes everything as 0.
  const TensorQuant z = format(0.0, 8, false);
  EXPECT_EQ(z.code(5.0), 0);
  EXPECT_EQ(z.code(-5.0), 0);
}

TEST(TensorQuant, CalibratorBits) {
  // models/quant's quantizer (quantizer.hpp) has step s * 2^(1-B) signed and s * 2^-B
  // unsigned; the device's step is s / M. Equal steps: 2^(B-1) = M signed, 2^B = M unsigned,
  // so B = log2(M) + 1 or log2(M), rounded: M = 127 -> 8 / 7, M = 7 -> 4, M = 15 -> 4,
  // M = 32767 -> 16.
  EXPECT_EQ(calibrator_bits(format(1.0, 8, false)), 8);
  EXPECT_EQ(calibrator_bits(format(1.0, 8, true)), 7);
  EXPECT_EQ(calibrator_bits(format(1.0, 4, false)), 4);
  EXPECT_EQ(calibrator_bits(format(1.0, 4, true)), 4);
  EXPECT_EQ(calibrator_bits(format(1.0, 16, false)), 16);
}

TEST(QuantOptionNames, ParseTheCliSpellings) {
  NetPrecision p{};
  EXPECT_TRUE(parse_precision("int4", p));
  EXPECT_EQ(p, NetPrecision::kInt4);
  EXPECT_FALSE(parse_precision("int3", p));
  ClipCalibration c{};
  EXPECT_TRUE(parse_calibration("mse-hist", c));
  EXPECT_EQ(c, ClipCalibration::kMseHistogram);
  EXPECT_TRUE(parse_calibration("octav", c));
  EXPECT_EQ(c, ClipCalibration::kOctav);
  EXPECT_FALSE(parse_calibration("entropy", c));
  WeightQuantizer w{};
  EXPECT_TRUE(parse_weight_quantizer("mmse", w));
  EXPECT_EQ(w, WeightQuantizer::kMmse);
  EXPECT_FALSE(parse_weight_quantizer("kl", w));
  EXPECT_EQ(code_bits(NetPrecision::kInt8), 8);
  EXPECT_EQ(code_bits(NetPrecision::kInt4), 4);
}

// A file in the test's own temporary directory.
class CalibrationTableFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("octasim_net_quant_") + info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The CalibrationError message of reading `text`, or "" when it reads.
  std::string error_of(const std::string& text) {
    const std::string p = write("table.json", text);
    try {
      (void)read_calibration_table(p);
    } catch (const CalibrationError& e) {
      return e.what();
    }
    return "";
  }

  std::filesystem::path dir_;
};

TEST_F(CalibrationTableFile, RoundTrip) {
  CalibrationTable t;
  TensorQuant a = format(2.54, 8, false);
  a.min = -2.0;
  a.max = 2.5;
  a.method = "octav";
  TensorQuant b = format(7.5, 4, true);
  b.min = 0.0;
  b.max = 9.25;
  b.method = "max";
  t["input"] = a;
  t["/conv1/Conv_output_0"] = b;
  const std::string p = path("round_trip.json");
  write_calibration_table(p, t);

  const CalibrationTable r = read_calibration_table(p);
  ASSERT_EQ(r.size(), 2U);
  const TensorQuant& ra = r.at("input");
  EXPECT_DOUBLE_EQ(ra.clip, 2.54);
  EXPECT_EQ(ra.bits, 8);
  EXPECT_FALSE(ra.is_unsigned);
  EXPECT_DOUBLE_EQ(ra.min, -2.0);
  EXPECT_DOUBLE_EQ(ra.max, 2.5);
  const TensorQuant& rb = r.at("/conv1/Conv_output_0");
  EXPECT_DOUBLE_EQ(rb.clip, 7.5);
  EXPECT_EQ(rb.bits, 4);
  EXPECT_TRUE(rb.is_unsigned);
  EXPECT_DOUBLE_EQ(rb.max, 9.25);
  // Read back, the clip's origin is the table.
  EXPECT_EQ(rb.method, "table");

  // NVDLA-style readers see the step as "scale" (and offset 0).
  std::ifstream in(p);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_NEAR(j.at("input").at("scale").get<double>(), 0.02, 1e-15);
  EXPECT_DOUBLE_EQ(j.at("/conv1/Conv_output_0").at("scale").get<double>(), 0.5);
  EXPECT_EQ(j.at("input").at("offset").get<double>(), 0.0);
}

TEST_F(CalibrationTableFile, ReadsNvdlaForm) {
  const std::string p = write("nvdla.json",
                              R"({"data": {"scale": 0.5, "min": -60.0, "max": 63.0, "offset": 0},
                                  "conv1": {"scale": 0.25, "min": 0, "max": 31.75}})");
  const CalibrationTable t = read_calibration_table(p);
  ASSERT_EQ(t.size(), 2U);
  EXPECT_DOUBLE_EQ(t.at("data").clip, 63.5);  // 127 * 0.5
  EXPECT_EQ(t.at("data").bits, 8);
  EXPECT_FALSE(t.at("data").is_unsigned);
  EXPECT_DOUBLE_EQ(t.at("data").min, -60.0);
  EXPECT_DOUBLE_EQ(t.at("data").max, 63.0);
  EXPECT_DOUBLE_EQ(t.at("conv1").clip, 31.75);  // no offset: 0
}

TEST_F(CalibrationTableFile, MissingFile) {
  const std::string p = path("absent.json");
  try {
    (void)read_calibration_table(p);
    FAIL() << "no error for a missing file";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST_F(CalibrationTableFile, EachErrorNamesTheFileAndTheTensor) {
  const std::string p = path("table.json");
  struct Case {
    const char* what;
    const char* text;
    const char* tensor;  // nullptr: a whole-file error
    const char* says;    // a word the message must contain
  };
  const Case cases[] = {
      {"not JSON", "{\"a\": {\"clip\": 1.0", nullptr, "JSON"},
      {"not an object", "[1, 2, 3]", nullptr, "object"},
      {"entry not an object", R"({"act": 3.0})", "act", "object"},
      {"missing clip and scale", R"({"act": {"min": 0, "max": 1}})", "act", "clip"},
      {"nonzero offset", R"({"act": {"scale": 0.1, "offset": 3}})", "act", "offset"},
      {"zero clip", R"({"ok": {"clip": 1}, "act": {"clip": 0}})", "act", "clip"},
      {"negative clip", R"({"act": {"clip": -2.5}})", "act", "clip"},
      {"negative scale", R"({"act": {"scale": -0.1, "offset": 0}})", "act", "clip"},
      {"clip not a number", R"({"act": {"clip": "big"}})", "act", "clip"},
      {"bad bits", R"({"act": {"clip": 1.0, "bits": 5}})", "act", "bits"},
      {"unsigned not a boolean", R"({"act": {"clip": 1.0, "unsigned": "yes"}})", "act", "unsigned"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string msg = error_of(c.text);
    ASSERT_FALSE(msg.empty()) << "read without an error";
    EXPECT_EQ(msg.rfind(p, 0), 0U) << "does not start with the file: " << msg;
    if (c.tensor != nullptr) {
      EXPECT_NE(msg.find(std::string("'") + c.tensor + "'"), std::string::npos)
          << "does not name the tensor: " << msg;
    }
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "more than one line: " << msg;
  }
}

TEST_F(CalibrationTableFile, UnwritablePath) {
  CalibrationTable t;
  t["x"] = format(1.0, 8, false);
  const std::string p = path("no/such/dir/table.json");
  try {
    write_calibration_table(p, t);
    FAIL() << "no error for an unwritable path";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace octasim::firmware::net
