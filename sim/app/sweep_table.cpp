// `octasim sweep`'s results table (sweep_table.hpp).
#include "sim/app/sweep_table.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <fmt/core.h>

#include "models/io/atomic_file.hpp"
#include "sim/app/commands.hpp"

namespace octasim::app::sweep {
namespace {

enum class Type { kText, kCount, kNumber, kRank };

struct Column {
  const char* name;
  Type type;
};

// The columns after the grid keys (input, kind and config come before them).
constexpr Column kResultColumns[] = {
    {"result", Type::kText},
    {"message", Type::kText},
    {"trace_cycles", Type::kCount},
    {"compute_cycles", Type::kCount},
    {"fps", Type::kNumber},
    {"mac_utilization", Type::kNumber},
    {"peak_macs_per_cycle", Type::kCount},
    {"peak_dram_bytes_per_cycle", Type::kNumber},
    {"dram_bytes", Type::kCount},
    {"saturations", Type::kCount},
    {"host_seconds", Type::kNumber},
    {"rank", Type::kRank},
};
constexpr const char* kKeyColumns[] = {"input", "kind", "config"};

Type column_type(const std::string& name) {
  for (const Column& c : kResultColumns) {
    if (name == c.name) return c.type;
  }
  return Type::kText;
}

template <typename T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <typename T>
std::optional<T> optional_from(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  const bool ok = std::is_floating_point_v<T> ? it->is_number() : it->is_number_unsigned();
  if (!ok) {
    throw std::runtime_error(fmt::format("{}: \"{}\" must be {}, got {}", where, key,
                                         std::is_floating_point_v<T> ? "a number" : "a count",
                                         it->dump()));
  }
  return it->get<T>();
}

std::string text_from(const nlohmann::json& j, const std::string& key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    throw std::runtime_error(fmt::format("{}: \"{}\" must be a string", where, key));
  }
  return it->get<std::string>();
}

std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (!v.is_string()) return v.dump();
  const std::string s = v.get<std::string>();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// The records of CSV text (RFC 4180: quoted fields may hold commas, quotes and newlines), each
// with the line it starts on.
std::vector<std::pair<std::size_t, std::vector<std::string>>> parse_csv(const std::string& text,
                                                                        const std::string& path) {
  std::vector<std::pair<std::size_t, std::vector<std::string>>> records;
  std::vector<std::string> fields;
  std::string field;
  std::size_t line = 1, start_line = 1;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"' && field.empty()) {
      quoted = any = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        fields.push_back(std::move(field));
        records.emplace_back(start_line, std::move(fields));
      }
      fields.clear();
      field.clear();
      any = false;
      start_line = ++line;
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) throw UsageError(fmt::format("{}:{}: unterminated quoted field", path, start_line));
  if (any || !field.empty()) {
    fields.push_back(std::move(field));
    records.emplace_back(start_line, std::move(fields));
  }
  return records;
}

// A CSV cell as the JSON value of its column (empty: null).
nlohmann::json cell_json(const std::string& cell, const std::string& column,
                         const std::string& where) {
  const Type type = column_type(column);
  if (type == Type::kText) return cell;
  if (cell.empty()) return nullptr;
  try {
    std::size_t used = 0;
    if (type == Type::kCount) {
      if (cell[0] == '-') throw std::invalid_argument("negative");
      const unsigned long long v = std::stoull(cell, &used);
      if (used == cell.size()) return v;
    } else if (type == Type::kRank) {
      const int v = std::stoi(cell, &used);
      if (used == cell.size()) return v;
    } else {
      const double v = std::stod(cell, &used);
      if (used == cell.size() && std::isfinite(v)) return v;
    }
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("{}: column {}: expected {}, got '{}'", where, column,
                               type == Type::kNumber ? "a number" : "a whole number", cell));
}

