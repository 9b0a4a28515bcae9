#include "sim/report/report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include <fmt/core.h>

#include "firmware/regmap/regmap.hpp"
#include "models/io/atomic_file.hpp"
#include "sim/mem/cvsram_port.hpp"
#include "sim/mem/dram_channel.hpp"
#include "sim/mem/l2_slice.hpp"

namespace octasim::report {
namespace {

using nlohmann::json;

std::string register_name(std::uint32_t addr) {
  const regs::RegisterInfo* info = regs::find_register(addr);
  return info ? fmt::format("NVDLA_{}.{}_0", info->unit, info->name)
              : fmt::format("0x{:04x}", addr);
}

json cube(const dla::OpResult::Cube& c) {
  return {{"width", c.width}, {"height", c.height}, {"channels", c.channels}};
}

double ratio(double num, double den) {
  return den > 0 ? num / den : 0.0;
}

// The value of the counter `name` in `group` (0 when the group has none).
std::uint64_t counter(const stats::Group& group, const std::string& name) {
  for (std::size_t i = 0; i < group.size(); ++i) {
    if (group.info(i).name == name) return group.value(i);
  }
  return 0;
}

json layer_json(const soc::Soc& soc, std::size_t index, const soc::LayerTiming& l) {
  const HwConfig& hw = soc.config();
  const dla::EngineModel& model = soc.dla().engine(l.engine_index);
  const stats::Group& group = model.statistics();
  const dla::OpResult& r = l.result;
  const bool finished = l.end_cycle >= l.start_cycle && !l.counters.empty();
  const std::uint64_t cycles = finished ? l.end_cycle - l.start_cycle : 0;
  const auto value = [&](int i) -> std::uint64_t {
    return i >= 0 && static_cast<std::size_t>(i) < l.counters.size() ? l.counters[i] : 0;
  };
  const auto named = [&](const std::string& name) -> std::uint64_t {
    for (std::size_t i = 0; i < group.size(); ++i) {
      if (group.info(i).name == name) return value(static_cast<int>(i));
    }
    return 0;
  };

  json j;
  j["index"] = index;
  j["engine"] = l.engine;
  j["group"] = l.group;
  j["finished"] = finished;
  j["start_cycle"] = l.start_cycle;
  j["end_cycle"] = finished ? l.end_cycle : l.start_cycle;
  j["cycles"] = cycles;
  j["read_stall_cycles"] = named("read_stall_cycles");
  j["write_stall_cycles"] = named("write_stall_cycles");
  j["input"] = cube(r.in);
  j["output"] = cube(r.out);
  // DRAM traffic as the engine's DMAs moved it (the timing model's bytes).
  const std::uint64_t bytes_read = named("bytes_read");
  const std::uint64_t bytes_written = named("bytes_written");
  j["bytes_read"] = bytes_read;
  j["bytes_written"] = bytes_written;
  const double peak_bw = soc.memory_system().bytes_per_cycle();  // every DRAM channel
  const double bw =
      ratio(static_cast<double>(bytes_read + bytes_written), static_cast<double>(cycles));
  j["bandwidth"] = {{"bytes_per_cycle", bw},
                    {"peak_bytes_per_cycle", peak_bw},
                    {"utilization", ratio(bw, peak_bw)}};
  if (r.macs > 0) {
    j["kernel"] = {{"width", r.kernel_width},
                   {"height", r.kernel_height},
                   {"stride_width", r.stride_width},
                   {"stride_height", r.stride_height},
                   {"weight_bytes", r.weight_bytes}};
    j["macs"] = r.macs;
    const double achieved = ratio(static_cast<double>(r.macs), static_cast<double>(cycles));
    j["mac_utilization"] = {{"peak_macs_per_cycle", r.macs_per_cycle},
                            {"macs_per_cycle", achieved},
                            {"utilization", ratio(achieved, r.macs_per_cycle)}};
  }

  json units = json::array();
  for (const dla::UnitCounters& u : model.units()) {
    std::uint64_t stall = 0;
    for (int s : u.stalls) stall += value(s);
    const std::uint64_t busy = value(u.busy);
    units.push_back({{"name", u.name},
                     {"busy_cycles", busy},
                     {"stall_cycles", stall},
                     {"utilization", ratio(static_cast<double>(busy), static_cast<double>(cycles))},
                     {"bytes_read", value(u.bytes_read)},
                     {"bytes_written", value(u.bytes_written)}});
  }
  j["units"] = std::move(units);

  // Roofline: a MAC is two ops; SDP/PDP/CDP count one op per element processed.
  const bool conv = r.macs > 0;
  const std::uint64_t ops = conv ? 2 * r.macs : named("elements");
  const double peak_ops = dla::engines()[l.engine_index].peak_ops_per_cycle(hw, r);
  const std::uint64_t dram_bytes = bytes_read + bytes_written;
  const double ridge = ratio(peak_ops, peak_bw);
  json roof = {
      {"ops", ops},
      {"dram_bytes", dram_bytes},
      {"peak_ops_per_cycle", peak_ops},
      {"peak_dram_bytes_per_cycle", peak_bw},
      {"ridge_point", ridge},
      {"achieved_ops_per_cycle", ratio(static_cast<double>(ops), static_cast<double>(cycles))}};
  if (dram_bytes > 0) {
    const double intensity = static_cast<double>(ops) / static_cast<double>(dram_bytes);
    roof["arithmetic_intensity"] = intensity;
    roof["bound"] = intensity < ridge ? "memory" : "math";
  } else {
    roof["arithmetic_intensity"] = nullptr;
    roof["bound"] = "math";
  }
  j["roofline"] = std::move(roof);

  json counters = json::object();
  for (std::size_t i = 0; i < group.size(); ++i) {
    counters[group.full_name(i)] = value(static_cast<int>(i));
  }
  j["counters"] = std::move(counters);

  json registers = json::array();
  for (const auto& [addr, v] : r.status) {
    registers.push_back(
        {{"name", register_name(addr)}, {"address", addr}, {"value", v}, {"source", "status"}});
  }
  for (const auto& [addr, v] : l.perf_registers) {
    registers.push_back(
        {{"name", register_name(addr)}, {"address", addr}, {"value", v}, {"source", "perf"}});
  }
  j["registers"] = std::move(registers);
  return j;
}

std::string percent(double fraction) {
  return fmt::format("{:.1f}%", 100.0 * fraction);
}

// "1234" or "-" for a unit without that counter.
std::string count_or_dash(const json& unit, const char* key, bool has) {
  return has ? fmt::format("{}", unit.at(key).get<std::uint64_t>()) : std::string("-");
}

void print_layer(const json& l) {
  const json& in = l.at("input");
  const json& out = l.at("output");
  // A unit without an output surface (OCTAV: clipping scalars to registers) shows none.
  const std::string to =
      out.at("width").get<unsigned>() == 0
          ? std::string()
          : fmt::format(" -> out {}x{}x{}", out.at("width").get<unsigned>(),
                        out.at("height").get<unsigned>(), out.at("channels").get<unsigned>());
  fmt::print("  {} group {}: in {}x{}x{}{}, read {} B, wrote {} B\n",
             l.at("engine").get<std::string>(), l.at("group").get<unsigned>(),
             in.at("width").get<unsigned>(), in.at("height").get<unsigned>(),
             in.at("channels").get<unsigned>(), to, l.at("bytes_read").get<std::uint64_t>(),
             l.at("bytes_written").get<std::uint64_t>());
  if (l.contains("onnx_nodes")) {
    fmt::print("    ONNX: {}\n", l.at("onnx_nodes").get<std::string>());
  }
  if (l.contains("kernel")) {
    const json& k = l.at("kernel");
    fmt::print("    kernel {}x{}, stride {}x{}, weights {} B, {} MACs\n",
               k.at("width").get<unsigned>(), k.at("height").get<unsigned>(),
               k.at("stride_width").get<unsigned>(), k.at("stride_height").get<unsigned>(),
               k.at("weight_bytes").get<std::uint64_t>(), l.at("macs").get<std::uint64_t>());
  }
  if (!l.at("finished").get<bool>()) {
    fmt::print("    started at cycle {}, not finished\n", l.at("start_cycle").get<std::uint64_t>());
    return;
  }
  const auto cycles = l.at("cycles").get<std::uint64_t>();
  fmt::print("    cycles {}..{} ({} cycles), read stall {}, write stall {}\n",
             l.at("start_cycle").get<std::uint64_t>(), l.at("end_cycle").get<std::uint64_t>(),
             cycles, l.at("read_stall_cycles").get<std::uint64_t>(),
             l.at("write_stall_cycles").get<std::uint64_t>());
  if (l.contains("mac_utilization")) {
    const json& m = l.at("mac_utilization");
    fmt::print("    MAC utilization {} of {} MACs/cycle ({:.1f} MACs/cycle)\n",
               percent(m.at("utilization").get<double>()),
               m.at("peak_macs_per_cycle").get<unsigned>(), m.at("macs_per_cycle").get<double>());
  }
  const json& bw = l.at("bandwidth");
  fmt::print("    DRAM {:.2f} B/cycle of {:g} B/cycle peak ({})\n",
             bw.at("bytes_per_cycle").get<double>(), bw.at("peak_bytes_per_cycle").get<double>(),
             percent(bw.at("utilization").get<double>()));
  fmt::print("    {:<9} {:>10} {:>6} {:>10} {:>10} {:>10}\n", "unit", "busy", "util", "stall",
             "read B", "written B");
  for (const json& u : l.at("units")) {
    const auto name = u.at("name").get<std::string>();
    fmt::print("    {:<9} {:>10} {:>6} {:>10} {:>10} {:>10}\n", name,
               u.at("busy_cycles").get<std::uint64_t>(), percent(u.at("utilization").get<double>()),
               u.at("stall_cycles").get<std::uint64_t>(),
               count_or_dash(u, "bytes_read", u.at("bytes_read").get<std::uint64_t>() > 0),
               count_or_dash(u, "bytes_written", u.at("bytes_written").get<std::uint64_t>() > 0));
  }
  const json& roof = l.at("roofline");
  const double peak = roof.at("peak_ops_per_cycle").get<double>();
  const double achieved = roof.at("achieved_ops_per_cycle").get<double>();
  const std::string intensity =
      roof.at("arithmetic_intensity").is_null()
          ? std::string("no DRAM traffic")
          : fmt::format("{:.2f} ops/B", roof.at("arithmetic_intensity").get<double>());
  fmt::print(
      "    roofline: {} vs ridge {:.2f} ops/B ({:g} ops/cycle / {:g} B/cycle): {}-bound, "
      "{:.2f} ops/cycle ({} of peak)\n",
      intensity, roof.at("ridge_point").get<double>(), peak,
      roof.at("peak_dram_bytes_per_cycle").get<double>(), roof.at("bound").get<std::string>(),
      achieved, percent(ratio(achieved, peak)));
  std::string line;
  for (const json& reg : l.at("registers")) {
    if (reg.at("value").get<std::uint64_t>() == 0) continue;
    std::string name = reg.at("name").get<std::string>();
    if (name.rfind("NVDLA_", 0) == 0) name = name.substr(6);
    if (name.size() > 2 && name.compare(name.size() - 2, 2, "_0") == 0)
      name.resize(name.size() - 2);
    line += fmt::format("{}{}={}", line.empty() ? "" : ", ", name,
                        reg.at("value").get<std::uint64_t>());
  }
  if (!line.empty()) fmt::print("    registers: {}\n", line);
}

}  // namespace

json build(const soc::Soc& soc, const RunInfo& run) {
  const HwConfig& hw = soc.config();
  json j;
  j["schema_version"] = kSchemaVersion;
  j["generator"] = run.generator;
  j["trace"] = run.trace;
  j["cycle_time"] = "1 cycle = 1 ns of simulated time";
  j["result"] = {{"passed", run.checks_failed == 0},
                 {"checks_passed", run.checks_passed},
                 {"checks_failed", run.checks_failed},
                 {"trace_cycles", run.trace_cycles},
                 {"compute_cycles", run.compute_cycles}};
  j["config"] = {{"name", hw.name},
                 {"dram_bytes_per_cycle", soc.memory_system().bytes_per_cycle()},
                 {"mac_atomic_c", hw.dla.mac_atomic_c},
                 {"mac_atomic_k", hw.dla.mac_atomic_k},
                 {"memory_atomic_size", hw.dla.memory_atomic_size},
                 {"sdp_throughput", hw.dla.sdp_bs_throughput},
                 {"pdp_throughput", hw.dla.pdp_throughput},
                 {"cdp_throughput", hw.dla.cdp_throughput},
                 {"primary_memif_latency", hw.dla.primary_memif_latency}};

  json layers = json::array();
  for (std::size_t i = 0; i < soc.dla().layers().size(); ++i) {
    layers.push_back(layer_json(soc, i, soc.dla().layers()[i]));
  }
  j["layers"] = std::move(layers);

  json units = json::array();
  for (std::size_t i = 0; i < dla::engines().size(); ++i) {
    const stats::Group& g = soc.dla().engine(i).statistics();
    json u = {{"name", std::string(dla::engines()[i].name)}};
    for (const char* name : {"operations", "active_cycles", "busy_cycles", "read_stall_cycles",
                             "write_stall_cycles", "bytes_read", "bytes_written"}) {
      u[name] = counter(g, name);
    }
    units.push_back(std::move(u));
  }
  j["units"] = std::move(units);

  const MemorySystem& dram = soc.memory_system();
  const double window = static_cast<double>(run.trace_cycles);
  const double bw = ratio(static_cast<double>(dram.bytes_read() + dram.bytes_written()), window);
  j["dram"] = {{"bytes_read", dram.bytes_read()},
               {"bytes_written", dram.bytes_written()},
               {"busy_cycles", dram.busy_cycles()},
               {"peak_bytes_per_cycle", dram.bytes_per_cycle()},
               {"bytes_per_cycle", bw},
               {"utilization", ratio(bw, dram.bytes_per_cycle())}};
  // The secondary memory interface, on configurations with a CV-SRAM.
  if (const mem::CvSramPort* cv = dram.cvsram()) {
    j["cvsram"] = {
        {"bytes_read", cv->bytes_read()},
        {"bytes_written", cv->bytes_written()},
        {"requests", cv->requests()},
        {"busy_cycles", cv->busy_cycles()},
        {"peak_bytes_per_cycle", cv->bytes_per_cycle()},
        {"utilization", std::min(1.0, ratio(static_cast<double>(cv->busy_cycles()), window))}};
  }

  // The memory system's caches and channels (only with L2 slices / several partitions is there
  // more than the DRAM line above to show).
  {
    const MemorySystem& memsys = soc.memory_system();
    json slices = json::array();
    for (unsigned i = 0; i < memsys.l2_slices(); ++i) {
      const mem::L2Slice& l2 = memsys.l2_slice(i);
      slices.push_back({{"slice", i},
                        {"hits", l2.hits()},
                        {"misses", l2.misses()},
                        {"hit_rate", ratio(static_cast<double>(l2.hits()),
                                           static_cast<double>(l2.hits() + l2.misses()))},
                        {"writebacks", l2.writebacks()}});
    }
    json channels = json::array();
    for (unsigned i = 0; i < memsys.partitions(); ++i) {
      const mem::DramChannel& ch = memsys.dram_channel(i);
      channels.push_back(
          {{"channel", i},
           {"bytes_read", ch.bytes_read()},
           {"bytes_written", ch.bytes_written()},
           {"busy_cycles", ch.busy_cycles()},
           {"bytes_per_cycle",
            ratio(static_cast<double>(ch.bytes_read() + ch.bytes_written()), window)},
           {"row_hit_rate", ch.row_hit_rate()}});
    }
    j["memory"] = {{"l2_slices", std::move(slices)}, {"dram_channels", std::move(channels)}};
  }

  if (const ppu::Ppu* p = soc.ppu()) {
    json kernels = json::array();
    for (const ppu::KernelRecord& k : p->kernels()) {
      kernels.push_back({{"channel", k.channel},
                         {"kind", k.kind},
                         {"type", k.type},
                         {"m", k.m},
                         {"n", k.n},
                         {"k", k.k},
                         {"tile", {k.tile_m, k.tile_n, k.tile_k}},
                         {"ctas", k.ctas},
                         {"occupancy", k.occupancy},
                         {"path", k.path},
                         {"finished", k.end_cycle != 0},
                         {"start_cycle", k.start_cycle},
                         {"end_cycle", k.end_cycle},
                         {"cycles", k.end_cycle != 0 ? k.cycles() : 0},
                         {"macs", k.macs},
                         {"bytes_read", k.bytes_read},
                         {"bytes_written", k.bytes_written},
                         {"tensor_utilization", k.tensor_utilization},
                         {"arithmetic_intensity", k.arithmetic_intensity},
                         {"bound", k.bound},
                         {"saturations", k.saturations}});
    }
    j["ppu"] = {{"gpcs", hw.ppu.gpcs},
                {"sms", hw.ppu.gpcs * hw.ppu.sms_per_gpc},
                {"tensor_cores_per_sm", hw.ppu.tensor_cores_per_sm},
                {"kernels", std::move(kernels)}};
  }

  json statistics = json::array();
  for (const stats::Group* g : soc.statistics()) {
    for (std::size_t i = 0; i < g->size(); ++i) {
      const stats::CounterInfo& info = g->info(i);
      json c = {{"name", g->full_name(i)},
                {"description", info.description},
                {"unit", std::string(stats::unit_name(info.unit))},
                {"value", g->value(i)}};
      if (!info.register_name.empty()) c["register"] = info.register_name;
      statistics.push_back(std::move(c));
    }
  }
  j["statistics"] = std::move(statistics);
  return j;
}

void print_summary(const json& report) {
  fmt::print("\nlayers (cycle-level, {}):\n", report.at("config").at("name").get<std::string>());
  for (const json& l : report.at("layers")) print_layer(l);
  fmt::print("units:\n");
  for (const json& u : report.at("units")) {
    const auto ops = u.at("operations").get<std::uint64_t>();
    if (ops == 0) continue;
    fmt::print(
        "  {}: {} op{}, active {} cycles, busy {}, read stall {}, write stall {}, read {} B, "
        "wrote {} B\n",
        u.at("name").get<std::string>(), ops, ops == 1 ? "" : "s",
        u.at("active_cycles").get<std::uint64_t>(), u.at("busy_cycles").get<std::uint64_t>(),
        u.at("read_stall_cycles").get<std::uint64_t>(),
        u.at("write_stall_cycles").get<std::uint64_t>(), u.at("bytes_read").get<std::uint64_t>(),
        u.at("bytes_written").get<std::uint64_t>());
  }
  const json& d = report.at("dram");
  fmt::print(
      "  DRAM: read {} B, wrote {} B, bus busy {} cycles, {:.2f} B/cycle over the trace of {} "
      "B/cycle peak ({})\n",
      d.at("bytes_read").get<std::uint64_t>(), d.at("bytes_written").get<std::uint64_t>(),
      d.at("busy_cycles").get<std::uint64_t>(), d.at("bytes_per_cycle").get<double>(),
      d.at("peak_bytes_per_cycle").get<unsigned>(), percent(d.at("utilization").get<double>()));
  if (report.contains("cvsram")) {
    const json& c = report.at("cvsram");
    fmt::print(
        "  CV-SRAM: read {} B, wrote {} B, {} requests, interface busy {} cycles ({} of the "
        "trace, {} B/cycle peak)\n",
        c.at("bytes_read").get<std::uint64_t>(), c.at("bytes_written").get<std::uint64_t>(),
        c.at("requests").get<std::uint64_t>(), c.at("busy_cycles").get<std::uint64_t>(),
        percent(c.at("utilization").get<double>()), c.at("peak_bytes_per_cycle").get<unsigned>());
  }
  if (report.contains("ppu")) {
    const json& p = report.at("ppu");
    fmt::print("PPU kernels ({} GPCs, {} SMs x {} tensor cores):\n", p.at("gpcs").get<unsigned>(),
               p.at("sms").get<unsigned>(), p.at("tensor_cores_per_sm").get<unsigned>());
    for (const json& k : p.at("kernels")) {
      fmt::print("  ch{} {} {} {}x{}x{}: {}\n", k.at("channel").get<unsigned>(),
                 k.at("kind").get<std::string>(), k.at("type").get<std::string>(),
                 k.at("m").get<unsigned>(), k.at("n").get<unsigned>(), k.at("k").get<unsigned>(),
                 k.at("path").get<std::string>());
      fmt::print(
          "    cycles {}..{} ({} cycles), {} CTAs ({} per SM), {} MACs, read {} B, wrote {} B\n",
          k.at("start_cycle").get<std::uint64_t>(), k.at("end_cycle").get<std::uint64_t>(),
          k.at("cycles").get<std::uint64_t>(), k.at("ctas").get<unsigned>(),
          k.at("occupancy").get<unsigned>(), k.at("macs").get<std::uint64_t>(),
          k.at("bytes_read").get<std::uint64_t>(), k.at("bytes_written").get<std::uint64_t>());
      fmt::print(
          "    tensor-core utilization {}, {:.2f} MACs/B: {}-bound{}\n",
          percent(k.at("tensor_utilization").get<double>()),
          k.at("arithmetic_intensity").get<double>(), k.at("bound").get<std::string>(),
          k.at("saturations").get<std::uint64_t>() != 0
              ? fmt::format(", {} INT32 saturations", k.at("saturations").get<std::uint64_t>())
              : std::string());
    }
  }
  if (report.contains("memory")) {
    const json& m = report.at("memory");
    for (const json& l2 : m.at("l2_slices")) {
      const auto hits = l2.at("hits").get<std::uint64_t>();
      const auto misses = l2.at("misses").get<std::uint64_t>();
      if (hits + misses == 0) continue;
      fmt::print("  L2 slice {}: {} hits, {} misses ({} hit rate), {} write-backs\n",
                 l2.at("slice").get<unsigned>(), hits, misses,
                 percent(l2.at("hit_rate").get<double>()),
                 l2.at("writebacks").get<std::uint64_t>());
    }
    if (m.at("dram_channels").size() > 1 || !m.at("l2_slices").empty()) {
      for (const json& ch : m.at("dram_channels")) {
        fmt::print(
            "  DRAM channel {}: read {} B, wrote {} B, {:.2f} B/cycle, row-buffer hit rate {}\n",
            ch.at("channel").get<unsigned>(), ch.at("bytes_read").get<std::uint64_t>(),
            ch.at("bytes_written").get<std::uint64_t>(), ch.at("bytes_per_cycle").get<double>(),
            percent(ch.at("row_hit_rate").get<double>()));
      }
    }
  }
  fmt::print("statistics (non-zero):\n");
  for (const json& c : report.at("statistics")) {
    const auto v = c.at("value").get<std::uint64_t>();
    if (v == 0) continue;
    fmt::print("  {:<32} {:>12} {:<6}  {}\n", c.at("name").get<std::string>(), v,
               c.at("unit").get<std::string>(), c.at("description").get<std::string>());
  }
}

namespace {

// Every layer's engine and every unit's name must be an engine of the registry.
void check_engines(const json& report, const std::string& path) {
  const auto check = [&](const json& entry, const char* key, const char* what) {
    if (!entry.is_object() || !entry.contains(key) || !entry.at(key).is_string()) {
      throw std::runtime_error(fmt::format("{}: a report {} has no '{}'", path, what, key));
    }
    try {
      (void)dla::engine_index(entry.at(key).get<std::string>());
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(fmt::format("{}: report {}: {}", path, what, e.what()));
    }
  };
  for (const json& l : report.at("layers")) check(l, "engine", "layer");
  for (const json& u : report.at("units")) check(u, "name", "unit");
}

}  // namespace

json read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open file", path));
  json j;
  try {
    in >> j;
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: not a JSON document ({})", path, e.what()));
  }
  if (!j.is_object() || !j.contains("schema_version") || !j["schema_version"].is_number()) {
    throw std::runtime_error(fmt::format("{}: not an octasim report (no schema_version)", path));
  }
  if (j["schema_version"].get<int>() != kSchemaVersion) {
    throw std::runtime_error(fmt::format("{}: report schema_version {}, this octasim reads {}",
                                         path, j["schema_version"].dump(), kSchemaVersion));
  }
  for (const char* key : {"config", "result", "layers", "units", "dram", "statistics"}) {
    if (!j.contains(key)) {
      throw std::runtime_error(fmt::format("{}: report has no '{}'", path, key));
    }
  }
  check_engines(j, path);
  return j;
}

