// `octasim net MODEL.onnx`: compile an ONNX network for the DLA (firmware/net), run a batch of
// images on the device, and report per layer (engine, cycles, MAC utilization, clip,
// saturations) and for the batch (top-1 of the device and of the FP32 reference, agreement,
// bit-exactness against the quantized reference executor, MACs and fps).
// `octasim compile MODEL.onnx --out DIR`: the NVDLA trace of one inference, with goldens.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <fmt/core.h>
#include <systemc>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "models/graph/reference.hpp"
#include "models/io/tensor_file.hpp"
#include "octasim/version.hpp"
#include "sim/app/commands.hpp"
#include "sim/app/net_data.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/ppu/ppu.hpp"
#include "sim/report/report.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"

namespace octasim::app {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;

fn::QuantOptions quant_options(const NetCommonOptions& o) {
  fn::QuantOptions q;
  if (!fn::parse_precision(o.precision, q.precision)) {
    throw UsageError(
        fmt::format("--precision {}: expected int8, int4, int16 or fp16", o.precision));
  }
  if (!fn::parse_calibration(o.calibration, q.calibration)) {
    throw UsageError(
        fmt::format("--calibration {}: expected max, percentile, mse-hist, octav or octav-device",
                    o.calibration));
  }
  if (!fn::parse_weight_quantizer(o.weights, q.weights)) {
    throw UsageError(fmt::format("--weights {}: expected max, mmse or octav", o.weights));
  }
  q.percentile = o.percentile;
  return q;
}

// Loads, plans and quantizes the model as the options say; `images` is the batch the run uses
// (calibration takes its first images unless --calib-data names others).
struct Prepared {
  HwConfig hw;
  fn::CompiledNetwork net;
  Tensor images;  // the run's batch, as the network's input
  std::size_t calibration_images = 0;
};

Prepared prepare(const NetCommonOptions& o, const std::string& input, std::size_t limit) {
  Prepared p;
  try {
    p.hw = load_hw_config(o.config);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  try {
    p.net = fn::prepare_network(firmware::load_onnx(o.model), p.hw);
    p.images = input.empty() ? fn::random_images(p.net.plan, limit == 0 ? 1 : limit)
                             : fn::as_input_batch(p.net.plan, read_data_file(input, limit));
    Tensor calib = p.images;
    if (!o.calib_data.empty()) {
      calib = fn::as_input_batch(p.net.plan, read_data_file(o.calib_data, o.calib_images));
    }
    const auto available = static_cast<std::size_t>(calib.shape[0]);
    p.calibration_images = std::min(available, o.calib_images);
    calib = fn::slice_batch(calib, 0, p.calibration_images);
    fn::CalibrationTable table;
    if (!o.calibration_table.empty()) table = fn::read_calibration_table(o.calibration_table);
    fn::quantize_network(p.net, p.hw, calib, quant_options(o),
                         o.calibration_table.empty() ? nullptr : &table);
    if (!o.save_calibration.empty()) {
      fn::write_calibration_table(o.save_calibration, p.net.program.table);
    }
  } catch (const firmware::OnnxError& e) {
    throw UsageError(e.what());
  } catch (const models::graph::GraphError& e) {
    throw UsageError(fmt::format("{}: {}", o.model, e.what()));
  } catch (const fn::CalibrationError& e) {
    // Reading errors start with the table's path; a missing entry is found while calibrating.
    const std::string what = e.what();
    const std::string& table = o.calibration_table;
    const bool named = table.empty() || what.compare(0, table.size(), table) == 0;
    throw UsageError(named ? what : fmt::format("{}: {}", table, what));
  } catch (const models::TensorFileError& e) {
    throw UsageError(e.what());
  } catch (const firmware::FirmwareError& e) {
    throw UsageError(fmt::format("{}: {}", o.model, e.what()));
  }
  return p;
}

// Per-layer timing of one inference on the cycle-level device.
struct Timing {
  std::vector<std::uint64_t> layer_cycles;
  std::uint64_t cycles = 0;  // the inference: its first register write to its last layer's end
};

// What running images on a device gave: the dequantized outputs (output 0), how many images were
// bit-exact against the quantized reference executor, and per-layer counts.
struct BatchResult {
  std::vector<Tensor> outputs;  // output 0 of each image
  std::size_t bit_exact = 0;
  std::vector<std::uint64_t> saturations;  // per layer, summed over the images
  std::vector<double> clip_sum;            // per OCTAV layer, the device's clips summed
};

// Runs images on one device, one after the other, each checked against the quantized reference
// executor (models/) on a host memory image. Register groups carry over between calls.
class BatchRunner {
 public:
  BatchRunner(const fn::NetProgram& prog, const Tensor& images, trace::Device& device,
              std::uint64_t timeout, fn::Schedule schedule)
      : prog_(prog), images_(images), device_(device), mmio_(device, timeout), schedule_(schedule) {
    r_.saturations.assign(prog.layers.size(), 0);
    r_.clip_sum.assign(prog.layers.size(), 0.0);
    fn::load_constants(prog, device.memory());
    fn::load_constants(prog, golden_);
  }

  // Images [first, first + count).
  void run(std::size_t first, std::size_t count, bool progress) {
    const auto started = std::chrono::steady_clock::now();
    for (std::size_t i = first; i < first + count; ++i) {
      const fn::ImageRun run =
          fn::run_image(prog_, images_, i, device_.memory(), mmio_, groups_, golden_, schedule_);
      for (std::size_t l = 0; l < run.layers.size(); ++l) {
        r_.saturations[l] += run.layers[l].saturations;
        r_.clip_sum[l] += static_cast<double>(run.layers[l].clip);
      }
      r_.bit_exact += run.differing_output == prog_.outputs.size() ? 1 : 0;
      r_.outputs.push_back(fn::read_output(prog_, 0, device_.memory()));
      if (progress && std::chrono::steady_clock::now() - started > std::chrono::seconds(2) &&
          (i % 50 == 0 || i + 1 == first + count)) {
        fmt::print(stderr, "\r\033[Koctasim: image {} of {}", i + 1, first + count);
        std::fflush(stderr);
      }
    }
    if (progress && std::chrono::steady_clock::now() - started > std::chrono::seconds(2)) {
      std::fputs("\r\033[K", stderr);
    }
  }

  [[nodiscard]] BatchResult& result() { return r_; }

 private:
  const fn::NetProgram& prog_;
  const Tensor& images_;
  trace::Device& device_;
  firmware::HostMemory golden_;
  trace::DeviceMmio mmio_;
  fn::Schedule schedule_;
  fn::GroupState groups_;
  BatchResult r_;
};

// For each DLA layer record (in the order the layers started), the index of the program layer
// that left it: each engine takes its layers in program order, while engines overlap.
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

// What the cycle-level run writes besides the summary.
struct CycleOutputs {
  std::string model;
  std::string report;    // --report FILE.json: the first inference's report
  std::string timeline;  // --timeline FILE.json: the first inference's timeline
};

// The cycle-level device: image 0 timed (per layer, and the report and timeline the options ask
// for), then, with `batch`, the other images of the batch on the same device.
Timing run_cycle_level(const fn::NetProgram& prog, const Tensor& images, const HwConfig& hw,
                       std::uint64_t timeout, fn::Schedule schedule, BatchResult* batch,
                       std::size_t count, bool progress, const CycleOutputs& out) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", hw);
  soc::HostAdapter device(soc);
  std::unique_ptr<stats::Timeline> timeline;
  if (!out.timeline.empty()) {
    timeline = std::make_unique<stats::Timeline>(stats::Detail::kLayer);
    soc.set_timeline(timeline.get());
  }
  BatchRunner runner(prog, images, device, timeout, schedule);
  Timing t;
  const std::uint64_t start = device.cycle();
  runner.run(0, 1, false);
  // Each DLA layer record's program layer, and the PPU's kernel records.
  const auto& layers = soc.dla().layers();
  const std::vector<std::size_t> owners = record_owners(prog, layers);
  static const std::vector<ppu::KernelRecord> kNoKernels;
  const auto& kernels = soc.ppu() != nullptr ? soc.ppu()->kernels() : kNoKernels;
  std::vector<std::uint64_t> begin(prog.layers.size(), ~std::uint64_t{0});
  std::vector<std::uint64_t> end(prog.layers.size(), 0);
  for (std::size_t r = 0; r < layers.size(); ++r) {
    if (owners[r] >= prog.layers.size()) continue;
    begin[owners[r]] = std::min(begin[owners[r]], layers[r].start_cycle);
    end[owners[r]] = std::max(end[owners[r]], layers[r].end_cycle);
  }
  std::size_t ppu_kernel = 0;
  std::uint64_t last_end = device.cycle();
  for (std::size_t i = 0; i < prog.layers.size(); ++i) {
    if (std::holds_alternative<fn::PpuSoftmaxLayer>(prog.layers[i].hw) &&
        ppu_kernel < kernels.size()) {
      begin[i] = kernels[ppu_kernel].start_cycle;
      end[i] = kernels[ppu_kernel++].end_cycle;
    }
    t.layer_cycles.push_back(end[i] > begin[i] ? end[i] - begin[i] : 0);
    last_end = std::max(last_end, end[i]);
  }
  // As `octasim run` counts a compiled trace: from the start to the last layer's end.
  t.cycles = last_end - start;
  report::RunInfo info;
  info.generator = fmt::format("octasim {}", kVersion);
  info.trace = out.model;
  info.checks_passed = runner.result().bit_exact;
  info.checks_failed = 1 - runner.result().bit_exact;
  info.trace_cycles = t.cycles;
  info.compute_cycles = t.cycles;
  try {
    if (!out.report.empty()) {
      nlohmann::json j = report::build(soc, info);
      std::vector<std::string> nodes;
      for (const std::size_t owner : owners) {
        nodes.push_back(owner < prog.layers.size() ? prog.layers[owner].nodes : std::string("-"));
      }
      report::annotate_onnx_nodes(j, nodes);
      report::write(j, out.report);
    }
    if (timeline) {
      soc.set_timeline(nullptr);
      report::write_timeline(*timeline, info.generator, out.timeline);
    }
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  if (batch != nullptr) {
    runner.run(1, count - 1, progress);
    *batch = runner.result();
  }
  return t;
}

std::size_t argmax(const Tensor& t) {
  return static_cast<std::size_t>(std::max_element(t.f.begin(), t.f.end()) - t.f.begin());
}

void print_layers(const fn::CompiledNetwork& net, const Timing& timing, const BatchResult& r,
                  std::size_t images, unsigned macs_per_cycle) {
  const fn::NetProgram& p = net.program;
  fmt::print(
      "\nlayers (cycles: one inference on the cycle-level device; saturations: {} "
      "image{}):\n",
      images, images == 1 ? "" : "s");
  fmt::print("  {:>2}  {:<5} {:>9} {:>7}  {:<28} {:>11}  {}\n", "#", "unit", "cycles", "MAC%",
             "clip (bits, sign)", "saturations", "ONNX nodes");
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    const fn::NetLayer& l = p.layers[i];
    const fn::TensorQuant& q = p.table.at(l.output);
    const std::uint64_t cycles = i < timing.layer_cycles.size() ? timing.layer_cycles[i] : 0;
    const std::string util =
        l.macs == 0 || cycles == 0
            ? std::string("-")
            : fmt::format("{:.1f}", 100.0 * static_cast<double>(l.macs) /
                                        (static_cast<double>(cycles) * macs_per_cycle));
    // OCTAV: the mean of the clips the device found (in the convolution's output codes).
    // FP16 and integer networks hold the values themselves: no clip.
    const bool unquantized = q.method == "fp16" || q.method == "integer";
    const std::string clip =
        l.engine == "OCTAV"
            ? fmt::format("mean {:.4g} (codes)", r.clip_sum[i] / static_cast<double>(images))
        : unquantized ? fmt::format("- ({})", q.method)
                      : fmt::format("{:.4g} ({}, {}) {}", q.clip, q.bits, q.is_unsigned ? "u" : "s",
                                    q.method);
    fmt::print("  {:>2}  {:<5} {:>9} {:>7}  {:<28} {:>11}  {}\n", i, l.engine, cycles, util,
               clip.size() > 28 ? clip.substr(0, 28) : clip, r.saturations[i], l.nodes);
  }
}

}  // namespace

