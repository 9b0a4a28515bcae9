// `octasim cvt`: apply an NVDLA convertor to values, to check a register programming by hand.
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include "models/precision/convertor.hpp"
#include "sim/app/commands.hpp"

namespace octasim::app {
namespace {

bool parse_int64(const std::string& text, std::int64_t& value) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 0);  // decimal, 0x hex, 0 octal
  if (errno != 0 || end == text.c_str() || *end != '\0') return false;
  value = v;
  return true;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::vector<std::int64_t> read_values_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("{}: cannot open file", path));
  std::vector<std::int64_t> values;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    const std::string text = trim(line.substr(0, line.find('#')));
    if (text.empty()) continue;
    std::int64_t v;
    if (!parse_int64(text, v)) {
      throw UsageError(
          fmt::format("{}:{}: expected one integer per line (decimal or 0x hex), got '{}'", path,
                      line_no, text));
    }
    values.push_back(v);
  }
  return values;
}

}  // namespace

void add_cvt_command(CLI::App& app, CvtOptions& opts) {
  auto* cmd = app.add_subcommand(
      "cvt", "apply an NVDLA convertor y = sat(round(((x - offset) * scale) >> shift)) to values");
  cmd->add_option("--offset", opts.offset, "offset (INT32)")
      ->check(CLI::Range(-2147483648LL, 2147483647LL));
  cmd->add_option("--scale", opts.scale, "scaling (INT16)")->check(CLI::Range(-32768LL, 32767LL));
  cmd->add_option("--shift", opts.shift, "right shift (UINT6)")->check(CLI::Range(0u, 63u));
  cmd->add_option("--out", opts.out, "output precision")
      ->check(CLI::IsMember({"int8", "int16", "int32"}));
  cmd->add_option("--file", opts.file, "file with one integer per line ('#' starts a comment)");
  cmd->add_option("values", opts.values, "input values (decimal or 0x hex)");
}

int run_cvt(const CvtOptions& opts) {
  std::vector<std::int64_t> xs;
  if (!opts.file.empty()) xs = read_values_file(opts.file);
  for (const auto& text : opts.values) {
    std::int64_t v;
    if (!parse_int64(text, v)) {
      throw UsageError(fmt::format("value '{}' is not an integer (decimal or 0x hex)", text));
    }
    xs.push_back(v);
  }
  if (xs.empty()) throw UsageError("cvt: no input values (give VALUES or --file FILE)");

  const models::IntPrecision out = opts.out == "int8"    ? models::IntPrecision::kInt8
                                   : opts.out == "int16" ? models::IntPrecision::kInt16
                                                         : models::IntPrecision::kInt32;
  const models::ConvertorParams p{static_cast<std::int32_t>(opts.offset),
                                  static_cast<std::int16_t>(opts.scale),
                                  static_cast<std::uint8_t>(opts.shift)};
  models::SaturationCounter counter;
  fmt::print("{:>22} {:>12}  saturated\n", "x", "y");
  for (const std::int64_t x : xs) {
    const models::Saturated y = models::convert(x, p, out);
    counter.record(y.saturated);
    fmt::print("{:>22} {:>12}  {}\n", x, y.value, y.saturated ? "yes" : "no");
  }
  fmt::print("saturation count: {} of {}\n", counter.value(), xs.size());
  return 0;
}

}  // namespace octasim::app
