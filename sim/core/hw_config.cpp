#include "sim/core/hw_config.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <variant>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "sim/core/builtin_configs.hpp"
#include "sim/core/spec_config.hpp"

namespace octasim {

namespace {

// A key's field, reached through its section: &dla_field<&DlaConfig::mac_atomic_c>.
template <auto F>
auto& dla_field(HwConfig& c) {
  return c.dla.*F;
}
template <auto F>
auto& mem_field(HwConfig& c) {
  return c.mem.*F;
}
template <auto F>
auto& ppu_field(HwConfig& c) {
  return c.ppu.*F;
}
template <auto F>
auto& octav_field(HwConfig& c) {
  return c.octav.*F;
}

unsigned& clock_field(HwConfig& c) {
  return c.clock_mhz;
}

struct Param {
  const char* key;
  const char* description;
  std::variant<bool& (*)(HwConfig&), unsigned& (*)(HwConfig&), std::string& (*)(HwConfig&)> member;
  std::vector<const char*> choices = {};  // a string key's valid values
};

// Every configuration key, with what it means (NVDLA's spec define in parentheses).
const Param kParams[] = {
    {"clock_mhz", "clock frequency in MHz: inferences per second are cycles at this clock",
     &clock_field},
    {"feature_int8", "INT8 feature data (FEATURE_DATA_TYPE_INT8)",
     &dla_field<&DlaConfig::feature_int8>},
    {"feature_int16", "INT16 feature data", &dla_field<&DlaConfig::feature_int16>},
    {"feature_fp16", "FP16 feature data", &dla_field<&DlaConfig::feature_fp16>},
    {"weight_compression", "compressed weights (WEIGHT_COMPRESSION)",
     &dla_field<&DlaConfig::weight_compression>},
    {"winograd", "Winograd convolution (WINOGRAD)", &dla_field<&DlaConfig::winograd>},
    {"batch", "batched convolution (BATCH)", &dla_field<&DlaConfig::batch>},
    {"secondary_memif", "secondary memory interface (SECONDARY_MEMIF)",
     &dla_field<&DlaConfig::secondary_memif>},
    {"sdp_lut", "SDP lookup table (SDP_LUT)", &dla_field<&DlaConfig::sdp_lut>},
    {"sdp_bs", "SDP BS stage (SDP_BS)", &dla_field<&DlaConfig::sdp_bs>},
    {"sdp_bn", "SDP BN stage (SDP_BN)", &dla_field<&DlaConfig::sdp_bn>},
    {"sdp_ew", "SDP EW stage (SDP_EW)", &dla_field<&DlaConfig::sdp_ew>},
    {"bdma", "bridge DMA (BDMA)", &dla_field<&DlaConfig::bdma>},
    {"rubik", "Rubik reshape engine (RUBIK)", &dla_field<&DlaConfig::rubik>},
    {"pdp", "planar data processor (PDP)", &dla_field<&DlaConfig::pdp>},
    {"cdp", "channel data processor (CDP)", &dla_field<&DlaConfig::cdp>},
    {"mac_atomic_c", "MAC atomic-C, input channels per cycle (MAC_ATOMIC_C_SIZE)",
     &dla_field<&DlaConfig::mac_atomic_c>},
    {"mac_atomic_k", "MAC atomic-K, kernels per cycle (MAC_ATOMIC_K_SIZE)",
     &dla_field<&DlaConfig::mac_atomic_k>},
    {"memory_atomic_size", "bytes per memory atom (MEMORY_ATOMIC_SIZE)",
     &dla_field<&DlaConfig::memory_atomic_size>},
    {"cbuf_bank_number", "CBUF banks (CBUF_BANK_NUMBER)", &dla_field<&DlaConfig::cbuf_bank_number>},
    {"cbuf_bank_width", "CBUF bank width in bytes (CBUF_BANK_WIDTH)",
     &dla_field<&DlaConfig::cbuf_bank_width>},
    {"cbuf_bank_depth", "CBUF bank depth in entries (CBUF_BANK_DEPTH)",
     &dla_field<&DlaConfig::cbuf_bank_depth>},
    {"sdp_bs_throughput", "SDP BS elements per cycle (SDP_BS_THROUGHPUT)",
     &dla_field<&DlaConfig::sdp_bs_throughput>},
    {"sdp_bn_throughput", "SDP BN elements per cycle (SDP_BN_THROUGHPUT)",
     &dla_field<&DlaConfig::sdp_bn_throughput>},
    {"sdp_ew_throughput", "SDP EW elements per cycle (SDP_EW_THROUGHPUT)",
     &dla_field<&DlaConfig::sdp_ew_throughput>},
    {"pdp_throughput", "PDP elements per cycle (PDP_THROUGHPUT)",
     &dla_field<&DlaConfig::pdp_throughput>},
    {"cdp_throughput", "CDP elements per cycle (CDP_THROUGHPUT)",
     &dla_field<&DlaConfig::cdp_throughput>},
    {"primary_memif_latency", "primary memory read latency in cycles (PRIMARY_MEMIF_LATENCY)",
     &dla_field<&DlaConfig::primary_memif_latency>},
    {"primary_memif_max_burst", "memory atoms per request (PRIMARY_MEMIF_MAX_BURST_LENGTH)",
     &dla_field<&DlaConfig::primary_memif_max_burst>},
    {"primary_memif_width", "primary memory interface width in bits (PRIMARY_MEMIF_WIDTH)",
     &dla_field<&DlaConfig::primary_memif_width>},
    {"mem_address_width", "memory address bits (MEM_ADDRESS_WIDTH)",
     &dla_field<&DlaConfig::mem_address_width>},
    {"dram_write_latency", "cycles from a write request to its acknowledge",
     &mem_field<&MemoryConfig::dram_write_latency>},
    {"csb_access_cycles", "cycles per CSB register access",
     &dla_field<&DlaConfig::csb_access_cycles>},
    {"op_start_latency", "cycles from OP_ENABLE to the first DMA request",
     &dla_field<&DlaConfig::op_start_latency>},
    {"sdp_pipeline_latency", "SDP pipeline depth in cycles",
     &dla_field<&DlaConfig::sdp_pipeline_latency>},
    {"pdp_pipeline_latency", "PDP pipeline depth in cycles",
     &dla_field<&DlaConfig::pdp_pipeline_latency>},
    {"cdp_pipeline_latency", "CDP pipeline depth in cycles",
     &dla_field<&DlaConfig::cdp_pipeline_latency>},
    {"dma_latency_buffer_atoms", "memory atoms an RDMA may have requested but not consumed",
     &dla_field<&DlaConfig::dma_latency_buffer_atoms>},
    {"dram_bytes_per_cycle",
     "sustained DRAM bytes per cycle shared by all DMA clients, reads and writes together "
     "(0: primary_memif_width / 8)",
     &mem_field<&MemoryConfig::dram_bytes_per_cycle>},
    {"conv_pipeline_latency",
     "cycles from a CSC package issue to its CACC delivery (CBUF read, CMAC, CACC assembly)",
     &dla_field<&DlaConfig::conv_pipeline_latency>},
    {"octav_elements_per_cycle", "elements the OCTAV datapath takes per cycle in one pass",
     &octav_field<&OctavConfig::elements_per_cycle>},
    {"octav_buffer_bytes",
     "OCTAV on-chip buffer: an input this size or smaller is read from DRAM once",
     &octav_field<&OctavConfig::buffer_bytes>},
    {"octav_divide_latency",
     "cycles of OCTAV's FP64 division ending an iteration (then one group per cycle)",
     &octav_field<&OctavConfig::divide_latency>},
    {"secondary_memif_latency",
     "secondary memory (CV-SRAM) read latency in cycles (SECONDARY_MEMIF_LATENCY)",
     &dla_field<&DlaConfig::secondary_memif_latency>},
    {"secondary_memif_max_burst",
     "memory atoms per secondary-interface request (SECONDARY_MEMIF_MAX_BURST_LENGTH)",
     &dla_field<&DlaConfig::secondary_memif_max_burst>},
    {"secondary_memif_width", "secondary memory interface width in bits (SECONDARY_MEMIF_WIDTH)",
     &dla_field<&DlaConfig::secondary_memif_width>},
    {"cvsram_base", "first address of the CV-SRAM's own address space",
     &mem_field<&MemoryConfig::cvsram_base>},
    {"cvsram_bytes", "CV-SRAM size in bytes (used with secondary_memif)",
     &mem_field<&MemoryConfig::cvsram_bytes>},
    {"cvsram_bytes_per_cycle",
     "CV-SRAM bytes per cycle of one data path shared by reads and writes (0: "
     "secondary_memif_width / 8); not with cvsram_read/write_bytes_per_cycle",
     &mem_field<&MemoryConfig::cvsram_bytes_per_cycle>},
    {"cvsram_read_bytes_per_cycle",
     "CV-SRAM read bytes per cycle on a read path of its own, in parallel with writes (0: "
     "secondary_memif_width / 8); setting it or cvsram_write_bytes_per_cycle separates the paths",
     &mem_field<&MemoryConfig::cvsram_read_bytes_per_cycle>},
    {"cvsram_write_bytes_per_cycle",
     "CV-SRAM write bytes per cycle on a write path of its own, in parallel with reads (0: "
     "secondary_memif_width / 8); setting it or cvsram_read_bytes_per_cycle separates the paths",
     &mem_field<&MemoryConfig::cvsram_write_bytes_per_cycle>},
    {"mem_partitions", "memory partitions, one DRAM channel each",
     &mem_field<&MemoryConfig::partitions>},
    {"mem_interleave_bytes", "address interleave granule across L2 slices (bytes)",
     &mem_field<&MemoryConfig::interleave_bytes>},
    {"xbar_latency", "crossbar traversal latency each way (cycles)",
     &mem_field<&MemoryConfig::xbar_latency>},
    {"xbar_port_bytes_per_cycle", "crossbar bytes per cycle per initiator port (0: no limit)",
     &mem_field<&MemoryConfig::xbar_port_bytes_per_cycle>},
    {"l2_slices_per_partition", "L2 slices per memory partition (0: no L2)",
     &mem_field<&MemoryConfig::l2_slices_per_partition>},
    {"l2_slice_bytes", "L2 slice capacity (bytes)", &mem_field<&MemoryConfig::l2_slice_bytes>},
    {"l2_ways", "L2 associativity", &mem_field<&MemoryConfig::l2_ways>},
    {"l2_line_bytes", "L2 line size (bytes)", &mem_field<&MemoryConfig::l2_line_bytes>},
    {"l2_hit_latency", "L2 hit latency (cycles)", &mem_field<&MemoryConfig::l2_hit_latency>},
    {"l2_bytes_per_cycle", "L2 slice data bytes per cycle",
     &mem_field<&MemoryConfig::l2_bytes_per_cycle>},
    {"dram_banks", "DRAM banks per channel", &mem_field<&MemoryConfig::dram_banks>},
    {"dram_row_bytes", "DRAM row (page) bytes per bank", &mem_field<&MemoryConfig::dram_row_bytes>},
    {"dram_burst_bytes", "DRAM bytes per burst", &mem_field<&MemoryConfig::dram_burst_bytes>},
    {"dram_trcd", "DRAM activate-to-column delay tRCD (cycles)",
     &mem_field<&MemoryConfig::dram_trcd>},
    {"dram_trp", "DRAM precharge time tRP (cycles)", &mem_field<&MemoryConfig::dram_trp>},
    {"dram_cl", "DRAM CAS latency CL (cycles)", &mem_field<&MemoryConfig::dram_cl>},
    {"dram_tras", "DRAM minimum activate-to-precharge time tRAS (cycles)",
     &mem_field<&MemoryConfig::dram_tras>},
    {"ppu_gpcs", "PPU GPCs (0: no PPU)", &ppu_field<&PpuConfig::gpcs>},
    {"ppu_sms_per_gpc", "SMs per GPC", &ppu_field<&PpuConfig::sms_per_gpc>},
    {"ppu_tensor_cores_per_sm", "tensor cores per SM", &ppu_field<&PpuConfig::tensor_cores_per_sm>},
    {"ppu_max_ctas_per_sm", "CTAs resident per SM at most (occupancy)",
     &ppu_field<&PpuConfig::max_ctas_per_sm>},
    {"ppu_smem_bytes_per_sm", "shared memory per SM (bytes); a CTA's tiles must fit",
     &ppu_field<&PpuConfig::smem_bytes_per_sm>},
    {"ppu_fma_lanes_per_sm", "FP32 FMA lanes per SM (non-tensor path)",
     &ppu_field<&PpuConfig::fma_lanes_per_sm>},
    {"ppu_sm_bytes_per_cycle", "SM load/store bytes per cycle to the crossbar",
     &ppu_field<&PpuConfig::sm_bytes_per_cycle>},
    {"ppu_tc_fp16_step_cycles", "cycles per 4x4x4 FP16/BF16 tensor-core step",
     &ppu_field<&PpuConfig::tc_fp16_step_cycles>},
    {"ppu_tc_int8_step_cycles", "cycles per 8x8x16 INT8 tensor-core step",
     &ppu_field<&PpuConfig::tc_int8_step_cycles>},
    {"ppu_tc_int4_step_cycles", "cycles per 8x8x32 INT4 tensor-core step",
     &ppu_field<&PpuConfig::tc_int4_step_cycles>},
    {"ppu_cta_launch_cycles", "cycles to dispatch one CTA to an SM",
     &ppu_field<&PpuConfig::cta_launch_cycles>},
    {"ppu_command_cycles", "front-end cycles per push-buffer command",
     &ppu_field<&PpuConfig::command_cycles>},
    {"ppu_channels", "push-buffer channels", &ppu_field<&PpuConfig::channels>},
    {"ppu_cta_scheduler",
     "CTA scheduling policy: which GPC's pool each CTA of a kernel joins",
     &ppu_field<&PpuConfig::cta_scheduler>,
     {"locality", "round_robin"}},  // = ppu::cta_scheduler_names() (tests/ppu checks)
};

const char* find_builtin(const std::string& name) {
  for (std::size_t i = 0; i < kBuiltinConfigCount; ++i) {
    if (name == kBuiltinConfigs[i].name) return kBuiltinConfigs[i].json;
  }
  return nullptr;
}

[[noreturn]] void fail(const std::string& source, const std::string& msg) {
  throw std::runtime_error(fmt::format("{}: {}", source, msg));
}

void validate_secondary_memif(const HwConfig& c, const std::string& source) {
  if (c.mem.cvsram_bytes_per_cycle != 0 && c.mem.cvsram_split_paths()) {
    fail(source, fmt::format("cvsram_bytes_per_cycle {} (one path shared by reads and writes) "
                             "contradicts cvsram_read_bytes_per_cycle {} / "
                             "cvsram_write_bytes_per_cycle {} (separate paths): give one or the "
                             "other (set cvsram_bytes_per_cycle to 0 to use separate paths)",
                             c.mem.cvsram_bytes_per_cycle, c.mem.cvsram_read_bytes_per_cycle,
                             c.mem.cvsram_write_bytes_per_cycle));
  }
  if (!c.dla.secondary_memif) return;  // the other cvsram_* keys are unused
  if (c.dla.secondary_memif_width % 8 != 0 || c.dla.secondary_memif_width == 0) {
    fail(source, "secondary_memif needs secondary_memif_width, a positive multiple of 8 bits");
  }
  if (c.dla.secondary_memif_max_burst == 0)
    fail(source, "secondary_memif_max_burst must be at least 1");
  if (c.mem.cvsram_bytes == 0) fail(source, "secondary_memif needs cvsram_bytes >= 1");
  const std::uint64_t end = std::uint64_t{c.mem.cvsram_base} + c.mem.cvsram_bytes;
  if (c.dla.mem_address_width < 64 && end > (std::uint64_t{1} << c.dla.mem_address_width)) {
    fail(source, fmt::format("the CV-SRAM [0x{:x}, 0x{:x}) does not fit in a {}-bit address",
                             c.mem.cvsram_base, end, c.dla.mem_address_width));
  }
}

void validate(const HwConfig& c, const std::string& source) {
  const auto power_of_two = [](unsigned v) { return v != 0 && (v & (v - 1)) == 0; };
  if (!power_of_two(c.dla.memory_atomic_size))
    fail(source, "memory_atomic_size must be a power of two");
  if (!power_of_two(c.dla.mac_atomic_c) || !power_of_two(c.dla.mac_atomic_k)) {
    fail(source, "mac_atomic_c and mac_atomic_k must be powers of two");
  }
  if (c.dla.primary_memif_width % 8 != 0 || c.dla.primary_memif_width == 0) {
    fail(source, "primary_memif_width must be a positive multiple of 8 bits");
  }
  if (c.dla.mem_address_width < 16 || c.dla.mem_address_width > 64) {
    fail(source, "mem_address_width must be between 16 and 64");
  }
  if (c.dla.dma_latency_buffer_atoms == 0)
    fail(source, "dma_latency_buffer_atoms must be at least 1");
  if (c.dla.primary_memif_max_burst == 0)
    fail(source, "primary_memif_max_burst must be at least 1");
  if (c.dla.pdp_throughput == 0 || c.dla.cdp_throughput == 0 || c.dla.sdp_bs_throughput == 0) {
    fail(source, "throughputs of present units must be at least 1");
  }
  if (c.dla.sdp_ew && c.dla.sdp_ew_throughput == 0)
    fail(source, "sdp_ew needs sdp_ew_throughput >= 1");
  validate_secondary_memif(c, source);
  if (c.mem.partitions == 0) fail(source, "mem_partitions must be at least 1");
  if (!power_of_two(c.mem.interleave_bytes))
    fail(source, "mem_interleave_bytes must be a power of two");
  if (c.mem.l2_slices_per_partition != 0) {
    if (!power_of_two(c.mem.l2_line_bytes)) fail(source, "l2_line_bytes must be a power of two");
    if (c.mem.l2_ways == 0 || c.mem.l2_bytes_per_cycle == 0)
      fail(source, "l2_ways and l2_bytes_per_cycle must be at least 1");
    if (c.mem.l2_slice_bytes % (c.mem.l2_line_bytes * c.mem.l2_ways) != 0 ||
        !power_of_two(c.mem.l2_slice_bytes / (c.mem.l2_line_bytes * c.mem.l2_ways))) {
      fail(source, "l2_slice_bytes must be a power-of-two number of sets of l2_ways lines");
    }
    if (c.mem.interleave_bytes < c.mem.l2_line_bytes)
      fail(source, "mem_interleave_bytes must be at least l2_line_bytes");
  }
  if (c.mem.dram_banks == 0 || !power_of_two(c.mem.dram_row_bytes) ||
      !power_of_two(c.mem.dram_burst_bytes))
    fail(source, "dram_banks must be >= 1, dram_row_bytes and dram_burst_bytes powers of two");
  if (c.ppu.gpcs != 0) {
    if (c.ppu.sms_per_gpc == 0 || c.ppu.tensor_cores_per_sm == 0 || c.ppu.max_ctas_per_sm == 0 ||
        c.ppu.fma_lanes_per_sm == 0 || c.ppu.sm_bytes_per_cycle == 0 || c.ppu.channels == 0) {
      fail(source,
           "a PPU needs at least one SM per GPC, tensor core, CTA slot, FMA lane, "
           "SM byte per cycle and channel");
    }
    if (c.ppu.tc_fp16_step_cycles == 0 || c.ppu.tc_int8_step_cycles == 0 ||
        c.ppu.tc_int4_step_cycles == 0)
      fail(source, "tensor-core step cycles must be at least 1");
  }
  if (c.octav.elements_per_cycle == 0) fail(source, "octav_elements_per_cycle must be at least 1");
}

// parse_hw_config, appending the notes of a spec-file base to `notes`.
HwConfig parse_config(const std::string& json_text, const std::string& source,
                      std::vector<std::string>* notes);

}  // namespace

std::vector<std::string> builtin_hw_configs() {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < kBuiltinConfigCount; ++i) names.emplace_back(kBuiltinConfigs[i].name);
  return names;
}