void add_net_common_options(CLI::App& cmd, NetCommonOptions& o) {
  cmd.add_option("model", o.model, "the network: an ONNX model file (opsets up to 17)")->required();
  cmd.add_option("--config", o.config,
                 "hardware configuration: a built-in name (nv_small, nv_full, soc_small, ...), a "
                 "JSON file or an NVDLA .spec file");
  cmd.add_option("--precision", o.precision,
                 "int8 or int4 (4-bit codes in the INT8 datapath), or fp16 (configurations "
                 "with FP16: no quantization)");
  cmd.add_option("--calibration", o.calibration,
                 "activation clipping: max, percentile, mse-hist or octav (computed on the "
                 "calibration images), or octav-device (the OCTAV unit clips every convolution "
                 "output in the device, per inference)");
  cmd.add_option("--percentile", o.percentile, "the percentile of --calibration percentile");
  cmd.add_option("--weights", o.weights,
                 "weight quantizer per output channel: max, mmse (the QAT-init patent's "
                 "MMSE scale) or octav (OCTAV's clip per channel)");
  cmd.add_option("--calib-data", o.calib_data,
                 "calibration images (.npy, .pb or IDX[.gz]); default: the run's input");
  cmd.add_option("--calib-images", o.calib_images, "how many calibration images to use")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  cmd.add_option("--calibration-table", o.calibration_table,
                 "take every clip from this JSON table (octasim's or NVDLA's form) instead of "
                 "calibrating");
  cmd.add_option("--save-calibration", o.save_calibration,
                 "write the calibration table used to FILE.json");
}

