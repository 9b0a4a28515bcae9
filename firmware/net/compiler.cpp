#include "firmware/net/compiler.hpp"

#include <filesystem>
#include <map>
#include <random>
#include <system_error>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "firmware/net/rewrite.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/net/winograd.hpp"
#include "models/graph/passes.hpp"
#include "models/numerics/bit_cast.hpp"
#include "models/numerics/crc32.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::firmware::net {

using models::graph::GraphError;
using models::graph::Tensor;

CompiledNetwork prepare_network(models::graph::Graph g, const HwConfig& hw, Fallback fallback) {
  CompiledNetwork net;
  (void)models::graph::simplify_graph(g);
  (void)rewrite_for_dla(g);
  net.graph = std::move(g);
  net.plan = plan_network(net.graph, hw.name, hw.ppu.gpcs > 0, fallback);
  return net;
}

namespace {

void quantize_plan(CompiledNetwork& net, const HwConfig& hw, const Tensor& calibration_images,
                   const QuantOptions& options, const CalibrationTable* table) {
  // FP16 and integer networks hold the values themselves: nothing to calibrate; a mixed one
  // only its PPU matrix products' activation operands.
  const bool integer = integer_network(net.graph);
  const bool values = fp16_values(options.precision) || integer;
  const bool mixed = options.precision == NetPrecision::kMixed && !integer;
  // What the DLA's planner took but cannot run quantized goes to the PPU (one node a layer).
  if (!values && options.fallback == Fallback::kPpu && hw.ppu.gpcs > 0) {
    for (PlannedLayer& l : net.plan.layers) {
      if (l.nodes.size() != 1) continue;
      const std::string why = quantized_refusal(net.graph, l, options);
      if (why.empty()) continue;
      l.ppu.reads = layer_reads(net.graph, l);
      l.ppu.reason = why;
      l.kind = LayerKind::kPpu;
    }
  }
  const Tensor batch = values && !mixed ? Tensor{} : as_input_batch(net.plan, calibration_images);
  const CalibrationTable t =
      mixed    ? calibrate_matmul_operands(net.graph, net.plan, batch, options, table)
      : values ? CalibrationTable{}
               : calibrate(net.graph, net.plan, batch, options, table);
  QuantOptions o = options;
  if (!values && o.winograd == WinogradMode::kAuto) {
    o.winograd_measured = measure_winograd(net.graph, net.plan, t, batch, o, hw);
  }
  net.program = build_program(net.graph, net.plan, t, o, hw);
}

}  // namespace

void quantize_network(CompiledNetwork& net, const HwConfig& hw, const Tensor& calibration_images,
                      const QuantOptions& options, const CalibrationTable* table,
                      const PlacementOptions& placement) {
  // A one-node DLA layer the lowering refuses (a constraint the planners do not check, such as
  // Rubik's whole atoms or an integer network's Add) goes to the PPU like a planner's refusal:
  // the graph is planned again with the node on the PPU, until it lowers or nothing is left to
  // move.
  const bool ppu = options.fallback == Fallback::kPpu && hw.ppu.gpcs > 0;
  std::map<std::size_t, std::string> refused;
  for (;;) {
    try {
      quantize_plan(net, hw, calibration_images, options, table);
      break;
    } catch (const LayerRefusal& e) {
      if (!ppu || e.nodes.size() != 1 || refused.count(e.nodes[0]) != 0) throw;
      refused.emplace(e.nodes[0], e.what());
      net.plan = plan_network(net.graph, hw.name, true, options.fallback, refused);
    }
  }
  place_in_cvsram(net.program, hw, placement);
}

CompiledNetwork compile_network(models::graph::Graph g, const HwConfig& hw,
                                const Tensor& calibration_images, const QuantOptions& options,
                                const CalibrationTable* table, const PlacementOptions& placement) {
  CompiledNetwork net = prepare_network(std::move(g), hw, options.fallback);
  quantize_network(net, hw, calibration_images, options, table, placement);
  return net;
}

namespace {

// The shape of a batch of `count` images: the input's own first axis when it is the batch (1
// after shape inference), else a new leading axis before the whole input (a C x H x W or M x K
// input is one image).
std::vector<std::int64_t> batch_shape(const NetPlan& plan, std::int64_t count) {
  std::vector<std::int64_t> shape = plan.input_shape;
  if (!shape.empty() && shape[0] == 1) {
    shape[0] = count;
  } else {
    shape.insert(shape.begin(), count);
  }
  return shape;
}

std::size_t per_image(const NetPlan& plan) {
  std::size_t n = 1;
  for (std::int64_t d : plan.input_shape) n *= static_cast<std::size_t>(d);
  return n;
}

}  // namespace