std::string timeline_text(const stats::Timeline& timeline, const std::string& generator) {
  json events = json::array();
  // Processes in the order their first track or counter was created.
  std::vector<std::string> processes;
  const auto pid_of = [&](const std::string& process) {
    const auto it = std::find(processes.begin(), processes.end(), process);
    if (it != processes.end()) return static_cast<int>(it - processes.begin()) + 1;
    processes.push_back(process);
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", processes.size()},
                      {"args", {{"name", process}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", processes.size()},
                      {"args", {{"sort_index", processes.size()}}}});
    return static_cast<int>(processes.size());
  };
  std::vector<std::pair<int, int>> ids;  // per track: pid, tid
  std::vector<int> threads_in;           // per process: threads so far
  for (const auto& t : timeline.tracks()) {
    const int pid = pid_of(t.process);
    if (threads_in.size() < processes.size()) threads_in.resize(processes.size(), 0);
    const int tid = ++threads_in[pid - 1];
    ids.emplace_back(pid, tid);
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"name", t.thread}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
  }
  for (const auto& s : timeline.slices()) {
    json e = {{"name", s.name},
              {"cat", std::string(stats::detail_name(s.level))},
              {"ph", "X"},
              {"ts", s.start},
              {"dur", s.end - s.start},
              {"pid", ids[s.track].first},
              {"tid", ids[s.track].second}};
    json args = json::object();
    if (s.bytes > 0) args["bytes"] = s.bytes;
    if (s.parts > 1) args["bursts"] = s.parts;
    if (!args.empty()) e["args"] = std::move(args);
    events.push_back(std::move(e));
  }
  for (const auto& c : timeline.samples()) {
    const auto& series = timeline.series()[c.series];
    events.push_back({{"name", series.name},
                      {"ph", "C"},
                      {"ts", c.cycle},
                      {"pid", pid_of(series.process)},
                      {"args", {{"value", c.value}}}});
  }
  // DRAM bandwidth: bytes per cycle in windows of about 1/2000 of the run (at least 16 cycles),
  // each transfer's bytes spread evenly over its cycles.
  std::uint64_t end = 0;
  for (const auto& t : timeline.transfers()) end = std::max(end, t.end);
  if (end > 0) {
    const std::uint64_t window = std::max<std::uint64_t>(16, (end + 1999) / 2000);
    std::vector<double> bytes((end + window - 1) / window + 1, 0.0);
    for (const auto& t : timeline.transfers()) {
      const double per_cycle = static_cast<double>(t.bytes) /
                               static_cast<double>(std::max<std::uint64_t>(1, t.end - t.start));
      for (std::uint64_t w = t.start / window; w * window < t.end; ++w) {
        const std::uint64_t from = std::max(t.start, w * window);
        const std::uint64_t to = std::min(t.end, (w + 1) * window);
        bytes[w] += per_cycle * static_cast<double>(to - from);
      }
    }
    const int pid = pid_of("DRAM");
    for (std::size_t w = 0; w < bytes.size(); ++w) {
      events.push_back({{"name", "DRAM bandwidth (B/cycle)"},
                        {"ph", "C"},
                        {"ts", w * window},
                        {"pid", pid},
                        {"args", {{"value", bytes[w] / static_cast<double>(window)}}}});
    }
  }
  json doc = {{"traceEvents", std::move(events)},
              {"otherData",
               {{"generator", generator},
                {"detail", std::string(stats::detail_name(timeline.detail()))},
                {"time_unit", "1 DLA cycle = 1 us in this file"}}}};
  return doc.dump() + '\n';
}

