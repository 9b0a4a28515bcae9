#include "sim/app/net_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <optional>
#include <variant>

#include <fmt/core.h>
#include <systemc>

#include "firmware/net/schedule.hpp"
#include "models/io/atomic_file.hpp"
#include "octasim/version.hpp"
#include "sim/app/commands.hpp"
#include "sim/ppu/ppu.hpp"
#include "sim/report/report.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/stoppable_device.hpp"

namespace {

// report.network.fallback: layers per engine, the fallback nodes by operator and why each fell.
nlohmann::json fallback_json(const octasim::firmware::net::FallbackSummary& s) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& [node, why] : s.nodes) nodes.push_back({{"node", node}, {"reason", why}});
  return {{"dla_layers", s.dla_layers},
          {"ppu_layers", s.ppu_layers},
          {"ops", s.ops},
          {"nodes", std::move(nodes)}};
}

// report.network.engines: the cycles the DLA's layers, the PPU's layers and both at once were
// running (unions of the layers' [start, end) intervals, and their intersection), and those of
// the network's `cycles` in which no layer was (the host reacting and programming).
nlohmann::json engine_overlap(const octasim::firmware::net::NetProgram& prog,
                              const std::vector<octasim::app::LayerTime>& layers,
                              std::uint64_t cycles) {
  namespace fn = octasim::firmware::net;
  using Intervals = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  Intervals dla, ppu;
  for (std::size_t i = 0; i < prog.layers.size() && i < layers.size(); ++i) {
    if (layers[i].cycles == 0) continue;
    (fn::ppu_channel(prog.layers[i].hw) ? ppu : dla).emplace_back(layers[i].start, layers[i].end);
  }
  const auto merge = [](Intervals v) {
    std::sort(v.begin(), v.end());
    Intervals out;
    for (const auto& iv : v) {
      if (!out.empty() && iv.first <= out.back().second) {
        out.back().second = std::max(out.back().second, iv.second);
      } else {
        out.push_back(iv);
      }
    }
    return out;
  };
  const Intervals a = merge(dla), b = merge(ppu);
  const auto total = [](const Intervals& v) {
    std::uint64_t n = 0;
    for (const auto& iv : v) n += iv.second - iv.first;
    return n;
  };
  std::uint64_t both = 0;
  for (std::size_t x = 0, y = 0; x < a.size() && y < b.size();) {
    const std::uint64_t lo = std::max(a[x].first, b[y].first);
    const std::uint64_t hi = std::min(a[x].second, b[y].second);
    if (lo < hi) both += hi - lo;
    (a[x].second < b[y].second ? x : y) += 1;
  }
  const std::uint64_t busy = total(a) + total(b) - both;
  return {{"dla_busy_cycles", total(a)},
          {"ppu_busy_cycles", total(b)},
          {"overlap_cycles", both},
          {"idle_cycles", cycles > busy ? cycles - busy : 0}};
}

}  // namespace

