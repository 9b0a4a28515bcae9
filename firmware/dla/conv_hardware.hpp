// What the convolution firmware needs to know of the hardware configuration, and the one
// conversion from the simulator's HwConfig (sim/core/hw_config.hpp: a plain struct, no SystemC).
#pragma once

namespace octasim {
struct HwConfig;
}

namespace octasim::firmware {

// NVDLA's spec defines, as sim/core's HwConfig carries them.
struct ConvHardware {
  unsigned atom_bytes = 8;  // NVDLA_MEMORY_ATOMIC_SIZE
  unsigned mac_atomic_c = 8;
  unsigned mac_atomic_k = 8;
  unsigned cbuf_bank_number = 32;
  unsigned cbuf_bank_width = 8;  // bytes of one CBUF entry
  unsigned cbuf_bank_depth = 512;
  bool int8 = true;
  bool int16 = false;
  bool fp16 = false;                // FP16 convolution (nv_full)
  bool weight_compression = false;  // sparse weight compression (WMB/WGS)
  bool batch = false;               // multi-batch convolution (BATCH)
  bool winograd = false;            // Winograd convolution (conv_winograd.hpp)
};

// The convolution hardware of a DLA configuration.
[[nodiscard]] ConvHardware conv_hardware(const HwConfig& hw);

}  // namespace octasim::firmware