Tensor random_images(const NetPlan& plan, std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0F, 1.0F);
  std::vector<float> v(count * per_image(plan));
  for (float& x : v) x = u(rng);
  return Tensor::floats(batch_shape(plan, static_cast<std::int64_t>(count)), std::move(v));
}

Tensor as_input_batch(const NetPlan& plan, const Tensor& batch) {
  const std::size_t per = per_image(plan);
  const std::vector<std::int64_t> in_shape = batch_shape(plan, -1);
  if (batch.shape.empty() || batch.elements() == 0 ||
      static_cast<std::size_t>(batch.shape[0]) * per != batch.elements()) {
    throw GraphError(fmt::format(
        "input data of shape {} is not a batch of the network's input "
        "{} (first axis: images)",
        models::graph::shape_string(batch.shape), models::graph::shape_string(in_shape)));
  }
  std::vector<std::int64_t> shape = batch_shape(plan, batch.shape[0]);
  if (models::graph::is_float(batch.dtype)) return Tensor::floats(std::move(shape), batch.f);
  std::vector<float> v(batch.i.size());
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(batch.i[k]);
  return Tensor::floats(std::move(shape), std::move(v));
}

Tensor slice_batch(const Tensor& batch, std::size_t first, std::size_t count) {
  const auto n = static_cast<std::size_t>(batch.shape.at(0));
  if (first + count > n)
    throw GraphError(fmt::format("images {}..{} of {}", first, first + count, n));
  const std::size_t per = batch.elements() / n;
  std::vector<std::int64_t> shape = batch.shape;
  shape[0] = static_cast<std::int64_t>(count);
  return Tensor::floats(
      std::move(shape),
      std::vector<float>(batch.f.begin() + static_cast<std::ptrdiff_t>(first * per),
                         batch.f.begin() + static_cast<std::ptrdiff_t>((first + count) * per)));
}

namespace {

TraceMemory trace_memory(Ram ram) {
  return ram == Ram::kCv ? TraceMemory::kSecondary : TraceMemory::kPrimary;
}

// A surface's bytes in the golden image (which holds DMA addresses, as the device does).
std::vector<std::uint8_t> surface_golden(const NetProgram& p, const HostMemory& golden,
                                         const FeatureSurface& s) {
  return golden.bytes(dma_address_of(s), static_cast<std::size_t>(tensor_bytes(p, s)));
}

nlohmann::json layer_map(const NetProgram& p) {
  nlohmann::json layers = nlohmann::json::array();
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    const NetLayer& l = p.layers[i];
    const TensorQuant& q = p.table.at(l.output);
    layers.push_back({{"layer", i},
                      {"engine", l.engine},
                      {"onnx_nodes", l.nodes},
                      {"input", l.input},
                      {"output", l.output},
                      {"clip", q.clip},
                      {"bits", q.bits},
                      {"unsigned", q.is_unsigned},
                      {"macs", l.macs},
                      {"records", device_records(l).size()}});
    if (!l.fallback.empty()) layers.back()["fallback"] = l.fallback;
    if (const ConvLayer* conv = layer_conv(l)) {
      layers.back()["conv_mode"] = conv->winograd ? "winograd" : "direct";
      // --winograd auto: what Winograd mode was measured to cost (winograd.hpp).
      if (const auto& m = l.winograd_measure) {
        layers.back()["winograd_error"] = {{"direct", m->direct_error},
                                           {"winograd", m->winograd_error},
                                           {"budget", p.options.winograd_budget},
                                           {"accepted", m->accepted}};
      }
    }
    if (l.bands > 1) {  // Split H: band `band` of the convolution's `bands` (split.hpp)
      layers.back()["band"] = l.band;
      layers.back()["bands"] = l.bands;
    }
    if (l.groups > 1) {  // group `group` of a grouped convolution run group by group (groups.cpp)
      layers.back()["group"] = l.group;
      layers.back()["groups"] = l.groups;
    }
  }
  nlohmann::json map = {{"config", p.config},
                        {"precision", precision_name(p.options.precision)},
                        {"calibration", calibration_name(p.options.calibration)},
                        {"weights", weight_quantizer_name(p.options.weights)},
                        {"memory",
                         {{"activation_cvsram_bytes", p.placement.activation_cvsram_bytes},
                          {"activation_dram_bytes", p.placement.activation_dram_bytes},
                          {"constant_cvsram_bytes", p.placement.constant_cvsram_bytes},
                          {"constant_dram_bytes", p.placement.constant_dram_bytes}}},
                        {"layers", layers}};
  // The host lays the input out folded (fold.hpp): "columns: 227x227x3 -> 55x227x33".
  if (p.input.fold) map["input_fold"] = p.input.fold->describe();
  return map;
}

}  // namespace

