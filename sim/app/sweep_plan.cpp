// `octasim sweep`'s plan: the inputs expanded, every configuration and grid point checked, the
// grid points' configurations written as JSON files the children read with --config.
#include "sim/app/sweep_plan.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "sim/app/sweep_table.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::app::sweep {
namespace {

namespace fs = std::filesystem;

bool is_trace_file(const fs::path& p) {
  return p.extension() == ".cfg" || p.extension() == ".txn";
}

// --traces entries: a file as given, a directory as every trace file below it (sorted).
std::vector<std::string> expand_traces(const std::vector<std::string>& entries) {
  std::vector<std::string> out;
  for (const std::string& entry : entries) {
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(entry, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && is_trace_file(it->path())) {
          found.push_back(it->path().string());
        }
      }
      if (ec)
        throw UsageError(
            fmt::format("--traces {}: cannot read directory: {}", entry, ec.message()));
      if (found.empty()) {
        throw UsageError(
            fmt::format("--traces {}: no trace (.cfg or .txn file) in this directory", entry));
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(entry, ec)) {
      if (!is_trace_file(entry)) {
        throw UsageError(fmt::format(
            "--traces {}: expected an NVDLA trace (.cfg or .txn) or a directory", entry));
      }
      out.push_back(entry);
    } else {
      throw UsageError(fmt::format("--traces {}: no such trace file or directory", entry));
    }
  }
  return out;
}

std::vector<std::string> check_networks(const std::vector<std::string>& models) {
  for (const std::string& m : models) {
    std::error_code ec;
    if (!fs::is_regular_file(m, ec)) {
      throw UsageError(fmt::format("--networks {}: no such model file", m));
    }
  }
  return models;
}

// The bytes a trace's simulation is expected to scale with: its .cfg and the data files named
// after it in the same directory (NVDLA's NAME.cfg beside NAME*.dat).
double trace_bytes(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  double bytes = static_cast<double>(fs::file_size(p, ec));
  if (ec) return 0;
  const std::string stem = p.stem().string();
  for (auto it =
           fs::directory_iterator(p.parent_path().empty() ? fs::path(".") : p.parent_path(), ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->path() != p && name.rfind(stem, 0) == 0 && it->is_regular_file(ec)) {
      bytes += static_cast<double>(it->file_size(ec));
    }
  }
  return bytes;
}

std::vector<GridAxis> parse_grid(const std::vector<std::string>& specs) {
  std::vector<GridAxis> axes;
  for (const std::string& spec : specs) {
    const std::size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      throw UsageError(fmt::format("--grid {}: expected KEY=V1,V2,...", spec));
    }
    GridAxis axis;
    axis.key = spec.substr(0, eq);
    if (!is_hw_config_key(axis.key) || axis.key == "name" || axis.key == "description" ||
        axis.key == "base" || is_fixed_column(axis.key)) {
      throw UsageError(fmt::format(
          "--grid {}: unknown configuration key \"{}\" (the keys are those of a JSON "
          "configuration file: README, \"--config takes a built-in name or a JSON file\")",
          spec, axis.key));
    }
    for (const GridAxis& a : axes) {
      if (a.key == axis.key) throw UsageError(fmt::format("--grid {}: key given twice", axis.key));
    }
    std::string rest = spec.substr(eq + 1);
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = rest.find(',', start);
      const std::string v =
          rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (v.empty()) throw UsageError(fmt::format("--grid {}: empty value", spec));
      axis.values.push_back(v);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

// A grid value as JSON: a number, true/false or a JSON string literal as such, anything else as
// a string (cta_scheduler=round_robin).
nlohmann::json grid_value(const std::string& v) {
  try {
    nlohmann::json j = nlohmann::json::parse(v);
    if (j.is_primitive() && !j.is_null()) return j;
  } catch (const nlohmann::json::parse_error&) {
  }
  return v;
}

// Every grid point (the cross product), as value indices, first axis slowest.
std::vector<std::vector<std::string>> grid_points(const std::vector<GridAxis>& axes) {
  std::vector<std::vector<std::string>> points(1);
  for (const GridAxis& axis : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& p : points) {
      for (const std::string& v : axis.values) {
        next.push_back(p);
        next.back().push_back(v);
      }
    }
    points = std::move(next);
  }
  return points;
}

