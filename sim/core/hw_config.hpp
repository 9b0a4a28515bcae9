// A DLA hardware configuration: the equivalent of NVDLA's spec/defs/*.spec defines
// (nv_small, nv_small_256, nv_small_256_full, nv_large, nv_full). Loaded from the project's
// configs/*.json; every unit's timing and feature checks read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace octasim {

struct HwConfig {
  std::string name = "nv_small";
  std::string description;

  // Data types and features (NVDLA *_ENABLE / *_DISABLE defines).
  bool feature_int8 = true;
  bool feature_int16 = false;
  bool feature_fp16 = false;
  bool weight_compression = false;
  bool winograd = false;
  bool batch = false;
  bool secondary_memif = false;
  bool sdp_lut = false;
  bool sdp_bs = true;
  bool sdp_bn = true;
  bool sdp_ew = false;
  bool bdma = false;
  bool rubik = false;
  bool pdp = true;
  bool cdp = true;

  // Geometry.
  unsigned mac_atomic_c = 8;
  unsigned mac_atomic_k = 8;
  unsigned memory_atomic_size = 8;  // bytes per memory atom (one C-slice of a surface)
  unsigned cbuf_bank_number = 32;
  unsigned cbuf_bank_width = 8;  // bytes
  unsigned cbuf_bank_depth = 512;

  // Throughputs, elements per cycle.
  unsigned sdp_bs_throughput = 1;
  unsigned sdp_bn_throughput = 1;
  unsigned sdp_ew_throughput = 0;
  unsigned pdp_throughput = 1;
  unsigned cdp_throughput = 1;

  // Primary memory interface.
  unsigned primary_memif_latency = 64;   // cycles
  unsigned primary_memif_max_burst = 1;  // memory atoms per request
  unsigned primary_memif_width = 64;     // bits per cycle
  unsigned mem_address_width = 32;

  // Timing of the model (cycles), beyond NVDLA's spec defines.
  unsigned dram_write_latency = 24;         // write request to write acknowledge
  unsigned csb_access_cycles = 1;           // one CSB register read or write
  unsigned op_start_latency = 8;            // OP_ENABLE to the first DMA request
  unsigned sdp_pipeline_latency = 12;       // SDP input atom to output atom
  unsigned pdp_pipeline_latency = 16;       // PDP input line to pooled output
  unsigned cdp_pipeline_latency = 40;       // CDP input atom to normalized output
  unsigned dma_latency_buffer_atoms = 128;  // read data an RDMA may have in flight or buffered
  unsigned dram_bytes_per_cycle = 0;        // sustained DRAM bandwidth; 0: the interface width
  unsigned conv_pipeline_latency = 38;      // CSC package issue to CACC delivery

  // The OCTAV unit (sim/octav, octasim's own): elements its datapath takes per cycle in one
  // streaming pass, the on-chip buffer an input that fits is kept in (read from DRAM once),
  // and the cycles of the FP64 division that ends each Newton-Raphson iteration (pipelined:
  // one group per cycle after the first).
  unsigned octav_elements_per_cycle = 8;
  unsigned octav_buffer_bytes = 16384;
  unsigned octav_divide_latency = 24;

  // Sustained DRAM bytes per cycle the memory system delivers.
  [[nodiscard]] unsigned dram_bandwidth() const {
    return dram_bytes_per_cycle != 0 ? dram_bytes_per_cycle : primary_memif_width / 8;
  }
};

// The configurations built into octasim (sim/configs/*.json), by name.
[[nodiscard]] std::vector<std::string> builtin_hw_configs();
// Loads a configuration: a built-in name (nv_small, nv_small_256, nv_small_256_full, nv_large,
// nv_full) or a path to a JSON file with the same keys; a file may start from a built-in with
// "base": "nv_small". Unknown keys, wrong types and impossible values throw std::runtime_error
// naming the file and the key.
[[nodiscard]] HwConfig load_hw_config(const std::string& name_or_path);
// Parses configuration JSON text; `source` names it in errors.
[[nodiscard]] HwConfig parse_hw_config(const std::string& json_text, const std::string& source);

}  // namespace octasim