void add_net_command(CLI::App& app, NetOptions& o) {
  auto* cmd = app.add_subcommand(
      "net",
      "compile an ONNX network for the DLA, run images on the device, report accuracy "
      "and timing");
  add_net_common_options(*cmd, o.common);
  cmd->add_option("--input", o.input,
                  "input images: a batch (first axis) as .npy, ONNX TensorProto .pb or IDX[.gz]; "
                  "default: one deterministic random image in [0, 1)");
  cmd->add_option("--limit", o.limit, "use only the first N images of --input (0: all)");
  cmd->add_option("--output", o.output, "write the device's outputs, dequantized, to FILE.npy");
  cmd->add_option("--labels", o.labels,
                  "labels of the images (.npy, .pb or IDX[.gz]): prints top-1 accuracy");
  cmd->add_flag("--functional", o.functional,
                "run the images on the zero-time functional device (timing still comes from one "
                "inference on the cycle-level device)");
  cmd->add_option("--timeout-cycles", o.timeout_cycles,
                  "fail a layer that takes longer than this many cycles");
  cmd->add_option("--report", o.report,
                  "write the first inference's cycle-level report (layers with their ONNX nodes, "
                  "units, statistics, roofline) as JSON to FILE");
  cmd->add_option("--timeline", o.timeline,
                  "write the first inference's Chrome-trace timeline (a track per unit) to FILE");
  cmd->add_option("--schedule", o.schedule,
                  "overlap (default): a layer is programmed as soon as the layers it depends on "
                  "are done, so independent layers run on different engines at once; serial: "
                  "each layer awaited before the next is programmed")
      ->check(CLI::IsMember({"serial", "overlap"}));
  cmd->add_flag("!--no-progress", o.progress, "no progress line on stderr");
}

