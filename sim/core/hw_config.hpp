// A DLA hardware configuration: the equivalent of NVDLA's spec/defs/*.spec defines
// (nv_small, nv_small_256, nv_small_256_full, nv_large, nv_full). Loaded from the project's
// configs/*.json; every unit's timing and feature checks read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace octasim {

// The DLA: NVDLA's spec defines (features, geometry, throughputs, the primary memory interface)
// and the model's DLA timing constants.
struct DlaConfig {
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

  // Secondary memory interface (SRAMIF to the CV-SRAM), when secondary_memif.
  unsigned secondary_memif_latency = 0;    // cycles from a read's data on the interface to the DMA
  unsigned secondary_memif_max_burst = 1;  // memory atoms per request
  unsigned secondary_memif_width = 0;      // bits per cycle

  // Timing of the model (cycles), beyond NVDLA's spec defines.
  unsigned csb_access_cycles = 1;           // one CSB register read or write
  unsigned op_start_latency = 8;            // OP_ENABLE to the first DMA request
  unsigned sdp_pipeline_latency = 12;       // SDP input atom to output atom
  unsigned pdp_pipeline_latency = 16;       // PDP input line to pooled output
  unsigned cdp_pipeline_latency = 40;       // CDP input atom to normalized output
  unsigned dma_latency_buffer_atoms = 128;  // read data an RDMA may have in flight or buffered
  unsigned conv_pipeline_latency = 38;      // CSC package issue to CACC delivery
};

// The shared memory system (sim/mem): memory partitions, each with L2 slices and one DRAM
// channel; addresses interleave across slices every interleave_bytes. With no L2 slices and zero
// bank timing it is a single fixed-latency DRAM bus (NVDLA's test memory: the DLA-only
// configurations).
struct MemoryConfig {
  unsigned dram_write_latency = 24;        // write request to write acknowledge
  unsigned dram_bytes_per_cycle = 0;       // sustained DRAM bandwidth; 0: the DLA interface width
  unsigned partitions = 1;                 // memory partitions = DRAM channels
  unsigned interleave_bytes = 256;         // address interleave granule across L2 slices
  unsigned xbar_latency = 0;               // crossbar traversal, cycles each way
  unsigned xbar_port_bytes_per_cycle = 0;  // per initiator port (0: not a limit)
  unsigned l2_slices_per_partition = 0;    // 0: no L2 (requests go straight to DRAM)
  unsigned l2_slice_bytes = 262144;
  unsigned l2_ways = 16;
  unsigned l2_line_bytes = 128;
  unsigned l2_hit_latency = 20;      // cycles, tag + data array
  unsigned l2_bytes_per_cycle = 64;  // per slice
  unsigned dram_banks = 1;           // per channel
  unsigned dram_row_bytes = 2048;    // row (page) size per bank
  unsigned dram_burst_bytes = 64;    // bytes per burst on the channel data bus
  unsigned dram_trcd = 0;            // activate to column command, cycles
  unsigned dram_trp = 0;             // precharge to activate
  unsigned dram_cl = 0;              // column command to data
  unsigned dram_tras = 0;            // activate to precharge, minimum
  // The CV-SRAM behind the DLA's secondary memory interface (hw.dla.secondary_memif): its own
  // address space [cvsram_base, cvsram_base + cvsram_bytes), separate from DRAM's.
  unsigned cvsram_base = 0x50000000;  // where NVDLA's test bench maps it
  unsigned cvsram_bytes = 0x2000000;  // 32 MiB, to 0x52000000 (NVDLA leaves the size to the SoC)
  // Bandwidth, one of two ways (hw_config.cpp refuses both at once): a data path shared by reads
  // and writes (cvsram_bytes_per_cycle), or separate read and write paths that run in parallel
  // (cvsram_read_/write_bytes_per_cycle; either one set selects them). 0: secondary_memif_width/8.
  unsigned cvsram_bytes_per_cycle = 0;
  unsigned cvsram_read_bytes_per_cycle = 0;
  unsigned cvsram_write_bytes_per_cycle = 0;

  // Whether reads and writes of the CV-SRAM have separate data paths.
  [[nodiscard]] bool cvsram_split_paths() const {
    return cvsram_read_bytes_per_cycle != 0 || cvsram_write_bytes_per_cycle != 0;
  }
};

