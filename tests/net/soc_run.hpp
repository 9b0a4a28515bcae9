// Runs a compiled network (firmware/net NetProgram) on the cycle-level SoC (sim/soc: Soc +
// HostAdapter, programmed through DeviceMmio as `octasim net` does), image after image and
// layer after layer, and checks after each layer that its output surface equals the quantized
// reference executor's (run_layer_model: models/ ops) byte for byte — after each layer, since a
// dead tensor's buffer is reused by later layers. One SoC per call: SystemC elaborates once per
// process, so call it once per TEST.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <systemc>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "models/graph/reference.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/mem/cvsram_port.hpp"
#include "sim/mem/memory_system.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"

namespace octasim::nettest {

struct SocRun {
  std::vector<std::vector<std::int32_t>> codes;  // output 0's codes per image (the device's)
  std::vector<models::graph::Tensor> outputs;    // output 0 dequantized per image
  std::size_t layers_run = 0;                    // operations the SoC's DLA recorded
  std::size_t differing_images = 0;              // images with any byte unlike the golden
  std::uint64_t dram_bytes = 0;                  // read and written in DRAM, over the run
  std::uint64_t cvsram_bytes = 0;                // read and written in the CV-SRAM, over the run
  std::uint64_t conv_weight_bytes = 0;           // weight bytes CDMA fetched (dla.CONV)
  // Every output dequantized, per image.
  std::vector<std::vector<models::graph::Tensor>> every_output;
};

inline std::vector<std::uint8_t> memory_bytes(const models::ops::Memory& m, std::uint64_t addr,
                                              std::size_t n) {
  std::vector<std::uint8_t> v(n);
  m.read(addr, v.data(), n);
  return v;
}

// The layer records one image leaves on the device (a convolution with its pooling on the fly
// leaves a CONV and a PDP record; a PPU layer none).
inline std::size_t device_record_count(const firmware::net::NetProgram& prog) {
  std::size_t n = 0;
  for (const firmware::net::NetLayer& l : prog.layers) n += firmware::net::device_records(l).size();
  return n;
}

inline SocRun run_on_soc(const firmware::net::NetProgram& prog, const HwConfig& hw,
                         const models::graph::Tensor& images, std::size_t count) {
  namespace fn = firmware::net;
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  soc::Soc soc("dla", hw);
  soc::HostAdapter device(soc);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and, with placement, the CV-SRAM
  fn::load_constants(prog, memory);
  firmware::HostMemory golden;
  fn::load_constants(prog, golden);
  fn::GroupState groups;
  SocRun run;
  for (std::size_t i = 0; i < count; ++i) {
    fn::write_input(prog, images, i, memory);
    fn::write_input(prog, images, i, golden);
    bool same = true;
    for (std::size_t l = 0; l < prog.layers.size(); ++l) {
      fn::await_layer(mmio, fn::program_layer(prog, l, mmio, groups));
      (void)fn::run_layer_model(prog, l, golden);
      const fn::NetLayer& layer = prog.layers[l];
      const firmware::FeatureSurface* out = fn::layer_output(layer);
      if (out == nullptr) continue;  // OCTAV: registers only, checked through the SDP it programs
      const firmware::FeatureSurface& dst = *out;
      const auto n = static_cast<std::size_t>(fn::tensor_bytes(prog, dst));
      const std::uint64_t at = fn::dma_address_of(dst);
      const bool equal = memory_bytes(memory, at, n) == memory_bytes(golden, at, n);
      EXPECT_TRUE(equal) << "image " << i << ": layer " << l << " (" << layer.engine << " "
                         << layer.nodes << ") differs from the quantized reference executor";
      same = same && equal;
    }
    const std::vector<std::int32_t> dev = fn::read_output_codes(prog, 0, memory);
    EXPECT_EQ(dev, fn::read_output_codes(prog, 0, golden)) << "image " << i;
    run.differing_images += same ? 0 : 1;
    run.codes.push_back(dev);
    run.outputs.push_back(fn::read_output(prog, 0, memory));
    run.every_output.emplace_back();
    for (std::size_t k = 0; k < prog.outputs.size(); ++k) {
      run.every_output.back().push_back(fn::read_output(prog, k, memory));
    }
  }
  run.layers_run = soc.dla().layers().size();
  const MemorySystem& ms = soc.memory_system();
  run.dram_bytes = ms.bytes_read() + ms.bytes_written();
  if (const mem::CvSramPort* cv = ms.cvsram())
    run.cvsram_bytes = cv->bytes_read() + cv->bytes_written();
  for (const stats::Group* g : soc.dla().statistics()) {
    for (std::size_t k = 0; k < g->size(); ++k) {
      if (g->full_name(k) == "dla.CONV.cdma_wt_bytes") run.conv_weight_bytes = g->value(k);
    }
  }
  return run;
}

// Output 0 of each of the first `count` images, as the SoC computed it (`run`), against the FP32
// reference executor (models/graph) on the same image: the largest |difference| within `bound`
// times the largest |output| (and that output not all zero).
inline void expect_near_fp32_reference(const firmware::net::CompiledNetwork& net,
                                       const models::graph::Tensor& images, const SocRun& run,
                                       std::size_t count, double bound) {
  namespace fn = firmware::net;
  for (std::size_t i = 0; i < count; ++i) {
    const models::graph::TensorMap ref =
        models::graph::run_reference(net.graph, {{net.plan.input, fn::slice_batch(images, i, 1)}});
    const models::graph::Tensor& y = ref.at(net.plan.outputs.at(0));
    const models::graph::Tensor& d = run.outputs.at(i);
    ASSERT_EQ(d.f.size(), y.f.size());
    double peak = 0.0, worst = 0.0;
    std::size_t worst_at = 0;
    for (std::size_t k = 0; k < y.f.size(); ++k) {
      peak = std::max(peak, std::abs(double{y.f[k]}));
      const double e = std::abs(double{d.f[k]} - double{y.f[k]});
      if (e > worst) worst = e, worst_at = k;
    }
    ASSERT_GT(peak, 0.0) << "the FP32 output of image " << i << " is all zero";
    EXPECT_LE(worst, bound * peak)
        << "image " << i << ": output " << worst_at << " is " << d.f[worst_at] << " on the device, "
        << y.f[worst_at] << " in FP32 (largest |output| " << peak << ")";
  }
}

}  // namespace octasim::nettest
