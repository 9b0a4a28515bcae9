// `octasim sweep`'s results table: rows as JSON objects (also what MPI ranks send rank 0), the
// CSV and JSON files (written atomically: a temporary file renamed over the output) and reading
// them back for --resume.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/app/sweep_plan.hpp"

namespace octasim::app::sweep {

// The columns, in order: input, kind, config, the grid keys, result, message, trace_cycles,
// compute_cycles, fps, mac_utilization, peak_macs_per_cycle, peak_dram_bytes_per_cycle,
// dram_bytes, saturations, host_seconds, rank.
[[nodiscard]] std::vector<std::string> columns(const std::vector<std::string>& grid_keys);
// Whether `name` is one of the columns every table has (a grid key may not be one).
[[nodiscard]] bool is_fixed_column(const std::string& name);

// A row as one JSON object keyed by column (null where a number is absent); `with_index` adds
// the job index (between ranks; the files do not keep it).
[[nodiscard]] nlohmann::json row_to_json(const Row& row, const std::vector<std::string>& grid_keys,
                                         bool with_index);
// The inverse; `where` names the row in errors (std::runtime_error).
[[nodiscard]] Row row_from_json(const nlohmann::json& j, const std::vector<std::string>& grid_keys,
                                const std::string& where);

// Whether the output is JSON (.json) rather than CSV (.csv); anything else is a UsageError.
[[nodiscard]] bool is_json_output(const std::string& path);
// Writes `rows` in their order to `path` (CSV or JSON by its extension) through a temporary file
// in the same directory renamed over it; a failure throws UsageError.
void write_table(const std::string& path, const std::vector<std::string>& grid_keys,
                 const std::vector<Row>& rows);
// The rows of an output file written by write_table with the same grid keys; a malformed file
// or different columns throw UsageError naming the file and line.
[[nodiscard]] std::vector<Row> read_table(const std::string& path,
                                          const std::vector<std::string>& grid_keys);

}  // namespace octasim::app::sweep
