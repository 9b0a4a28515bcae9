#include "firmware/dla/conv_hardware.hpp"

#include "sim/core/hw_config.hpp"

namespace octasim::firmware {

ConvHardware conv_hardware(const HwConfig& hw) {
  ConvHardware c;
  c.atom_bytes = hw.dla.memory_atomic_size;
  c.mac_atomic_c = hw.dla.mac_atomic_c;
  c.mac_atomic_k = hw.dla.mac_atomic_k;
  c.cbuf_bank_number = hw.dla.cbuf_bank_number;
  c.cbuf_bank_width = hw.dla.cbuf_bank_width;
  c.cbuf_bank_depth = hw.dla.cbuf_bank_depth;
  c.int8 = hw.dla.feature_int8;
  c.int16 = hw.dla.feature_int16;
  c.fp16 = hw.dla.feature_fp16;
  c.weight_compression = hw.dla.weight_compression;
  c.batch = hw.dla.batch;
  c.winograd = hw.dla.winograd;
  return c;
}

}  // namespace octasim::firmware
