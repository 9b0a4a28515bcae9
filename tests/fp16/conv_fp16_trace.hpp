// Tests-only: writes the nv_full FP16 convolution layer of conv_fp16_layer.hpp as an NVDLA trace
// (firmware's TraceWriter records the register programming) plus octasim's FP16 checks: the
// output byte-exact against the models/ golden, within NVDLA's CC threshold of an independent
// double-precision reference, and the CDMA NaN/Inf counters.
#pragma once

#include <string>

#include <fmt/core.h>

#include "firmware/driver/trace_writer.hpp"
#include "tests/fp16/conv_fp16_layer.hpp"

namespace octasim::test {

// Writes `dir`/conv_fp16.cfg and its data files; returns the trace's path.
inline std::string write_conv_fp16_trace(const Fp16ConvLayer& layer, const std::string& dir,
                                         std::uint32_t nan_data = 0, std::uint32_t inf_data = 0) {
  namespace R = octasim::regs;
  MapMemory mem;
  layer.load(mem);
  firmware::TraceWriter t;
  t.comment("nv_full FP16 direct convolution + SDP flying (tests/fp16/conv_fp16_layer.hpp)");
  const auto in = layer.in_surface();
  const std::uint64_t in_bytes =
      std::uint64_t{in.surface_stride} * ((layer.channels + kEpa - 1) / kEpa);
  t.mem_init_zero(layer.in_addr, in_bytes);
  t.mem_load(layer.in_addr, "in_feature.dat", mem.bytes(layer.in_addr, in_bytes));
  t.mem_load(layer.wt_addr, "in_wt.dat", mem.bytes(layer.wt_addr, layer.weight_bytes()));
  t.mem_load(layer.bias_addr, "in_bias.dat",
             mem.bytes(layer.bias_addr, std::size_t{layer.out_surfaces()} * kAtom));
  t.mem_init_zero(layer.out_addr, layer.out_bytes());
  layer.program(t);
  t.check_register(R::CDMA::D_NAN_INPUT_DATA_NUM::kAddr, nan_data);
  t.check_register(R::CDMA::D_INF_INPUT_DATA_NUM::kAddr, inf_data);
  const std::string cfg = t.save(dir, "conv_fp16.cfg");
  firmware::write_text_file(dir + "/golden.dat", firmware::format_dat(layer.golden()));
  firmware::write_text_file(dir + "/reference.dat", firmware::format_dat(layer.reference()));
  firmware::write_text_file(dir + "/max_exp.dat", firmware::format_dat(layer.max_exp_bytes()));
  const std::string checks = fmt::format(
      "check_file(sync_id_0, pri_mem, 0x{0:x}, 0x{1:x}, \"golden.dat\");\n"
      "check_file(sync_id_0, pri_mem, 0x{0:x}, 0x{1:x}, \"golden.dat\", FP16_SDP);\n"
      "check_file(sync_id_0, pri_mem, 0x{0:x}, 0x{1:x}, \"reference.dat\", FP16_CC_DIRECT, {2}, "
      "1.0, \"max_exp.dat\");\n",
      layer.out_addr, layer.out_bytes(), layer.kernel_w * layer.kernel_h * layer.channels);
  firmware::write_text_file(cfg, t.text() + checks);
  return cfg;
}

}  // namespace octasim::test