bool is_hw_config_key(const std::string& key) {
  if (key == "name" || key == "description" || key == "base") return true;
  for (const Param& p : kParams) {
    if (key == p.key) return true;
  }
  return false;
}

std::string hw_config_json(const HwConfig& c) {
  nlohmann::ordered_json j;
  j["name"] = c.name;
  j["description"] = c.description;
  HwConfig m = c;  // the key table's accessors take a mutable configuration
  for (const Param& p : kParams) {
    std::visit([&](auto field) { j[p.key] = field(m); }, p.member);
  }
  return j.dump(2);
}

HwConfig parse_hw_config(const std::string& json_text, const std::string& source) {
  return parse_config(json_text, source, nullptr);
}

namespace {

HwConfig parse_config(const std::string& json_text, const std::string& source,
                      std::vector<std::string>* notes) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e400
    fail(source, fmt::format("not valid JSON ({})", e.what()));
  }
  if (!j.is_object()) fail(source, "expected a JSON object");
  HwConfig c;
  if (j.contains("base")) {
    if (!j["base"].is_string())
      fail(source, "\"base\" must be the name of a built-in configuration");
    const std::string base = j["base"].get<std::string>();
    if (is_spec_path(base)) {  // an NVDLA spec file, relative to this one
      const std::filesystem::path dir = std::filesystem::path(source).parent_path();
      c = load_spec_config(base[0] == '/' || dir.empty() ? base : (dir / base).string(), notes);
    } else {
      const char* text = find_builtin(base);
      if (text == nullptr) fail(source, fmt::format("unknown base configuration '{}'", base));
      c = parse_hw_config(text, base);
    }
  }
  for (const auto& [key, value] : j.items()) {
    if (key == "base") continue;
    if (key == "name" || key == "description") {
      if (!value.is_string()) fail(source, fmt::format("\"{}\" must be a string", key));
      (key == "name" ? c.name : c.description) = value.get<std::string>();
      continue;
    }
    const Param* p = nullptr;
    for (const Param& candidate : kParams) {
      if (key == candidate.key) p = &candidate;
    }
    if (p == nullptr) fail(source, fmt::format("unknown key \"{}\"", key));
    if (std::holds_alternative<bool& (*)(HwConfig&)>(p->member)) {
      if (!value.is_boolean())
        fail(source, fmt::format("\"{}\" must be true or false ({})", key, p->description));
      std::get<bool& (*)(HwConfig&)>(p->member)(c) = value.get<bool>();
    } else if (std::holds_alternative<std::string& (*)(HwConfig&)>(p->member)) {
      if (!value.is_string())
        fail(source, fmt::format("\"{}\" must be a string ({})", key, p->description));
      const auto v = value.get<std::string>();
      std::string valid;
      bool ok = p->choices.empty();
      for (const char* choice : p->choices) {
        valid += fmt::format("{}\"{}\"", valid.empty() ? "" : ", ", choice);
        ok = ok || v == choice;
      }
      if (!ok)
        fail(source,
             fmt::format("\"{}\" is \"{}\" (valid: {}; {})", key, v, valid, p->description));
      std::get<std::string& (*)(HwConfig&)>(p->member)(c) = v;
    } else {
      if (!value.is_number_unsigned()) {
        fail(source,
             fmt::format("\"{}\" must be a non-negative integer ({})", key, p->description));
      }
      const auto v = value.get<std::uint64_t>();
      if (v > std::numeric_limits<unsigned>::max()) {
        fail(source, fmt::format("\"{}\" is {}, too large (at most {}; {})", key, v,
                                 std::numeric_limits<unsigned>::max(), p->description));
      }
      std::get<unsigned& (*)(HwConfig&)>(p->member)(c) = static_cast<unsigned>(v);
    }
  }
  validate(c, source);
  return c;
}

}  // namespace

HwConfig load_hw_config(const std::string& name_or_path, std::vector<std::string>* notes) {
  if (const char* text = find_builtin(name_or_path)) return parse_hw_config(text, name_or_path);
  if (is_spec_path(name_or_path)) return load_spec_config(name_or_path, notes);
  std::ifstream in(name_or_path);
  if (!in) {
    std::string names;
    for (const auto& n : builtin_hw_configs()) names += (names.empty() ? "" : ", ") + n;
    throw std::runtime_error(
        fmt::format("unknown configuration '{}' (built-in: {}; or a path to a JSON or .spec file)",
                    name_or_path, names));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), name_or_path, notes);
}

}  // namespace octasim