void write_timeline(const stats::Timeline& timeline, const std::string& generator,
                    const std::string& path) {
  models::write_file_atomically(path, timeline_text(timeline, generator));
}

std::string report_text(const json& report) {
  return report.dump(2) + '\n';
}

void write(const json& report, const std::string& path) {
  models::write_file_atomically(path, report_text(report));
}

namespace {

void diff_row(const std::string& label, double a, double b, bool fraction) {
  if (fraction) {
    fmt::print("  {:<34} {:>12} {:>12} {:>+12.1f}pt\n", label, percent(a), percent(b),
               100.0 * (b - a));
    return;
  }
  const std::string pct = a != 0 ? fmt::format("{:+.1f}%", 100.0 * (b - a) / a) : "-";
  fmt::print("  {:<34} {:>12.0f} {:>12.0f} {:>+12.0f} {:>8}\n", label, a, b, b - a, pct);
}

double num(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : 0.0;
}

}  // namespace

void print_diff(const json& a, const std::string& name_a, const json& b,
                const std::string& name_b) {
  fmt::print("A: {} ({}, {})\nB: {} ({}, {})\n", name_a,
             a.at("config").at("name").get<std::string>(), a.at("trace").get<std::string>(), name_b,
             b.at("config").at("name").get<std::string>(), b.at("trace").get<std::string>());
  fmt::print("  {:<34} {:>12} {:>12} {:>12} {:>8}\n", "", "A", "B", "delta", "%");
  diff_row("trace cycles", num(a.at("result"), "trace_cycles"), num(b.at("result"), "trace_cycles"),
           false);
  diff_row("compute cycles", num(a.at("result"), "compute_cycles"),
           num(b.at("result"), "compute_cycles"), false);
  diff_row("DRAM bytes read", num(a.at("dram"), "bytes_read"), num(b.at("dram"), "bytes_read"),
           false);
  diff_row("DRAM bytes written", num(a.at("dram"), "bytes_written"),
           num(b.at("dram"), "bytes_written"), false);
  diff_row("DRAM bus busy cycles", num(a.at("dram"), "busy_cycles"),
           num(b.at("dram"), "busy_cycles"), false);
  const json& la = a.at("layers");
  const json& lb = b.at("layers");
  const std::size_t n = std::min(la.size(), lb.size());
  for (std::size_t i = 0; i < n; ++i) {
    const json& x = la[i];
    const json& y = lb[i];
    const auto ex = x.at("engine").get<std::string>();
    const auto ey = y.at("engine").get<std::string>();
    if (ex != ey) {
      fmt::print("layer {}: {} in A, {} in B: the traces differ; stopping here\n", i, ex, ey);
      return;
    }
    fmt::print("layer {}: {} group {}\n", i, ex, x.at("group").get<unsigned>());
    diff_row("cycles", num(x, "cycles"), num(y, "cycles"), false);
    diff_row("bytes read", num(x, "bytes_read"), num(y, "bytes_read"), false);
    diff_row("bytes written", num(x, "bytes_written"), num(y, "bytes_written"), false);
    diff_row("DRAM bandwidth utilization", num(x.at("bandwidth"), "utilization"),
             num(y.at("bandwidth"), "utilization"), true);
    if (x.contains("mac_utilization") && y.contains("mac_utilization")) {
      diff_row("MAC utilization", num(x.at("mac_utilization"), "utilization"),
               num(y.at("mac_utilization"), "utilization"), true);
    }
    for (const json& ux : x.at("units")) {
      const auto name = ux.at("name").get<std::string>();
      for (const json& uy : y.at("units")) {
        if (uy.at("name").get<std::string>() != name) continue;
        diff_row(name + " busy cycles", num(ux, "busy_cycles"), num(uy, "busy_cycles"), false);
        diff_row(name + " stall cycles", num(ux, "stall_cycles"), num(uy, "stall_cycles"), false);
        diff_row(name + " utilization", num(ux, "utilization"), num(uy, "utilization"), true);
      }
    }
    fmt::print("  {:<34} {:>12} {:>12}\n", "roofline bound",
               x.at("roofline").at("bound").get<std::string>(),
               y.at("roofline").at("bound").get<std::string>());
  }
  if (la.size() != lb.size()) {
    fmt::print("layers: {} in A, {} in B\n", la.size(), lb.size());
  }
}

void annotate_onnx_nodes(json& report, const std::vector<std::string>& nodes) {
  if (nodes.empty()) return;
  std::size_t i = 0;
  for (json& l : report.at("layers")) l["onnx_nodes"] = nodes[i++ % nodes.size()];
}

}  // namespace octasim::report