NetTraceFiles write_network_trace(const CompiledNetwork& net, const Tensor& images,
                                  std::size_t index, const std::string& dir) {
  const NetProgram& p = net.program;
  if (p.images != 1) throw FirmwareError("a trace records one image (the program runs a batch)");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw FirmwareError(fmt::format("cannot create '{}': {}", dir, ec.message()));

  HostMemory golden;
  load_constants(p, golden);
  const Tensor batch = as_input_batch(net.plan, images);
  write_input(p, batch, index, golden);

  TraceWriter trace;
  trace.comment(fmt::format(
      "octasim compile: {} layers on {}, {} codes, calibration {}, weights {}", p.layers.size(),
      p.config, precision_name(p.options.precision), calibration_name(p.options.calibration),
      weight_quantizer_name(p.options.weights)));
  trace.comment(
      fmt::format("input image {} of the batch; goldens: the quantized reference "
                  "executor (models/ ops, layer by layer)",
                  index));
  trace.comment(placement_summary(p.placement));
  for (std::size_t i = 0; i < p.constants.size(); ++i) {
    const ConstantBlob& c = p.constants[i];
    trace.mem_load(c.address, fmt::format("const_{}.dat", i), c.bytes, trace_memory(c.ram));
  }
  trace.mem_load(p.input.surface.address, "input.dat", surface_golden(p, golden, p.input.surface),
                 trace_memory(p.input.surface.ram));
  GroupState groups;
  LayerGolden previous;
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    const NetLayer& l = p.layers[i];
    trace.comment(fmt::format("layer {}: {} <- {}", i, l.engine, l.nodes));
    const FeatureSurface* out = layer_output(l);
    if (out != nullptr && l.band == 0) {
      // The bands of a split convolution fill one surface, zeroed (here and in the golden, so
      // each band's CRC covers the same bytes) before the first.
      const FeatureSurface& s = l.bands > 1 ? l.whole_output : *out;
      const std::vector<std::uint8_t> zeros(static_cast<std::size_t>(tensor_bytes(p, s)));
      trace.mem_init_zero(s.address, zeros.size(), trace_memory(s.ram));
      if (l.bands > 1) golden.write(dma_address_of(s), zeros.data(), zeros.size());
    }
    previous = run_layer_model(p, i, golden, i == 0 ? nullptr : &previous);
    await_layer(trace, program_layer(p, i, trace, groups));
    if (out == nullptr) {
      // OCTAV writes registers, not a surface: the clip it finds is checked.
      trace.check_register(regs::OCTAV::D_CLIP_RESULT::kAddr,
                           models::bit_cast<std::uint32_t>(previous.clip));
      continue;
    }
    const std::vector<std::uint8_t> bytes = surface_golden(p, golden, *out);
    trace.check_crc(out->address, bytes.size(), models::crc32(bytes.data(), bytes.size()),
                    trace_memory(out->ram));
  }
  for (std::size_t k = 0; k < p.outputs.size(); ++k) {
    const FeatureSurface& s = p.outputs[k].surface;
    trace.check_file(s.address, fmt::format("output_{}.dat", k), surface_golden(p, golden, s), "",
                     trace_memory(s.ram));
  }
  NetTraceFiles files;
  // The trace, its data files, the layer map and the calibration table: all or none.
  files.trace = trace.save(dir, "net.cfg",
                           {{"layer_map.json", layer_map(p).dump(2) + "\n"},
                            {"calibration.json", calibration_table_text(p.table)}});
  files.layer_map = (std::filesystem::path(dir) / "layer_map.json").string();
  files.calibration = (std::filesystem::path(dir) / "calibration.json").string();
  return files;
}

}  // namespace octasim::firmware::net