namespace octasim::app {

namespace fn = firmware::net;
using models::graph::Tensor;

BatchRunner::BatchRunner(const fn::NetProgram& prog, const Tensor& images, trace::Device& device,
                         std::uint64_t timeout, fn::Schedule schedule)
    : prog_(prog),
      images_(images),
      memory_(trace::dma_memory(device)),
      mmio_(device, timeout),
      schedule_(schedule) {
  r_.saturations.assign(prog.layers.size(), 0);
  r_.clip_sum.assign(prog.layers.size(), 0.0);
  fn::load_constants(prog, memory_);
  fn::load_constants(prog, golden_);
}

void BatchRunner::run(std::size_t first, std::size_t count, bool progress) {
  const auto started = std::chrono::steady_clock::now();
  const std::size_t step = prog_.images;  // a batched program runs that many images
  for (std::size_t i = first; i < first + count; i += step) {
    const fn::ImageRun run =
        fn::run_image(prog_, images_, i, memory_, mmio_, groups_, golden_, schedule_);
    for (std::size_t l = 0; l < run.layers.size(); ++l) {
      r_.saturations[l] += run.layers[l].saturations;
      r_.clip_sum[l] += static_cast<double>(run.layers[l].clip);
    }
    r_.bit_exact += run.exact_images;
    for (std::size_t b = 0; b < step; ++b) {
      r_.outputs.push_back(fn::read_output(prog_, 0, memory_, b));
      if (!keep_all_outputs) continue;
      std::vector<models::graph::Tensor> all;
      for (std::size_t k = 0; k < prog_.outputs.size(); ++k) {
        all.push_back(fn::read_output(prog_, k, memory_, b));
      }
      r_.all_outputs.push_back(std::move(all));
    }
    if (progress && std::chrono::steady_clock::now() - started > std::chrono::seconds(2) &&
        (i % 50 < step || i + step == first + count)) {
      fmt::print(stderr, "\r\033[Koctasim: image {} of {}", i + 1, first + count);
      std::fflush(stderr);
    }
  }
  if (progress && std::chrono::steady_clock::now() - started > std::chrono::seconds(2)) {
    std::fputs("\r\033[K", stderr);
  }
}

std::vector<std::size_t> record_owners(const fn::NetProgram& prog,
                                       const std::vector<soc::LayerTiming>& records) {
  std::map<std::string, std::deque<std::size_t>> queues;
  for (std::size_t i = 0; i < prog.layers.size(); ++i) {
    for (const std::string& engine : fn::device_records(prog.layers[i])) {
      queues[engine].push_back(i);
    }
  }
  std::vector<std::size_t> owners;
  for (const soc::LayerTiming& r : records) {
    std::deque<std::size_t>& q = queues[r.engine];
    owners.push_back(q.empty() ? prog.layers.size() : q.front());
    if (!q.empty()) q.pop_front();
  }
  return owners;
}

namespace {

// The bound of program layer `i` (LayerBound) from its device records and the bytes it moves.
LayerBound layer_bound(const soc::Soc& soc, const fn::NetProgram& prog, std::size_t i,
                       const std::vector<const soc::LayerTiming*>& records, std::uint64_t cycles) {
  LayerBound b;
  if (cycles == 0) return b;
  const HwConfig& hw = soc.config();
  std::uint64_t compute = 0, refill = 0, delivery = 0;
  for (const soc::LayerTiming* r : records) {
    compute = std::max(compute, soc.dla().layer_counter(*r, "busy_cycles"));
    if (r->engine == "CONV") {
      refill = soc.dla().layer_counter(*r, "read_stall_cycles");
      delivery = soc.dla().layer_counter(*r, "write_stall_cycles");
    }
  }
  const fn::LayerAccess a = fn::layer_access(prog, i);
  std::uint64_t dram = 0, sram_read = 0, sram_written = 0;
  for (const auto* v : {&a.reads, &a.writes, &a.weights}) {
    for (const fn::ByteRange& r : *v) {
      if (r.ram != firmware::Ram::kCv) {
        dram += r.end - r.begin;
      } else {
        (v == &a.writes ? sram_written : sram_read) += r.end - r.begin;
      }
    }
  }
  const double t = static_cast<double>(cycles);
  // The CV-SRAM's time: one shared path, or separate read and write paths in parallel.
  const auto over = [](std::uint64_t bytes, unsigned bw) {
    return bw == 0 ? 0.0 : static_cast<double>(bytes) / bw;
  };
  const double sram = hw.mem.cvsram_split_paths()
                          ? std::max(over(sram_read, hw.cvsram_read_bandwidth()),
                                     over(sram_written, hw.cvsram_write_bandwidth()))
                          : over(sram_read + sram_written, hw.cvsram_read_bandwidth());
  const std::pair<const char*, double> candidates[] = {
      {"compute", static_cast<double>(compute)},
      {"DRAM", static_cast<double>(dram) / hw.dram_bandwidth()},
      {"SRAM", sram},
      {"CBUF refill", static_cast<double>(refill)},
      {"delivery", static_cast<double>(delivery)}};
  for (const auto& [name, value] : candidates) {
    if (value / t > b.share) b = {name, value / t};
  }
  return b;
}

}  // namespace

Timing run_cycle_level(const fn::NetProgram& prog, const Tensor& images, const HwConfig& hw,
                       std::uint64_t timeout, fn::Schedule schedule, BatchResult* batch,
                       std::size_t count, bool progress, const CycleOutputs& out) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", hw);
  soc::HostAdapter host(soc);
  trace::StoppableDevice device(host);  // SIGINT/SIGTERM: Interrupted at a safe point
  std::unique_ptr<stats::Timeline> timeline;
  if (!out.timeline.empty()) {
    timeline = std::make_unique<stats::Timeline>(stats::Detail::kLayer);
    soc.set_timeline(timeline.get());
  }
  BatchRunner runner(prog, images, device, timeout, schedule);
  runner.keep_all_outputs = out.keep_all_outputs;
  Timing t;
  const std::uint64_t start = device.cycle();
  runner.run(0, prog.images, false);  // one image, or one batch of a batched program
  // Each DLA layer record's program layer, and the PPU's kernel records.
  const auto& layers = soc.dla().layers();
  const std::vector<std::size_t> owners = record_owners(prog, layers);
  static const std::vector<ppu::KernelRecord> kNoKernels;
  const auto& kernels = soc.ppu() != nullptr ? soc.ppu()->kernels() : kNoKernels;
  std::vector<std::uint64_t> begin(prog.layers.size(), ~std::uint64_t{0});
  std::vector<std::uint64_t> end(prog.layers.size(), 0);
  std::vector<std::vector<const soc::LayerTiming*>> records(prog.layers.size());
  for (std::size_t r = 0; r < layers.size(); ++r) {
    if (owners[r] >= prog.layers.size()) continue;
    begin[owners[r]] = std::min(begin[owners[r]], layers[r].start_cycle);
    end[owners[r]] = std::max(end[owners[r]], layers[r].end_cycle);
    records[owners[r]].push_back(&layers[r]);
  }
  // Each PPU layer's kernel: the next one its channel launched (channels run concurrently).
  std::map<unsigned, std::deque<const ppu::KernelRecord*>> by_channel;
  for (const ppu::KernelRecord& k : kernels) by_channel[k.channel].push_back(&k);
  std::uint64_t last_end = device.cycle();
  for (std::size_t i = 0; i < prog.layers.size(); ++i) {
    const std::optional<unsigned> channel = fn::ppu_channel(prog.layers[i].hw);
    const ppu::KernelRecord* kernel = nullptr;
    if (channel && !by_channel[*channel].empty()) {
      kernel = by_channel[*channel].front();
      by_channel[*channel].pop_front();
      begin[i] = kernel->start_cycle;
      end[i] = kernel->end_cycle;
    }
    LayerTime lt;
    lt.cycles = end[i] > begin[i] ? end[i] - begin[i] : 0;
    if (lt.cycles > 0) {
      lt.start = begin[i] - std::min(begin[i], start);
      lt.end = end[i] - std::min(end[i], start);
    }
    // A PPU kernel's loads are served by the L2 as much as by DRAM: its own roofline says what
    // bounds it (KernelRecord::bound).
    lt.bound = kernel != nullptr ? LayerBound{"PPU " + kernel->bound, 1.0}
                                 : layer_bound(soc, prog, i, records[i], lt.cycles);
    t.layers.push_back(lt);
    last_end = std::max(last_end, end[i]);
  }
  // As `octasim run` counts a compiled trace: from the start to the last layer's end.
  t.cycles = last_end - start;
  report::RunInfo info;
  info.generator = fmt::format("octasim {}", kVersion);
  info.trace = out.model;
  info.checks_passed = runner.result().bit_exact;
  info.checks_failed = prog.images - runner.result().bit_exact;
  info.trace_cycles = t.cycles;
  info.compute_cycles = t.cycles;
  t.report = report::build(soc, info);
  std::vector<std::string> nodes;
  for (const std::size_t owner : owners) {
    nodes.push_back(owner < prog.layers.size() ? prog.layers[owner].nodes : std::string("-"));
  }
  report::annotate_onnx_nodes(t.report, nodes);
  // The network's layers (a layer may leave several device records): what --compare reads.
  nlohmann::json net_layers = nlohmann::json::array();
  for (std::size_t i = 0; i < prog.layers.size(); ++i) {
    net_layers.push_back({{"layer", i},
                          {"engine", prog.layers[i].engine},
                          {"onnx_nodes", prog.layers[i].nodes},
                          {"cycles", t.layers[i].cycles},
                          {"bound", t.layers[i].bound.name},
                          {"bound_share", t.layers[i].bound.share},
                          {"start_cycle", t.layers[i].start},
                          {"end_cycle", t.layers[i].end}});
    if (!prog.layers[i].fallback.empty()) net_layers.back()["fallback"] = prog.layers[i].fallback;
  }
  t.report["network"] = {{"layers", std::move(net_layers)},
                         {"cycles", t.cycles},
                         {"images", prog.images},
                         {"clock_mhz", hw.clock_mhz},
                         {"macs", prog.network_macs()},
                         {"device_macs", prog.macs()},
                         {"fallback", fallback_json(fn::fallback_summary(prog))},
                         {"engines", engine_overlap(prog, t.layers, t.cycles)}};
  // The report and timeline are written under temporary names now and renamed into place once
  // every image has run: an interrupted or failed run leaves neither.
  models::PendingFileSet files;
  try {
    if (!out.report.empty()) files.add(out.report, report::report_text(t.report));
    if (timeline) {
      soc.set_timeline(nullptr);
      files.add(out.timeline, report::timeline_text(*timeline, info.generator));
    }
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  if (batch != nullptr) {
    runner.run(prog.images, count - prog.images, progress);
    *batch = runner.result();
  }
  throw_if_stop_requested(device.cycle());
  try {
    files.commit();
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  return t;
}

}  // namespace octasim::app
