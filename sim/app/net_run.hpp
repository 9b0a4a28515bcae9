// Running a compiled network's images on a device for `octasim net`: every image checked against
// the quantized reference executor, and one inference timed on the cycle-level SoC — per layer
// its cycles and what bounds it, for the whole inference the cycles from the first register
// write to the last layer's end, and the report that `--report` and `--compare` use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/runtime.hpp"
#include "models/graph/graph.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/soc/dla.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"

namespace octasim::app {

// What running images on a device gave: the dequantized outputs (output 0), how many images were
// bit-exact against the quantized reference executor, and per-layer counts.
struct BatchResult {
  std::vector<models::graph::Tensor> outputs;  // output 0 of each image
  // Every output of each image (filled when BatchRunner::keep_all_outputs).
  std::vector<std::vector<models::graph::Tensor>> all_outputs;
  std::size_t bit_exact = 0;
  std::vector<std::uint64_t> saturations;  // per layer, summed over the images
  std::vector<double> clip_sum;            // per OCTAV layer, the device's clips summed
};

// Runs images on one device, one after the other, each checked against the quantized reference
// executor (models/) on a host memory image. Register groups carry over between calls.
class BatchRunner {
 public:
  BatchRunner(const firmware::net::NetProgram& prog, const models::graph::Tensor& images,
              trace::Device& device, std::uint64_t timeout, firmware::net::Schedule schedule);
  // Images [first, first + count) (a batched program: a whole number of its batches);
  // `progress`: a progress line on stderr for long runs.
  void run(std::size_t first, std::size_t count, bool progress);
  [[nodiscard]] BatchResult& result() { return r_; }
  // Also keep every output of each image in result().all_outputs (--expect).
  bool keep_all_outputs = false;

 private:
  const firmware::net::NetProgram& prog_;
  const models::graph::Tensor& images_;
  DeviceMemory memory_;  // the device's DRAM and CV-SRAM, by DMA address
  firmware::HostMemory golden_;
  trace::DeviceMmio mmio_;
  firmware::net::Schedule schedule_;
  firmware::net::GroupState groups_;
  BatchResult r_;
};

// What limits a layer on the cycle-level device: the largest of
//   compute      the datapath's busy cycles (CONV: the CSC issuing packages to the MAC array)
//   DRAM, SRAM   the bytes the layer moves to and from that memory over its bandwidth
//   CBUF refill  cycles the CSC waited for input or weights to arrive in CBUF
//   delivery     cycles the CSC waited for CACC to hand results to SDP (delivery credits)
// `share`: that quantity over the layer's cycles.
struct LayerBound {
  std::string name;
  double share = 0.0;
};

struct LayerTime {
  std::uint64_t cycles = 0;          // first record's start to last record's end
  std::uint64_t start = 0, end = 0;  // those two, from the inference's start
  LayerBound bound;
};

// One inference timed on the cycle-level device.
struct Timing {
  std::vector<LayerTime> layers;
  // The inference (a batched program's batch): its first register write to its last layer's end.
  std::uint64_t cycles = 0;
  nlohmann::json report;  // report::build of the inference, layers annotated with ONNX nodes
};

// What the cycle-level run writes besides the summary.
struct CycleOutputs {
  std::string model;
  std::string report;             // --report FILE.json: the first inference's report
  std::string timeline;           // --timeline FILE.json: the first inference's timeline
  bool keep_all_outputs = false;  // --expect: every output of each image (BatchResult)
};

// The cycle-level device: image 0 timed (a batched program, firmware/net/batch.hpp: images
// 0..prog.images-1, one run), then, with `batch`, the other images up to `count` on the same
// device (their results into *batch, the timed images' included).
Timing run_cycle_level(const firmware::net::NetProgram& prog, const models::graph::Tensor& images,
                       const HwConfig& hw, std::uint64_t timeout, firmware::net::Schedule schedule,
                       BatchResult* batch, std::size_t count, bool progress,
                       const CycleOutputs& out);

// For each DLA layer record (in the order the layers started), the index of the program layer
// that left it (prog.layers.size() for none): each engine takes its layers in program order,
// while engines overlap.
[[nodiscard]] std::vector<std::size_t> record_owners(const firmware::net::NetProgram& prog,
                                                     const std::vector<soc::LayerTiming>& records);

}  // namespace octasim::app