std::vector<Row> read_csv(const std::string& path, const std::string& text,
                          const std::vector<std::string>& grid_keys) {
  const auto records = parse_csv(text, path);
  const std::vector<std::string> want = columns(grid_keys);
  if (records.empty()) return {};
  if (records[0].second != want) {
    std::string got;
    for (const std::string& c : records[0].second) got += (got.empty() ? "" : ",") + c;
    std::string expected;
    for (const std::string& c : want) expected += (expected.empty() ? "" : ",") + c;
    throw UsageError(fmt::format(
        "{}:{}: its columns are not this sweep's (--resume needs the same --grid keys): "
        "expected {}, got {}",
        path, records[0].first, expected, got));
  }
  std::vector<Row> rows;
  for (std::size_t r = 1; r < records.size(); ++r) {
    const std::string where = fmt::format("{}:{}", path, records[r].first);
    const std::vector<std::string>& cells = records[r].second;
    if (cells.size() != want.size()) {
      throw UsageError(
          fmt::format("{}: expected {} fields, got {}", where, want.size(), cells.size()));
    }
    nlohmann::json j = nlohmann::json::object();
    for (std::size_t c = 0; c < want.size(); ++c) j[want[c]] = cell_json(cells[c], want[c], where);
    try {
      rows.push_back(row_from_json(j, grid_keys, where));
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
  }
  return rows;
}

std::vector<Row> read_json(const std::string& path, const std::string& text,
                           const std::vector<std::string>& grid_keys) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
  if (!j.is_object() || j.value("format", "") != "octasim-sweep" || !j.contains("rows") ||
      !j["rows"].is_array()) {
    throw UsageError(fmt::format(
        "{}: expected an octasim sweep's results (an object with \"format\": \"octasim-sweep\" "
        "and \"rows\")",
        path));
  }
  if (j.value("grid_keys", nlohmann::json::array()) != nlohmann::json(grid_keys)) {
    throw UsageError(fmt::format(
        "{}: its grid keys {} are not this sweep's {} (--resume needs the same --grid keys)", path,
        j.value("grid_keys", nlohmann::json::array()).dump(), nlohmann::json(grid_keys).dump()));
  }
  std::vector<Row> rows;
  for (std::size_t i = 0; i < j["rows"].size(); ++i) {
    const std::string where = fmt::format("{}: rows[{}]", path, i);
    try {
      if (!j["rows"][i].is_object()) throw std::runtime_error(where + ": expected an object");
      rows.push_back(row_from_json(j["rows"][i], grid_keys, where));
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
  }
  return rows;
}

}  // namespace

std::vector<std::string> columns(const std::vector<std::string>& grid_keys) {
  std::vector<std::string> out(std::begin(kKeyColumns), std::end(kKeyColumns));
  out.insert(out.end(), grid_keys.begin(), grid_keys.end());
  for (const Column& c : kResultColumns) out.emplace_back(c.name);
  return out;
}

bool is_fixed_column(const std::string& name) {
  for (const char* c : kKeyColumns) {
    if (name == c) return true;
  }
  for (const Column& c : kResultColumns) {
    if (name == c.name) return true;
  }
  return false;
}

nlohmann::json row_to_json(const Row& row, const std::vector<std::string>& grid_keys,
                           bool with_index) {
  nlohmann::json o;
  o["input"] = row.input;
  o["kind"] = row.kind;
  o["config"] = row.config;
  for (std::size_t g = 0; g < grid_keys.size(); ++g) {
    o[grid_keys[g]] = g < row.grid.size() ? row.grid[g] : std::string();
  }
  o["result"] = row.result;
  o["message"] = row.message;
  o["trace_cycles"] = optional_json(row.trace_cycles);
  o["compute_cycles"] = optional_json(row.compute_cycles);
  o["fps"] = optional_json(row.fps);
  o["mac_utilization"] = optional_json(row.mac_utilization);
  o["peak_macs_per_cycle"] = optional_json(row.peak_macs_per_cycle);
  o["peak_dram_bytes_per_cycle"] = optional_json(row.peak_dram_bytes_per_cycle);
  o["dram_bytes"] = optional_json(row.dram_bytes);
  o["saturations"] = optional_json(row.saturations);
  // Milliseconds are what a host's timing is good for; fewer digits, smaller diffs.
  o["host_seconds"] = std::round(row.host_seconds * 1000.0) / 1000.0;
  o["rank"] = row.rank;
  if (with_index) o["index"] = row.index;
  return o;
}

