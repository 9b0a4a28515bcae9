#include "firmware/net/quant.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "models/io/atomic_file.hpp"

namespace octasim::firmware::net {

const char* precision_name(NetPrecision p) {
  switch (p) {
    case NetPrecision::kInt8:
      return "int8";
    case NetPrecision::kInt4:
      return "int4";
    case NetPrecision::kInt16:
      return "int16";
    case NetPrecision::kFp16:
      return "fp16";
    case NetPrecision::kMixed:
      return "mixed";
  }
  return "?";
}

const char* calibration_name(ClipCalibration c) {
  switch (c) {
    case ClipCalibration::kMax:
      return "max";
    case ClipCalibration::kPercentile:
      return "percentile";
    case ClipCalibration::kMseHistogram:
      return "mse-hist";
    case ClipCalibration::kOctav:
      return "octav";
    case ClipCalibration::kOctavDevice:
      return "octav-device";
  }
  return "?";
}

const char* weight_quantizer_name(WeightQuantizer w) {
  switch (w) {
    case WeightQuantizer::kMax:
      return "max";
    case WeightQuantizer::kMmse:
      return "mmse";
    case WeightQuantizer::kOctav:
      return "octav";
  }
  return "?";
}

bool parse_precision(const std::string& s, NetPrecision& out) {
  for (NetPrecision p : {NetPrecision::kInt8, NetPrecision::kInt4, NetPrecision::kInt16,
                         NetPrecision::kFp16, NetPrecision::kMixed}) {
    if (s == precision_name(p)) {
      out = p;
      return true;
    }
  }
  return false;
}

bool parse_calibration(const std::string& s, ClipCalibration& out) {
  for (ClipCalibration c :
       {ClipCalibration::kMax, ClipCalibration::kPercentile, ClipCalibration::kMseHistogram,
        ClipCalibration::kOctav, ClipCalibration::kOctavDevice}) {
    if (s == calibration_name(c)) {
      out = c;
      return true;
    }
  }
  return false;
}

bool parse_weight_quantizer(const std::string& s, WeightQuantizer& out) {
  for (WeightQuantizer w :
       {WeightQuantizer::kMax, WeightQuantizer::kMmse, WeightQuantizer::kOctav}) {
    if (s == weight_quantizer_name(w)) {
      out = w;
      return true;
    }
  }
  return false;
}

int code_bits(NetPrecision p) {
  switch (p) {
    case NetPrecision::kInt4:
      return 4;
    case NetPrecision::kInt16:
      return 16;
    default:
      return 8;
  }
}

int TensorQuant::max_code() const {
  if (is_unsigned) return bits >= 8 ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
  return (1 << (bits - 1)) - 1;
}

double TensorQuant::step() const {
  return clip / max_code();
}

std::int32_t TensorQuant::code(double x) const {
  if (clip <= 0.0) return 0;
  const double v = x / step();
  const double r = v < 0 ? -std::floor(-v + 0.5) : std::floor(v + 0.5);
  const double lo = is_unsigned ? 0.0 : -max_code();
  const double hi = max_code();
  return static_cast<std::int32_t>(r < lo ? lo : r > hi ? hi : r);
}

int calibrator_bits(const TensorQuant& q) {
  // M + 1 = 2^B unsigned (0..M), 2M + 2 = 2^B signed (-M..M): B = log2 of that, rounded.
  const int levels = q.is_unsigned ? q.max_code() + 1 : 2 * (q.max_code() + 1);
  return static_cast<int>(std::lround(std::log2(levels)));
}

namespace {

double number(const nlohmann::json& entry, const char* key, const std::string& where) {
  const auto it = entry.find(key);
  if (it == entry.end()) return 0.0;
  if (!it->is_number())
    throw CalibrationError(fmt::format("{}: \"{}\" is not a number", where, key));
  return it->get<double>();
}

}  // namespace

CalibrationTable read_calibration_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CalibrationError(fmt::format("{}: cannot open the calibration table", path));
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw CalibrationError(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
  if (!j.is_object()) {
    throw CalibrationError(fmt::format("{}: expected a JSON object keyed by tensor name", path));
  }
  CalibrationTable table;
  for (const auto& [name, entry] : j.items()) {
    const std::string where = fmt::format("{}: tensor '{}'", path, name);
    if (!entry.is_object()) throw CalibrationError(where + ": expected an object");
    TensorQuant q;
    q.min = number(entry, "min", where);
    q.max = number(entry, "max", where);
    q.method = "table";
    if (entry.contains("clip")) {
      q.clip = number(entry, "clip", where);
    } else if (entry.contains("scale")) {
      if (number(entry, "offset", where) != 0.0) {
        throw CalibrationError(where + ": offset must be 0 (the device quantizes symmetrically)");
      }
      q.clip = 127.0 * number(entry, "scale", where);
    } else {
      throw CalibrationError(where + ": expected \"clip\" or \"scale\"");
    }
    if (!(q.clip > 0.0) || !std::isfinite(q.clip)) {
      throw CalibrationError(
          fmt::format("{}: the clip {} is not a positive number", where, q.clip));
    }
    if (entry.contains("bits")) q.bits = static_cast<int>(number(entry, "bits", where));
    if (entry.contains("unsigned")) {
      if (!entry["unsigned"].is_boolean())
        throw CalibrationError(where + ": \"unsigned\" is not true/false");
      q.is_unsigned = entry["unsigned"].get<bool>();
    }
    if (q.bits != 4 && q.bits != 8 && q.bits != 16) {
      throw CalibrationError(fmt::format("{}: bits {} is not 4, 8 or 16", where, q.bits));
    }
    table[name] = q;
  }
  return table;
}

std::string calibration_table_text(const CalibrationTable& table) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, q] : table) {
    j[name] = {{"clip", q.clip}, {"scale", q.step()}, {"bits", q.bits}, {"unsigned", q.is_unsigned},
               {"min", q.min},   {"max", q.max},      {"offset", 0},    {"method", q.method}};
  }
  return j.dump(2) + '\n';
}

void write_calibration_table(const std::string& path, const CalibrationTable& table) {
  try {
    models::write_file_atomically(path, calibration_table_text(table));
  } catch (const models::OutputFileError& e) {
    throw CalibrationError(
        fmt::format("{}: cannot write the calibration table ({})", e.path(), e.reason()));
  }
}

const char* winograd_mode_name(WinogradMode m) {
  switch (m) {
    case WinogradMode::kAuto:
      return "auto";
    case WinogradMode::kOn:
      return "on";
    case WinogradMode::kOff:
      return "off";
  }
  return "?";
}

bool parse_winograd_mode(const std::string& s, WinogradMode& out) {
  for (const WinogradMode m : {WinogradMode::kAuto, WinogradMode::kOn, WinogradMode::kOff}) {
    if (s == winograd_mode_name(m)) {
      out = m;
      return true;
    }
  }
  return false;
}

}  // namespace octasim::firmware::net
