// `octasim net MODEL.onnx`: compile an ONNX network for the DLA (firmware/net), run a batch of
// images on the device, and report per layer (engine, cycles, MAC utilization, clip,
// saturations) and for the batch (top-1 of the device and of the FP32 reference, agreement,
// bit-exactness against the quantized reference executor, MACs and fps).
// `octasim compile MODEL.onnx --out DIR`: the NVDLA trace of one inference, with goldens.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>
#include <systemc>

#include <CLI/CLI.hpp>
#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/onnx/onnx_import.hpp"
#include "models/graph/reference.hpp"
#include "models/io/tensor_file.hpp"
#include "octasim/version.hpp"
#include "sim/app/commands.hpp"
#include "sim/app/net_batch.hpp"
#include "sim/app/net_data.hpp"
#include "sim/app/net_expect.hpp"
#include "sim/app/net_run.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/stop_request.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/ppu/ppu.hpp"
#include "sim/report/report.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/stoppable_device.hpp"

namespace octasim::app {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;

fn::QuantOptions quant_options(const NetCommonOptions& o) {
  fn::QuantOptions q;
  if (!fn::parse_precision(o.precision, q.precision)) {
    throw UsageError(
        fmt::format("--precision {}: expected int8, int4, int16, fp16 or mixed", o.precision));
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
  if (!o.fold) q.fold = fn::FoldMode::kOff;
  if (!fn::parse_winograd_mode(o.no_winograd ? std::string("off") : o.winograd, q.winograd)) {
    throw UsageError(fmt::format("--winograd {}: expected auto, on or off", o.winograd));
  }
  q.winograd_budget = o.winograd_budget;
  q.fallback = o.fallback == "none" ? fn::Fallback::kNone : fn::Fallback::kPpu;
  q.conv_groups = !o.dense_groups;
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

Prepared prepare(const NetCommonOptions& o, const std::string& input, std::size_t limit,
                 unsigned batch = 1) {
  Prepared p;
  try {
    p.hw = load_hw_config(o.config);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  try {
    p.net = fn::prepare_network(firmware::load_onnx(o.model), p.hw,
                                o.fallback == "none" ? fn::Fallback::kNone : fn::Fallback::kPpu);
    p.images = input.empty() ? fn::random_images(p.net.plan, limit == 0 ? batch : limit)
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
    fn::QuantOptions q = quant_options(o);
    q.fc_batch = batch;
    fn::quantize_network(p.net, p.hw, calib, q, o.calibration_table.empty() ? nullptr : &table,
                         fn::PlacementOptions{!o.no_cvsram});
    if (!o.save_calibration.empty()) {
      fn::CalibrationTable saved = p.net.program.table;
      // Mixed: the FP16 tensors have no clip; the table holds the INT8 operands' clips.
      for (auto it = saved.begin(); it != saved.end();) {
        it = q.precision == fn::NetPrecision::kMixed && it->second.method == "fp16"
                 ? saved.erase(it)
                 : std::next(it);
      }
      fn::write_calibration_table(o.save_calibration, saved);
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
  fmt::print("  {:>2}  {:<5} {:>9} {:>7}  {:<16} {:<28} {:>11}  {}\n", "#", "unit", "cycles",
             "MAC%", "bound", "clip (bits, sign)", "saturations", "ONNX nodes");
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    const fn::NetLayer& l = p.layers[i];
    const fn::TensorQuant& q = p.table.at(l.output);
    const LayerTime t = i < timing.layers.size() ? timing.layers[i] : LayerTime{};
    const std::uint64_t cycles = t.cycles;
    const std::string bound =
        t.bound.name.empty() ? "-" : fmt::format("{} {:.0f}%", t.bound.name, 100.0 * t.bound.share);
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
    const firmware::ConvLayer* conv = fn::layer_conv(l);
    std::string mode = conv != nullptr && conv->winograd ? " [Winograd]" : "";
    // --winograd auto: the measured errors behind the choice (firmware/net/winograd.hpp).
    if (conv != nullptr && l.winograd_measure) {
      mode = fmt::format(
          " [{}: error Winograd {:.3g}%, direct {:.3g}%]", conv->winograd ? "Winograd" : "direct",
          100.0 * l.winograd_measure->winograd_error, 100.0 * l.winograd_measure->direct_error);
    }
    fmt::print("  {:>2}  {:<5} {:>9} {:>7}  {:<16} {:<28} {:>11}  {}{}\n", i, l.engine, cycles,
               util, bound, clip.size() > 28 ? clip.substr(0, 28) : clip, r.saturations[i], l.nodes,
               mode);
  }
  // --fallback ppu: what the DLA could not run, and why.
  const fn::FallbackSummary f = fn::fallback_summary(p);
  if (!f.nodes.empty()) {
    std::string ops;
    for (const auto& [op, count] : f.ops)
      ops += fmt::format("{}{} x{}", ops.empty() ? "" : ", ", op, count);
    fmt::print(
        "fallback: {} layers on the DLA, {} on the PPU; {} nodes fell back to the PPU ({})\n",
        f.dla_layers, f.ppu_layers, f.nodes.size(), ops);
    for (const auto& [node, why] : f.nodes) fmt::print("  {}: {}\n", node, why);
  }
}

// Runs `args` (argv[0] ignored) as a child octasim and returns the JSON report it wrote to
// `report` (then removed); the child's error lines become a UsageError.
nlohmann::json run_child_report(const std::vector<std::string>& args, const std::string& report) {
  const std::string err = report + ".err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (spawned == 0) waitpid(pid, &status, 0);
  std::ifstream err_in(err);
  const std::string child_err((std::istreambuf_iterator<char>(err_in)),
                              std::istreambuf_iterator<char>());
  std::filesystem::remove(err);
  // Ctrl-C reaches both processes: the child stops at a safe point, and so does this one.
  if (spawned == 0 && WIFEXITED(status) &&
      (WEXITSTATUS(status) == 128 + SIGINT || WEXITSTATUS(status) == 128 + SIGTERM)) {
    std::filesystem::remove(report);
    const auto at = child_err.rfind(" at cycle ");
    throw Interrupted{
        WEXITSTATUS(status) - 128,
        at == std::string::npos ? 0 : std::strtoull(child_err.c_str() + at + 10, nullptr, 10)};
  }
  if (spawned != 0 || !WIFEXITED(status) || WEXITSTATUS(status) > 1) {
    std::filesystem::remove(report);
    throw UsageError(fmt::format("--compare: the run on the second configuration failed: {}",
                                 child_err.empty() ? "no message" : child_err));
  }
  std::ifstream in(report);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("--compare: {}: {}", report, e.what()));
  }
  std::filesystem::remove(report);
  return j;
}

// --compare B: the same command for configuration B in a child octasim (SystemC elaborates one
// design per process), timing one inference and writing its report; both configurations'
// per-layer cycles side by side. Layers are matched by their ONNX nodes (B may split or fuse
// differently; B's layers with the same nodes are summed).
void compare_configurations(const NetOptions& o, const Prepared& a, const Timing& ta) {
  const std::string report =
      (std::filesystem::temp_directory_path() / fmt::format("octasim-compare-{}.json", ::getpid()))
          .string();
  std::vector<std::string> args = {"octasim",
                                   "net",
                                   o.common.model,
                                   "--config",
                                   o.compare,
                                   "--timing-only",
                                   "--no-progress",
                                   "--report",
                                   report,
                                   "--precision",
                                   o.common.precision,
                                   "--calibration",
                                   o.common.calibration,
                                   "--weights",
                                   o.common.weights,
                                   "--percentile",
                                   fmt::format("{}", o.common.percentile),
                                   "--calib-images",
                                   std::to_string(o.common.calib_images),
                                   "--schedule",
                                   o.schedule,
                                   "--sync",
                                   o.sync,
                                   "--timeout-cycles",
                                   std::to_string(o.timeout_cycles)};
  const auto add = [&args](const char* flag, const std::string& v) {
    if (!v.empty()) args.insert(args.end(), {flag, v});
  };
  add("--input", o.input);
  if (o.limit != 0) add("--limit", std::to_string(o.limit));
  add("--calib-data", o.common.calib_data);
  add("--calibration-table", o.common.calibration_table);
  if (!o.common.fold) args.emplace_back("--no-fold");
  args.insert(args.end(),
              {"--winograd", o.common.no_winograd ? std::string("off") : o.common.winograd});
  args.insert(args.end(), {"--winograd-budget", fmt::format("{}", o.common.winograd_budget)});
  if (o.common.dense_groups) args.emplace_back("--dense-groups");
  args.insert(args.end(), {"--fallback", o.common.fallback});
  if (o.common.no_cvsram) args.emplace_back("--no-cvsram");
  const nlohmann::json rb = run_child_report(args, report);
  const nlohmann::json& lb = rb.at("network").at("layers");
  const fn::NetProgram& pa = a.net.program;
  const std::string name_b = rb.at("config").at("name").get<std::string>();
  const auto cycles_b = rb.at("network").at("cycles").get<std::uint64_t>();
  const double mhz_b = rb.at("network").at("clock_mhz").get<double>();
  fmt::print("\ncompare: A = {}, B = {} (one inference each, cycles per layer)\n", a.hw.name,
             name_b);
  fmt::print("  {:>10} {:>10} {:>8}  {:<12} {:<12} {}\n", "A", "B", "B/A", "bound A", "bound B",
             "ONNX nodes");
  std::map<std::string, std::pair<std::uint64_t, std::string>> in_b;
  for (const nlohmann::json& l : lb) {
    auto& e = in_b[l.at("onnx_nodes").get<std::string>()];
    e.first += l.at("cycles").get<std::uint64_t>();
    if (e.second.empty()) e.second = l.at("bound").get<std::string>();
  }
  const auto ratio = [](std::uint64_t x, std::uint64_t y) {
    return y == 0 ? std::string("-")
                  : fmt::format("{:.2f}", static_cast<double>(x) / static_cast<double>(y));
  };
  std::set<std::string> shown;
  for (std::size_t i = 0; i < pa.layers.size(); ++i) {
    const std::string& nodes = pa.layers[i].nodes;
    if (!shown.insert(nodes).second) continue;
    std::uint64_t ca = 0;
    for (std::size_t j = i; j < pa.layers.size(); ++j) {
      if (pa.layers[j].nodes == nodes) ca += ta.layers[j].cycles;
    }
    const auto it = in_b.find(nodes);
    fmt::print("  {:>10} {:>10} {:>8}  {:<12} {:<12} {}\n", ca,
               it == in_b.end() ? "-" : std::to_string(it->second.first),
               it == in_b.end() ? "-" : ratio(it->second.first, ca), ta.layers[i].bound.name,
               it == in_b.end() ? "-" : it->second.second, nodes);
  }
  fmt::print("  {:>10} {:>10} {:>8}  the inference\n", ta.cycles, cycles_b,
             ratio(cycles_b, ta.cycles));
  fmt::print("fps: A {:.1f} at {} MHz, B {:.1f} at {} MHz\n",
             ta.cycles == 0 ? 0.0 : a.hw.clock_mhz * 1e6 / static_cast<double>(ta.cycles),
             a.hw.clock_mhz, cycles_b == 0 ? 0.0 : mhz_b * 1e6 / static_cast<double>(cycles_b),
             mhz_b);
}

}  // namespace

void add_net_common_options(CLI::App& cmd, NetCommonOptions& o) {
  cmd.add_option("model", o.model, "the network: an ONNX model file (opsets up to 17)")->required();
  cmd.add_option("--config", o.config,
                 "hardware configuration: a built-in name (nv_small, nv_full, soc_small, ...), a "
                 "JSON file or an NVDLA .spec file");
  cmd.add_option("--precision", o.precision,
                 "int8 or int4 (4-bit codes in the INT8 datapath), fp16 (configurations "
                 "with FP16: no quantization), or mixed (fp16, but the MatMul and Gemm nodes on "
                 "the PPU multiply INT8 codes: activation clips by --calibration, weights per "
                 "output channel by --weights)");
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
  cmd.add_flag("!--no-fold", o.fold,
               "the first convolution reads the graph input as it is, its few channels not "
               "folded with the kernel's columns (or rows) by the host");
  cmd.add_option("--winograd", o.winograd,
                 "3x3 convolutions in the convolution core's Winograd mode where the configuration "
                 "has it and the layer allows it (stride 1, output a multiple of 4) and it is "
                 "faster: auto (default) only where the error measured on the calibration images "
                 "is within --winograd-budget of direct mode's; on: wherever it is faster; off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd.add_option("--winograd-budget", o.winograd_budget,
                 "--winograd auto: Winograd's relative output error may exceed direct mode's by "
                 "this fraction (default 0.1)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_flag("--no-winograd", o.no_winograd, "the same as --winograd off");
  cmd.add_flag("--dense-groups", o.dense_groups,
               "a grouped convolution as one dense CONV layer, its weights zero between groups "
               "(by default each group is a layer of its own where its channels start on an atom, "
               "groups smaller than an atom in blocks of whole atoms where that is faster)");
  cmd.add_option(
         "--fallback", o.fallback,
         "nodes the DLA cannot run: ppu (default) runs each on the PPU's kNode kernel where "
         "the configuration has a PPU (soc_*), none refuses them")
      ->check(CLI::IsMember({"ppu", "none"}));
  cmd.add_flag("--no-cvsram", o.no_cvsram,
               "keep activations and weights in DRAM even when the configuration has a CV-SRAM "
               "(secondary_memif): the what-if without it");
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
  cmd->add_option("--reference-output", o.reference_output,
                  "write the FP32 reference executor's outputs (output 0, as --output) on the same "
                  "images to FILE.npy: an expected output for models with no framework's");
  cmd->add_option("--labels", o.labels,
                  "labels of the images (.npy, .pb or IDX[.gz]): prints top-1 accuracy");
  cmd->add_option("--expect", o.expect,
                  "expected outputs (e.g. the framework's), one file per graph output, first axis "
                  "the images: prints each output's relative L2 error and largest error");
  cmd->add_option("--max-rel-error", o.max_rel_error,
                  "with --expect: exit 1 when an output's relative L2 error exceeds this")
      ->check(CLI::NonNegativeNumber);
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
  cmd->add_option("--compare", o.compare,
                  "also compile the network for this configuration, time one inference on it "
                  "and print both configurations' per-layer cycles side by side");
  cmd->add_flag("--timing-only", o.timing_only,
                "time image 0 (with --batch N, the first batch) on the cycle-level device and "
                "stop (the other images only calibrate); what --compare runs for its second "
                "configuration");
  cmd->add_option("--schedule", o.schedule,
                  "overlap (default): a layer is programmed as soon as the layers it depends on "
                  "are done, so independent layers run on different engines at once; serial: "
                  "each layer awaited before the next is programmed")
      ->check(CLI::IsMember({"serial", "overlap"}));
  cmd->add_option("--sync", o.sync,
                  "who orders the PPU's layers after the layers they depend on (--schedule "
                  "overlap): host (default): the host awaits the DLA's interrupts and then rings "
                  "the PPU channel; device: the host pushes a PPU layer at once behind SYNCPT_WAIT "
                  "commands on the DLA's (and the other channels') completion counts, and the "
                  "PPU's front end starts it when they are reached")
      ->check(CLI::IsMember({"host", "device"}));
  cmd->add_flag("!--no-progress", o.progress, "no progress line on stderr");
  cmd->add_option("--batch", o.batch,
                  "images per run: the layers before the first fully-connected layer run image "
                  "after image, the fully-connected layers in multi-batch mode over the N images "
                  "(weights fetched once per batch; configurations with BATCH, such as nv_full); "
                  "the images must be a whole number of batches; cycles per frame = the batch's "
                  "cycles / N")
      ->check(CLI::Range(1U, 4096U));
}

int run_net(const NetOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  // Output files are checked first: an unwritable path is a usage error before the run.
  check_output_files({o.report, o.timeline, o.output, o.reference_output});
  if (o.batch > 1 && !o.compare.empty()) {
    throw UsageError("--compare with --batch is not supported (compare one image per run)");
  }
  const Prepared p = prepare(o.common, o.input, o.limit, o.batch);
  const fn::NetProgram& prog = p.net.program;
  // --timing-only: the images calibrate; only image 0 (the first batch) runs.
  const std::size_t count =
      o.timing_only ? prog.images : static_cast<std::size_t>(p.images.shape[0]);
  if (count % prog.images != 0) {
    throw UsageError(
        fmt::format("--batch {}: {} images are not a whole number of batches", prog.images, count));
  }
  const std::string calibration =
      o.common.calibration_table.empty()
          ? fmt::format("{} ({} image{})", fn::calibration_name(prog.options.calibration),
                        p.calibration_images, p.calibration_images == 1 ? "" : "s")
          : fmt::format("table {}", o.common.calibration_table);
  if (prog.options.precision == fn::NetPrecision::kMixed && prog.input.quant.method == "fp16") {
    // --precision mixed: FP16 values, the PPU's matrix products on INT8 codes.
    std::size_t int8 = 0;
    for (const fn::NetLayer& l : prog.layers) {
      const auto* node = std::get_if<fn::PpuNodeLayer>(&l.hw);
      int8 += node != nullptr && node->image.int8_matmul ? 1 : 0;
    }
    fmt::print(
        "octasim net: {} on {}: {} layers, mixed: fp16 values, {} INT8 matrix products on the "
        "PPU, calibration {}, weights {}\n",
        o.common.model, p.hw.name, prog.layers.size(), int8, calibration,
        fn::weight_quantizer_name(prog.options.weights));
  } else if (prog.input.quant.method == "fp16" || prog.input.quant.method == "integer") {
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
  const CycleOutputs outputs{o.common.model, o.report, o.timeline, !o.expect.empty()};
  if (o.sync == "device" && o.schedule == "serial") {
    throw UsageError("--sync device orders overlapped layers: it needs --schedule overlap");
  }
  const fn::Schedule schedule = o.schedule == "serial" ? fn::Schedule::kSerial
                                : o.sync == "device"   ? fn::Schedule::kDeviceSync
                                                       : fn::Schedule::kOverlap;
  BatchResult batch;
  Timing timing;
  const StopSignals stop_signals;  // SIGINT/SIGTERM end the run at a safe point (exit 130/143)
  try {
    if (o.functional) {
      dla::FunctionalDevice functional(p.hw);
      trace::StoppableDevice device(functional, 0);
      // The functional device has no timing to order by: device sync is the cycle-level run's.
      BatchRunner runner(prog, p.images, device, o.timeout_cycles,
                         schedule == fn::Schedule::kDeviceSync ? fn::Schedule::kOverlap : schedule);
      runner.keep_all_outputs = !o.expect.empty();
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
  if (prog.images > 1) {
    print_batch_layers(prog, timing, batch, macs_per_cycle);
  } else {
    print_layers(p.net, timing, batch, count, macs_per_cycle);
  }

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

  if (!o.reference_output.empty()) {
    // The graph as the compiler imported it (models/graph), in FP32, image by image in chunks.
    std::vector<float> all;
    std::vector<std::size_t> shape{count};
    for (std::size_t first = 0; first < count; first += 64) {
      const std::size_t n = std::min<std::size_t>(64, count - first);
      const models::graph::TensorMap ref = models::graph::run_reference_images(
          p.net.graph, p.net.plan.input, fn::slice_batch(p.images, first, n));
      const Tensor& out = ref.at(p.net.plan.outputs.at(0));
      all.insert(all.end(), out.f.begin(), out.f.end());
      if (first == 0) {
        for (std::size_t d = 1; d < out.shape.size(); ++d) {
          shape.push_back(static_cast<std::size_t>(out.shape[d]));
        }
      }
    }
    try {
      models::write_npy_float32(o.reference_output, shape, all);
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
  }

  fmt::print("\nimages: {} ({} device)\n", count, o.functional ? "functional" : "cycle-level");
  fmt::print("device vs quantized reference: {} of {} images bit-exact\n", batch.bit_exact, count);
  bool expected_ok = true;
  if (!o.expect.empty()) {
    for (const ExpectedComparison& c :
         compare_expected(o.expect, p.net.plan.outputs, batch.all_outputs, o.max_rel_error)) {
      expected_ok = expected_ok && c.within;
    }
  }
  if (!o.labels.empty()) {
    std::size_t device_ok = 0, ref_ok = 0, agree = 0;
    for (std::size_t first = 0; first < count; first += 64) {
      const std::size_t n = std::min<std::size_t>(64, count - first);
      const models::graph::TensorMap ref = models::graph::run_reference_images(
          p.net.graph, p.net.plan.input, fn::slice_batch(p.images, first, n));
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
  // MAC utilization over the whole inference against the array's peak (atomic-C x atomic-K per
  // cycle): network, the ONNX graph's MACs; HW, the MACs the device performs (grouped
  // convolutions run dense).
  fmt::print("{}\nmacs: {}\n", fn::placement_summary(prog.placement),
             prog.network_macs() / prog.images);  // per image
  if (prog.macs() != prog.network_macs())
    fmt::print("device macs: {}\n", prog.macs() / prog.images);
  const auto utilization = [&](std::uint64_t macs) {
    return timing.cycles == 0 ? 0.0
                              : 100.0 * static_cast<double>(macs) /
                                    (static_cast<double>(timing.cycles) * macs_per_cycle);
  };
  // A batched program: the batch's cycles, per frame those / N.
  const double frame = static_cast<double>(timing.cycles) / prog.images;
  const double ms = frame / (p.hw.clock_mhz * 1e3);
  if (prog.images > 1) {
    fmt::print("cycles: {} per batch of {} images, {:.0f} per frame ({:.3f} ms at {} MHz)\n",
               timing.cycles, prog.images, frame, ms, p.hw.clock_mhz);
  } else {
    fmt::print("cycles: {} per inference ({:.3f} ms at {} MHz)\n", timing.cycles, ms,
               p.hw.clock_mhz);
  }
  fmt::print("MAC utilization: HW {:.1f}%, network {:.1f}%\n", utilization(prog.macs()),
             utilization(prog.network_macs()));
  const double fps = timing.cycles == 0 ? 0.0 : p.hw.clock_mhz * 1e6 / frame;
  fmt::print("fps: {:.1f} (at {} MHz)\n", fps, p.hw.clock_mhz);
  if (!o.compare.empty()) compare_configurations(o, p, timing);
  const double host =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print("host time: {:.1f} s\n", host);
  return batch.bit_exact == count && expected_ok ? 0 : 1;
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