// The PPU (sim/ppu): GPCs of SMs with tensor cores; 0 GPCs: no PPU (the DLA-only configs).
struct PpuConfig {
  unsigned gpcs = 0;
  unsigned sms_per_gpc = 2;
  unsigned tensor_cores_per_sm = 4;
  unsigned max_ctas_per_sm = 2;               // occupancy limit (CTA slots per SM)
  unsigned smem_bytes_per_sm = 65536;         // shared memory; a CTA's tiles must fit its share
  unsigned fma_lanes_per_sm = 64;             // non-tensor FP32 FMA lanes (the fallback path)
  unsigned sm_bytes_per_cycle = 64;           // SM load/store bandwidth to the crossbar
  unsigned tc_fp16_step_cycles = 1;           // one 4x4x4 FP16/BF16 MMA step per tensor core
  unsigned tc_int8_step_cycles = 8;           // one 8x8x16 INT8 step
  unsigned tc_int4_step_cycles = 8;           // one 8x8x32 INT4 step
  unsigned cta_launch_cycles = 16;            // scheduler: CTA dispatch to an SM
  unsigned command_cycles = 4;                // front end: decode of one push-buffer command
  unsigned channels = 2;                      // push-buffer channels (doorbells)
  std::string cta_scheduler = "round_robin";  // CTA -> GPC policy (sim/ppu/cta_scheduler.hpp)
};

// The OCTAV unit (sim/octav, octasim's own): elements its datapath takes per cycle in one
// streaming pass, the on-chip buffer an input that fits is kept in (read from DRAM once), and the
// cycles of the FP64 division that ends each Newton-Raphson iteration (pipelined: one group per
// cycle after the first).
struct OctavConfig {
  unsigned elements_per_cycle = 8;
  unsigned buffer_bytes = 16384;
  unsigned divide_latency = 24;
};

// The device: one section per component. JSON keys stay flat (`mac_atomic_c`, `mem_partitions`,
// `ppu_gpcs`, `octav_buffer_bytes`: kParams in hw_config.cpp lists them with their meaning).
struct HwConfig {
  std::string name = "nv_small";
  std::string description;
  DlaConfig dla;
  MemoryConfig mem;
  PpuConfig ppu;
  OctavConfig octav;
  // The clock frequency: throughput in inferences per second (`octasim net`'s fps) is
  // cycles at this clock. The simulation counts cycles; its time base is 1 ns per cycle whatever
  // this says.
  unsigned clock_mhz = 1000;

  // Sustained DRAM bytes per cycle the memory system delivers, reads and writes together.
  [[nodiscard]] unsigned dram_bandwidth() const {
    return mem.dram_bytes_per_cycle != 0 ? mem.dram_bytes_per_cycle : dla.primary_memif_width / 8;
  }
  // CV-SRAM bytes per cycle of reads and of writes (sim/mem/cvsram_port.hpp); with a shared path
  // (mem.cvsram_split_paths() false) both are that path's; 0 stands for secondary_memif_width / 8.
  [[nodiscard]] unsigned cvsram_read_bandwidth() const {
    const unsigned v =
        mem.cvsram_split_paths() ? mem.cvsram_read_bytes_per_cycle : mem.cvsram_bytes_per_cycle;
    return v != 0 ? v : dla.secondary_memif_width / 8;
  }
  [[nodiscard]] unsigned cvsram_write_bandwidth() const {
    const unsigned v =
        mem.cvsram_split_paths() ? mem.cvsram_write_bytes_per_cycle : mem.cvsram_bytes_per_cycle;
    return v != 0 ? v : dla.secondary_memif_width / 8;
  }
};

// The configurations built into octasim (sim/configs/*.json), by name.
[[nodiscard]] std::vector<std::string> builtin_hw_configs();
// Loads a configuration: a built-in name (nv_small, nv_small_256, nv_small_256_full, nv_large,
// nv_full) or a path to a JSON file with the same keys; a file may start from a built-in with
// "base": "nv_small", or from a spec file, "base": "nv_medium_512.spec" (relative to the JSON
// file). Unknown keys, wrong types and impossible values throw std::runtime_error
// naming the file and the key.
// A path ending in ".spec" is an NVDLA spec file (sim/core/spec_config.hpp); its defines with no
// octasim key are appended to `notes` (one line each) if given.
[[nodiscard]] HwConfig load_hw_config(const std::string& name_or_path,
                                      std::vector<std::string>* notes = nullptr);
// Parses configuration JSON text; `source` names it in errors.
[[nodiscard]] HwConfig parse_hw_config(const std::string& json_text, const std::string& source);
// Every key of `c` (name, description and each configuration key) as JSON text of one object:
// what parse_hw_config reads back to the same configuration.
[[nodiscard]] std::string hw_config_json(const HwConfig& c);
// Whether `key` is a configuration key (a JSON key of kParams, or name / description / base).
[[nodiscard]] bool is_hw_config_key(const std::string& key);

}  // namespace octasim
