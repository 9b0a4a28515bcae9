#include "firmware/dla/conv_hardware.hpp"

#include "sim/core/hw_config.hpp"

namespace octasim::firmware {

ConvHardware conv_hardware(const HwConfig& hw) {
  ConvHardware c;
  c.atom_bytes = hw.memory_atomic_size;
  c.mac_atomic_c = hw.mac_atomic_c;
  c.mac_atomic_k = hw.mac_atomic_k;
  c.cbuf_bank_number = hw.cbuf_bank_number;
  c.cbuf_bank_width = hw.cbuf_bank_width;
  c.cbuf_bank_depth = hw.cbuf_bank_depth;
  c.int8 = hw.feature_int8;
  c.int16 = hw.feature_int16;
  c.weight_compression = hw.weight_compression;
  return c;
}

}  // namespace octasim::firmware