// The configuration `config` with the grid point applied: checked and written to `temp_dir`;
// returns the file's path. The base is fully expanded (hw_config_json), so a JSON or spec file
// works as well as a built-in name.
std::string derived_config(const std::string& config, const HwConfig& base,
                           const std::vector<GridAxis>& axes, const std::vector<std::string>& point,
                           const std::string& temp_dir, std::size_t number) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(hw_config_json(base));
  std::string name = base.name;
  std::string where;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    j[axes[a].key] = grid_value(point[a]);
    name += fmt::format("{}{}={}", a == 0 ? "[" : ",", axes[a].key, point[a]);
    where += fmt::format(" {}={}", axes[a].key, point[a]);
  }
  j["name"] = name + "]";
  const std::string text = j.dump(2);
  try {
    (void)parse_hw_config(text, fmt::format("--configs {} with --grid{}", config, where));
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  const std::string path = (fs::path(temp_dir) / fmt::format("config-{}.json", number)).string();
  std::ofstream out(path);
  out << text << '\n';
  if (!out) throw UsageError(fmt::format("{}: cannot write file", path));
  return path;
}

}  // namespace

std::string row_key(const std::string& input, const std::string& config,
                    const std::vector<std::string>& grid) {
  std::string key = input + '\x1f' + config;
  for (const std::string& g : grid) key += '\x1f' + g;
  return key;
}

Plan make_plan(const SweepOptions& opts, const std::string& temp_dir) {
  if (opts.traces.empty() && opts.networks.empty()) {
    throw UsageError("nothing to sweep: give --traces and/or --networks");
  }
  if (opts.configs.empty()) throw UsageError("--configs: give at least one configuration");
  Plan plan;
  plan.axes = parse_grid(opts.grid);
  const std::vector<std::string> traces = expand_traces(opts.traces);
  const std::vector<std::string> networks = check_networks(opts.networks);
  const std::vector<std::vector<std::string>> points = grid_points(plan.axes);

  // Each configuration once, then each grid point on it: (config, point) -> the child's --config.
  std::vector<std::vector<std::string>> config_args(opts.configs.size());
  std::size_t derived = 0;
  for (std::size_t c = 0; c < opts.configs.size(); ++c) {
    const std::string& config = opts.configs[c];
    if (config.empty()) throw UsageError("--configs: empty configuration name");
    HwConfig base;
    try {
      base = load_hw_config(config);
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("--configs {}: {}", config, e.what()));
    }
    for (const auto& point : points) {
      config_args[c].push_back(
          plan.axes.empty() ? config
                            : derived_config(config, base, plan.axes, point, temp_dir, derived++));
    }
  }

  std::set<std::string> seen;
  const auto add_jobs = [&](const std::string& kind, const std::string& input, double bytes) {
    for (std::size_t c = 0; c < opts.configs.size(); ++c) {
      for (std::size_t p = 0; p < points.size(); ++p) {
        Job job;
        job.index = plan.jobs.size();
        job.kind = kind;
        job.input = input;
        job.config = opts.configs[c];
        job.grid = points[p];
        job.config_arg = config_args[c][p];
        job.estimate = bytes;
        // The same pair twice (a trace listed twice) is one row.
        if (seen.insert(row_key(job.input, job.config, job.grid)).second) {
          plan.jobs.push_back(std::move(job));
        }
      }
    }
  };
  for (const std::string& t : traces) add_jobs("trace", t, trace_bytes(t));
  for (const std::string& n : networks) {
    std::error_code ec;
    const auto size = fs::file_size(n, ec);
    add_jobs("network", n, ec ? 0.0 : static_cast<double>(size));
  }
  return plan;
}

}  // namespace octasim::app::sweep