Row row_from_json(const nlohmann::json& j, const std::vector<std::string>& grid_keys,
                  const std::string& where) {
  Row row;
  row.input = text_from(j, "input", where);
  row.kind = text_from(j, "kind", where);
  row.config = text_from(j, "config", where);
  for (const std::string& key : grid_keys) row.grid.push_back(text_from(j, key, where));
  row.result = text_from(j, "result", where);
  row.message = text_from(j, "message", where);
  row.trace_cycles = optional_from<std::uint64_t>(j, "trace_cycles", where);
  row.compute_cycles = optional_from<std::uint64_t>(j, "compute_cycles", where);
  row.fps = optional_from<double>(j, "fps", where);
  row.mac_utilization = optional_from<double>(j, "mac_utilization", where);
  row.peak_macs_per_cycle = optional_from<std::uint64_t>(j, "peak_macs_per_cycle", where);
  row.peak_dram_bytes_per_cycle = optional_from<double>(j, "peak_dram_bytes_per_cycle", where);
  row.dram_bytes = optional_from<std::uint64_t>(j, "dram_bytes", where);
  row.saturations = optional_from<std::uint64_t>(j, "saturations", where);
  row.host_seconds = optional_from<double>(j, "host_seconds", where).value_or(0.0);
  if (j.contains("rank") && j["rank"].is_number_integer()) row.rank = j["rank"].get<int>();
  if (j.contains("index") && j["index"].is_number_unsigned()) {
    row.index = j["index"].get<std::size_t>();
  }
  return row;
}

bool is_json_output(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".json") return true;
  if (ext == ".csv") return false;
  throw UsageError(fmt::format("--out {}: expected a .csv or .json file name", path));
}

void write_table(const std::string& path, const std::vector<std::string>& grid_keys,
                 const std::vector<Row>& rows) {
  std::string text;
  if (is_json_output(path)) {
    // Column order kept: each row is written from an ordered object.
    text = "{\n  \"format\": \"octasim-sweep\",\n  \"version\": 1,\n  \"grid_keys\": " +
           nlohmann::json(grid_keys).dump() +
           ",\n  \"columns\": " + nlohmann::json(columns(grid_keys)).dump() + ",\n  \"rows\": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const nlohmann::json j = row_to_json(rows[i], grid_keys, false);
      std::string obj;
      for (const std::string& c : columns(grid_keys)) {
        obj += fmt::format("{}{}: {}", obj.empty() ? "{" : ", ", nlohmann::json(c).dump(),
                           j.at(c).dump());
      }
      text += fmt::format("{}\n    {}}}", i == 0 ? "" : ",", obj);
    }
    text += rows.empty() ? "]\n}\n" : "\n  ]\n}\n";
  } else {
    const std::vector<std::string> cols = columns(grid_keys);
    for (std::size_t c = 0; c < cols.size(); ++c) text += (c == 0 ? "" : ",") + cols[c];
    text += '\n';
    for (const Row& row : rows) {
      const nlohmann::json j = row_to_json(row, grid_keys, false);
      for (std::size_t c = 0; c < cols.size(); ++c) {
        text += (c == 0 ? "" : ",") + csv_cell(j.at(cols[c]));
      }
      text += '\n';
    }
  }
  try {
    models::write_file_atomically(path, text);
  } catch (const models::OutputFileError& e) {
    throw UsageError(e.what());
  }
}

std::vector<Row> read_table(const std::string& path, const std::vector<std::string>& grid_keys) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("{}: cannot read file", path));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return is_json_output(path) ? read_json(path, text, grid_keys) : read_csv(path, text, grid_keys);
}

}  // namespace octasim::app::sweep
