// `octasim report A.json [B.json]`: a report written by `octasim run --report` printed again as
// the run summary's tables, or two reports compared layer by layer.
#include <exception>

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include "sim/app/commands.hpp"
#include "sim/report/report.hpp"

namespace octasim::app {

void add_report_command(CLI::App& app, ReportOptions& opts) {
  auto* cmd = app.add_subcommand(
      "report", "print a report written by run --report, or compare two (A.json B.json)");
  cmd->add_option("files", opts.files, "one report, or two to compare")->required()->expected(1, 2);
}

int run_report(const ReportOptions& opts) {
  std::vector<nlohmann::json> reports;
  try {
    for (const auto& f : opts.files) reports.push_back(report::read(f));
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  try {
    if (reports.size() == 1) {
      const nlohmann::json& r = reports[0];
      fmt::print("{}: {} ({}, schema_version {})", opts.files[0], r.at("trace").get<std::string>(),
                 r.at("generator").get<std::string>(), r.at("schema_version").get<int>());
      report::print_summary(r);
      const nlohmann::json& res = r.at("result");
      fmt::print("\nchecks: {} passed, {} failed\n", res.at("checks_passed").get<std::uint64_t>(),
                 res.at("checks_failed").get<std::uint64_t>());
      fmt::print("cycles: trace={} compute={}\n", res.at("trace_cycles").get<std::uint64_t>(),
                 res.at("compute_cycles").get<std::uint64_t>());
      return 0;
    }
    report::print_diff(reports[0], opts.files[0], reports[1], opts.files[1]);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("malformed report: {}", e.what()));
  }
  return 0;
}

}  // namespace octasim::app