int run_net(const NetOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  // Output files are created first: an unwritable path is a usage error before the run.
  create_output_files({o.report, o.timeline, o.output});
  const Prepared p = prepare(o.common, o.input, o.limit);
  const fn::NetProgram& prog = p.net.program;
  const auto count = static_cast<std::size_t>(p.images.shape[0]);
  const std::string calibration =
      o.common.calibration_table.empty()
          ? fmt::format("{} ({} image{})", fn::calibration_name(prog.options.calibration),
                        p.calibration_images, p.calibration_images == 1 ? "" : "s")
          : fmt::format("table {}", o.common.calibration_table);
  if (prog.input.quant.method == "fp16" || prog.input.quant.method == "integer") {
    fmt::print("octasim net: {} on {}: {} layers, {} values (no quantization)\n", o.common.model,
               p.hw.name, prog.layers.size(), prog.input.quant.method);
  } else {
    fmt::print("octasim net: {} on {}: {} layers, {} codes, calibration {}, weights {}\n",
               o.common.model, p.hw.name, prog.layers.size(),
               fn::precision_name(prog.options.precision), calibration,
               fn::weight_quantizer_name(prog.options.weights));
  }

  // Labels are checked before the (possibly long) run.
  const std::vector<std::int64_t> labels =
      o.labels.empty() ? std::vector<std::int64_t>{} : read_labels_file(o.labels, count);
  const CycleOutputs outputs{o.common.model, o.report, o.timeline};
  const fn::Schedule schedule =
      o.schedule == "serial" ? fn::Schedule::kSerial : fn::Schedule::kOverlap;
  BatchResult batch;
  Timing timing;
  try {
    if (o.functional) {
      dla::FunctionalDevice device(p.hw);
      BatchRunner runner(prog, p.images, device, o.timeout_cycles, schedule);
      runner.run(0, count, o.progress);
      batch = runner.result();
      timing = run_cycle_level(prog, p.images, p.hw, o.timeout_cycles, schedule, nullptr, 1, false,
                               outputs);
    } else {
      timing = run_cycle_level(prog, p.images, p.hw, o.timeout_cycles, schedule, &batch, count,
                               o.progress, outputs);
    }
  } catch (const std::runtime_error& e) {
    throw UsageError(fmt::format("{}: {}", o.common.model, e.what()));
  }
  // The MAC array's peak at the network's precision: INT16 and FP16 kernels go atomic-K / 2 at a
  // time (NVDLA's kernel groups), half INT8's rate.
  const unsigned macs_per_cycle = p.hw.dla.mac_atomic_c * p.hw.dla.mac_atomic_k /
                                  (prog.input.precision == firmware::Precision::kInt8 ? 1 : 2);
  print_layers(p.net, timing, batch, count, macs_per_cycle);

  if (!o.output.empty()) {
    std::vector<float> all;
    for (const Tensor& t : batch.outputs) all.insert(all.end(), t.f.begin(), t.f.end());
    std::vector<std::size_t> shape{count};
    for (std::size_t d = 1; d < prog.outputs[0].shape.size(); ++d) {
      shape.push_back(static_cast<std::size_t>(prog.outputs[0].shape[d]));
    }
    try {
      models::write_npy_float32(o.output, shape, all);
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
  }

  fmt::print("\nimages: {} ({} device)\n", count, o.functional ? "functional" : "cycle-level");
  fmt::print("device vs quantized reference: {} of {} images bit-exact\n", batch.bit_exact, count);
  if (!o.labels.empty()) {
    std::size_t device_ok = 0, ref_ok = 0, agree = 0;
    for (std::size_t first = 0; first < count; first += 64) {
      const std::size_t n = std::min<std::size_t>(64, count - first);
      const models::graph::TensorMap ref = models::graph::run_reference(
          p.net.graph, {{p.net.plan.input, fn::slice_batch(p.images, first, n)}});
      const Tensor& out = ref.at(p.net.plan.outputs.at(0));
      const std::size_t per = out.elements() / n;
      for (std::size_t i = 0; i < n; ++i) {
        const auto ref_top = static_cast<std::size_t>(
            std::max_element(out.f.begin() + static_cast<std::ptrdiff_t>(i * per),
                             out.f.begin() + static_cast<std::ptrdiff_t>((i + 1) * per)) -
            (out.f.begin() + static_cast<std::ptrdiff_t>(i * per)));
        const std::size_t dev_top = argmax(batch.outputs[first + i]);
        const auto label = static_cast<std::size_t>(labels[first + i]);
        device_ok += dev_top == label ? 1 : 0;
        ref_ok += ref_top == label ? 1 : 0;
        agree += dev_top == ref_top ? 1 : 0;
      }
    }
    const auto pct = [count](std::size_t n) { return 100.0 * static_cast<double>(n) / count; };
    fmt::print("top-1: device {:.2f}%, FP32 reference {:.2f}%, agreement {:.2f}%\n", pct(device_ok),
               pct(ref_ok), pct(agree));
  }
  fmt::print("macs: {}\n", prog.macs());
  // MAC utilization over the whole inference: the network's MACs against the array's peak
  // (atomic-C x atomic-K per cycle) for every cycle of it.
  const double util = timing.cycles == 0
                          ? 0.0
                          : 100.0 * static_cast<double>(prog.macs()) /
                                (static_cast<double>(timing.cycles) * macs_per_cycle);
  fmt::print("cycles: {} per inference ({:.3f} ms at {} MHz), MAC utilization {:.1f}%\n",
             timing.cycles, static_cast<double>(timing.cycles) / (p.hw.clock_mhz * 1e3),
             p.hw.clock_mhz, util);
  const double fps =
      timing.cycles == 0 ? 0.0 : p.hw.clock_mhz * 1e6 / static_cast<double>(timing.cycles);
  fmt::print("fps: {:.1f} (at {} MHz)\n", fps, p.hw.clock_mhz);
  const double host =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print("host time: {:.1f} s\n", host);
  return batch.bit_exact == count ? 0 : 1;
}

void add_compile_command(CLI::App& app, CompileOptions& o) {
  auto* cmd =
      app.add_subcommand("compile",
                         "compile an ONNX network into an NVDLA trace (net.cfg) with goldens and a "
                         "layer map, for octasim run");
  add_net_common_options(*cmd, o.common);
  cmd->add_option("--out", o.out, "the directory to write net.cfg and its files into")->required();
  cmd->add_option("--input", o.input,
                  "the image the trace runs (and the calibration images unless --calib-data): "
                  ".npy, .pb or IDX[.gz]; default: a deterministic random image");
  cmd->add_option("--image", o.image, "which image of --input the trace runs");
}

int run_compile(const CompileOptions& o) {
  const Prepared p = prepare(o.common, o.input, 0);
  if (o.image >= static_cast<std::size_t>(p.images.shape[0])) {
    throw UsageError(
        fmt::format("--image {}: the input holds {} images", o.image, p.images.shape[0]));
  }
  fn::NetTraceFiles files;
  try {
    files = fn::write_network_trace(p.net, p.images, o.image, o.out);
  } catch (const firmware::FirmwareError& e) {
    throw UsageError(e.what());
  }
  const fn::NetProgram& prog = p.net.program;
  fmt::print("octasim compile: {} on {}: {} layers, {} MACs per inference\n", o.common.model,
             p.hw.name, prog.layers.size(), prog.macs());
  for (std::size_t i = 0; i < prog.layers.size(); ++i) {
    fmt::print("  {:>2}  {:<5} {}\n", i, prog.layers[i].engine, prog.layers[i].nodes);
  }
  fmt::print("trace: {}\nlayer map: {}\ncalibration: {}\n", files.trace, files.layer_map,
             files.calibration);
  fmt::print("play it with: octasim run {} --config {}\n", files.trace, o.common.config);
  return 0;
}

}  // namespace octasim::app
