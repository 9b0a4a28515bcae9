// What a user reads after a cycle-level run: one report (a JSON document, schema
// sim/report/report.schema.json) built from the device's layers and statistics counters, printed
// as the run summary, written by `--report`, printed again and compared by `octasim report`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/hw_config.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/player.hpp"

namespace octasim::report {

// The version of report.schema.json the writer follows; readers refuse other versions.
inline constexpr int kSchemaVersion = 1;

// The run's identity and outcome (what the player knows).
struct RunInfo {
  std::string generator;  // "octasim 0.1.0"
  std::string trace;      // the trace's path
  std::uint64_t checks_passed = 0;
  std::uint64_t checks_failed = 0;
  std::uint64_t trace_cycles = 0;
  std::uint64_t compute_cycles = 0;
};

// Builds the report of a finished cycle-level run.
[[nodiscard]] nlohmann::json build(const soc::Soc& soc, const RunInfo& run);

// Names each layer's ONNX nodes (`onnx_nodes`) in a report: layer i is program layer
// i % nodes.size() (a compiled network run once or several times). Nothing when `nodes` is empty.
void annotate_onnx_nodes(nlohmann::json& report, const std::vector<std::string>& nodes);

// The per-layer and per-unit tables, the non-zero statistics counters and roofline lines of
// `report` (without the PASS/checks/cycles lines), on stdout.
void print_summary(const nlohmann::json& report);

// Reads a report written by --report; throws std::runtime_error with one line naming the file
// when it cannot be read, is not JSON, has another schema_version or names an engine octasim
// does not have.
[[nodiscard]] nlohmann::json read(const std::string& path);

// The text of a report file (indented JSON and a newline).
[[nodiscard]] std::string report_text(const nlohmann::json& report);
// Writes report_text(report) to `path` atomically (models/io/atomic_file.hpp: an old file stays
// as it was on failure); throws std::runtime_error naming the file on failure.
void write(const nlohmann::json& report, const std::string& path);

// Compares two reports layer by layer and unit by unit (cycles, bytes, utilization: both
// values, delta and percent), on stdout.
void print_diff(const nlohmann::json& a, const std::string& name_a, const nlohmann::json& b,
                const std::string& name_b);

// Writes `timeline` as Chrome-trace JSON (Perfetto, chrome://tracing): a process per engine and
// the DRAM, a thread per unit, "X" slices, "C" counters (CACC credits, DRAM bandwidth per
// window); timestamps are cycles, shown as microseconds. timeline_text is the file's text;
// write_timeline writes it atomically, throwing std::runtime_error naming the file on failure.
[[nodiscard]] std::string timeline_text(const stats::Timeline& timeline,
                                        const std::string& generator);
void write_timeline(const stats::Timeline& timeline, const std::string& generator,
                    const std::string& path);

}  // namespace octasim::report
