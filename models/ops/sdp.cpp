#include "models/ops/sdp.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "models/precision/sdp_fp16_stages.hpp"

namespace octasim::models::ops {
namespace {

const char* precision_name(SdpPrecision p) {
  switch (p) {
    case SdpPrecision::kInt8:
      return "INT8";
    case SdpPrecision::kInt16:
      return "INT16";
    case SdpPrecision::kFp16:
      return "FP16";
  }
  return "?";
}

unsigned bytes_of(SdpPrecision p) {
  return p == SdpPrecision::kInt8 ? 1 : 2;
}

IntPrecision int_precision(SdpPrecision p) {
  return p == SdpPrecision::kInt16 ? IntPrecision::kInt16 : IntPrecision::kInt8;
}

std::int16_t load_element(const std::uint8_t* p, unsigned bytes) {
  if (bytes == 1) return static_cast<std::int8_t>(p[0]);
  return static_cast<std::int16_t>(static_cast<std::uint16_t>(p[0] | (p[1] << 8)));
}

// One of BRDMA/NRDMA/ERDMA as the layer walker uses it: which stage operands it feeds and where
// each component sits inside an element.
struct OperandStream {
  const SdpOperandSurface* surface = nullptr;
  const char* name = "";
  bool feeds_alu = false;
  bool feeds_mul = false;
  unsigned alu_component = 0;
  unsigned mul_component = 0;
  std::vector<std::uint8_t> buffer;  // per-channel: the whole 1x1xC; per-element: one line

  [[nodiscard]] bool used() const { return feeds_alu || feeds_mul; }
};

void bind_stream(OperandStream& s, const SdpOperandSurface& surface, const char* name,
                 bool alu_from_memory, bool mul_from_memory) {
  s.surface = &surface;
  s.name = name;
  s.feeds_alu = alu_from_memory;
  s.feeds_mul = mul_from_memory;
  if (!s.used()) return;
  if (!surface.enabled) {
    throw std::runtime_error(std::string("SDP: an operand comes from memory but ") + name +
                             " is disabled");
  }
  if (alu_from_memory && surface.use == SdpDataUse::kMul) {
    throw std::runtime_error(std::string("SDP: the ALU operand comes from memory but ") + name +
                             " DATA_USE is MUL");
  }
  if (mul_from_memory && surface.use == SdpDataUse::kAlu) {
    throw std::runtime_error(std::string("SDP: the multiplier operand comes from memory but ") +
                             name + " DATA_USE is ALU");
  }
  // With DATA_USE=BOTH each element holds the ALU operand, then the multiplier operand.
  s.alu_component = 0;
  s.mul_component = surface.use == SdpDataUse::kBoth ? 1 : 0;
}

bool x_alu_from_memory(const SdpXConfig& x) {
  return !x.bypass && !x.alu_bypass && x.alu_src == SdpOperandSource::kMemory;
}
bool x_mul_from_memory(const SdpXConfig& x) {
  return !x.bypass && !x.mul_bypass && x.mul_src == SdpOperandSource::kMemory;
}
bool y_alu_from_memory(const SdpYConfig& y) {
  return !y.bypass && !y.alu_bypass && y.alu_src == SdpOperandSource::kMemory;
}
bool y_mul_from_memory(const SdpYConfig& y) {
  return !y.bypass && !y.mul_bypass && y.mul_src == SdpOperandSource::kMemory;
}

// What the FP16 pipeline (PROC = FP16) does not run: the EW LUT, EQL mode, 1-byte operands.
void check_fp16_pipeline(const SdpConfig& cfg) {
  if (!cfg.ew.bypass && cfg.ew.eql_mode()) {
    throw std::runtime_error(
        "SDP EW EQL mode (EW_ALU_ALGO=EQL) in the FP16 pipeline is not supported");
  }
  if (!cfg.ew.bypass && !cfg.ew.lut_bypass) {
    throw std::runtime_error("SDP EW LUT (EW_LUT_BYPASS=NO) in the FP16 pipeline is not supported");
  }
  for (const SdpOperandSurface* s : {&cfg.brdma, &cfg.nrdma, &cfg.erdma}) {
    if (s->enabled && s->bytes_per_component != 2) {
      throw std::runtime_error(
          "SDP FP16 pipeline: operands from memory must be 16-bit (*RDMA_DATA_SIZE=TWO_BYTE)");
    }
  }
}

std::string conversion_name(SdpPrecision from, SdpPrecision to) {
  return std::string("SDP precision conversion ") + precision_name(from) + " -> " +
         precision_name(to);
}

// Conversion between the pipelines (format.rst, "Precision conversion for SDP layer (offline
// mode)"): INT16 -> FP16 in the INT32 pipeline (PROC = INT16) and FP16 -> INT16 in the FP32 one
// (PROC = FP16), memory input only (a convolution's output keeps its precision), not in EQL mode
// (programming guide, "SDP limitation").
void check_conversion(const SdpConfig& cfg) {
  const std::string name = conversion_name(cfg.proc_precision, cfg.out_precision);
  if (cfg.flying) {
    throw std::runtime_error(name +
                             " is not supported (PROC_PRECISION -> OUT_PRECISION) with flying "
                             "input: a convolution's output keeps its precision");
  }
  if (cfg.in_precision != cfg.proc_precision) {
    throw std::runtime_error(conversion_name(cfg.in_precision, cfg.proc_precision) +
                             " is not supported (SDP_RDMA IN_PRECISION -> PROC_PRECISION; a "
                             "conversion layer reads its input at PROC_PRECISION)");
  }
  if (cfg.ew.eql_mode()) {
    throw std::runtime_error(name + " is not allowed in EQL mode");
  }
  if (cfg.proc_precision == SdpPrecision::kFp16) check_fp16_pipeline(cfg);
}

// The FP16 pipeline: PROC = OUT = FP16, input FP16 from MRDMA or CACC FP32 (flying).
void check_fp16_supported(const SdpConfig& cfg) {
  if (!cfg.flying &&
      (cfg.in_precision == SdpPrecision::kFp16) != (cfg.proc_precision == SdpPrecision::kFp16)) {
    throw std::runtime_error(conversion_name(cfg.in_precision, cfg.proc_precision) +
                             " is not supported (SDP_RDMA IN_PRECISION -> PROC_PRECISION; the "
                             "FP16 pipeline reads FP16 input only)");
  }
  if (cfg.proc_precision != SdpPrecision::kFp16 || cfg.out_precision != SdpPrecision::kFp16) {
    throw std::runtime_error(conversion_name(cfg.proc_precision, cfg.out_precision) +
                             " is not supported (PROC_PRECISION -> OUT_PRECISION; between the "
                             "pipelines only INT16 -> FP16 and FP16 -> INT16)");
  }
  check_fp16_pipeline(cfg);
}

void check_supported(const SdpConfig& cfg, const ConvCube* flying) {
  if (cfg.width == 0 || cfg.height == 0 || cfg.channels == 0) {
    throw std::runtime_error("SDP: empty data cube");
  }
  if (cfg.flying && flying == nullptr) {
    throw std::runtime_error("SDP flying mode needs the convolution core's output");
  }
  if (cfg.flying && (flying->width != cfg.width || flying->height != cfg.height ||
                     flying->channels < cfg.channels)) {
    throw std::runtime_error("SDP data cube " + std::to_string(cfg.width) + "x" +
                             std::to_string(cfg.height) + "x" + std::to_string(cfg.channels) +
                             " differs from the CACC output " + std::to_string(flying->width) +
                             "x" + std::to_string(flying->height) + "x" +
                             std::to_string(flying->channels));
  }
  if (cfg.output_to_pdp) {
    throw std::runtime_error(
        "SDP output to PDP (OUTPUT_DST=PDP) is not supported by the memory-to-memory layer");
  }
  if (cfg.batches != 1) {
    throw std::runtime_error(cfg.flying ? "SDP multi-batch mode takes one cube per batch"
                                        : "SDP multi-batch mode (BATCH_NUMBER != 0) needs flying "
                                          "input from the convolution core");
  }
  if (cfg.winograd) throw std::runtime_error("SDP Winograd mode is not supported");
  const bool int16_to_fp16 =
      cfg.proc_precision == SdpPrecision::kInt16 && cfg.out_precision == SdpPrecision::kFp16;
  const bool fp16_to_int16 =
      cfg.proc_precision == SdpPrecision::kFp16 && cfg.out_precision == SdpPrecision::kInt16;
  if (int16_to_fp16 || fp16_to_int16) {
    check_conversion(cfg);
  } else if ((!cfg.flying && cfg.in_precision == SdpPrecision::kFp16) ||
             cfg.proc_precision == SdpPrecision::kFp16 ||
             cfg.out_precision == SdpPrecision::kFp16) {
    check_fp16_supported(cfg);
  }
  if ((!cfg.flying && bytes_of(cfg.in_precision) != bytes_of(cfg.proc_precision)) ||
      bytes_of(cfg.out_precision) != bytes_of(cfg.proc_precision)) {
    throw std::runtime_error(std::string("SDP precision conversion ") +
                             precision_name(cfg.in_precision) + " -> " +
                             precision_name(cfg.out_precision) + " is not supported");
  }
  if (cfg.atom_bytes == 0 || cfg.atom_bytes % 2 != 0) {
    throw std::runtime_error("SDP: memory atom size must be a positive even number of bytes");
  }
  if (cfg.ew.eql_mode() && (cfg.cvt.offset != 0 || cfg.cvt.scale != 1 || cfg.cvt.shift != 0)) {
    throw std::runtime_error(
        "SDP EQL mode needs the output convertor bypassed (offset 0, scale 1, shift 0)");
  }
}

}  // namespace

bool sdp_operands_from_memory(const SdpConfig& cfg) {
  return x_alu_from_memory(cfg.bs) || x_mul_from_memory(cfg.bs) || x_alu_from_memory(cfg.bn) ||
         x_mul_from_memory(cfg.bn) || y_alu_from_memory(cfg.ew) || y_mul_from_memory(cfg.ew);
}

SdpDatapath::SdpDatapath(const SdpConfig& cfg)
    : bs_(cfg.bs),
      bn_(cfg.bn),
      ew_(cfg.ew),
      lut_(&cfg.lut),
      cvt_(cfg.cvt),
      out_(int_precision(cfg.out_precision)),
      eql_(cfg.ew.eql_mode()),
      fp16_(cfg.proc_precision == SdpPrecision::kFp16),
      fp16_out_(cfg.out_precision == SdpPrecision::kFp16),
      nan_to_zero_(cfg.nan_to_zero) {}

std::uint32_t SdpDatapath::x_stage_fp16(const SdpXConfig& x, std::uint32_t in, std::uint16_t alu_op,
                                        std::uint16_t mul_op, bool nan_to_zero) {
  std::uint32_t v = in;
  if (!x.alu_bypass) {
    const std::uint16_t op =
        x.alu_src == SdpOperandSource::kMemory ? alu_op : static_cast<std::uint16_t>(x.alu_operand);
    v = sdp_fp32_alu(v, sdp_fp16_to_fp32(op, nan_to_zero), x.alu_algo);
  }
  if (!x.mul_bypass && !(x.mul_prelu && (v >> 31) == 0)) {
    const std::uint16_t op =
        x.mul_src == SdpOperandSource::kMemory ? mul_op : static_cast<std::uint16_t>(x.mul_operand);
    v = sdp_fp32_mul(v, sdp_fp16_to_fp32(op, nan_to_zero));
  }
  return x.relu_bypass ? v : sdp_fp32_relu(v);
}

std::uint32_t SdpDatapath::y_stage_fp16(const SdpYConfig& y, std::uint32_t in, std::uint16_t alu_op,
                                        std::uint16_t mul_op, bool nan_to_zero) {
  std::uint32_t v = in;
  if (!y.mul_bypass && !(y.mul_prelu && (v >> 31) == 0)) {
    const std::uint32_t op = y.mul_src == SdpOperandSource::kMemory
                                 ? sdp_fp16_to_fp32(mul_op, nan_to_zero)
                                 : static_cast<std::uint32_t>(y.mul_operand);
    v = sdp_fp32_mul(v, op);
  }
  if (!y.alu_bypass) {
    const std::uint32_t op = y.alu_src == SdpOperandSource::kMemory
                                 ? sdp_fp16_to_fp32(alu_op, nan_to_zero)
                                 : static_cast<std::uint32_t>(y.alu_operand);
    v = sdp_fp32_alu(v, op, y.alu_algo);
  }
  return v;
}

std::int32_t SdpDatapath::fp16_input(std::uint16_t h, SdpStats& stats) {
  stats.in_nan.record(fp16_is_nan(h));
  stats.in_inf.record(fp16_is_inf(h));
  return static_cast<std::int32_t>(sdp_fp16_to_fp32(h));
}

std::int32_t SdpDatapath::process_fp16(std::int32_t in, const SdpOperands& ops,
                                       SdpStats& stats) const {
  auto v = static_cast<std::uint32_t>(in);
  // NAN_TO_ZERO flushes a NaN data input (either sign) to +0 before BS.
  if (nan_to_zero_ && fp32_is_nan(v)) v = 0;
  const auto u16 = [](std::int16_t op) { return static_cast<std::uint16_t>(op); };
  if (!bs_.bypass) v = x_stage_fp16(bs_, v, u16(ops.bs_alu), u16(ops.bs_mul), nan_to_zero_);
  if (!bn_.bypass) v = x_stage_fp16(bn_, v, u16(ops.bn_alu), u16(ops.bn_mul), nan_to_zero_);
  if (!ew_.bypass) v = y_stage_fp16(ew_, v, u16(ops.ew_alu), u16(ops.ew_mul), nan_to_zero_);
  const std::uint16_t out = sdp_fp32_to_fp16(v);
  // FP16 -> INT16 (OUT_PRECISION = INT16): no convertor, no saturation counted.
  if (!fp16_out_) return sdp_fp16_to_int16(out);
  // Saturation: NVDLA's FP16 overflow, |x| >= 65504 (precision guide, convertor statistics).
  stats.out_saturation.record(fp16_overflows(out));
  stats.out_nan.record(fp16_is_nan(out));
  return static_cast<std::int32_t>(out);
}

std::int32_t SdpDatapath::x_stage(const SdpXConfig& x, std::int32_t in, std::int16_t alu_op,
                                  std::int16_t mul_op) {
  std::int64_t alu = in;
  if (!x.alu_bypass) {
    const std::int16_t op = x.alu_src == SdpOperandSource::kMemory ? alu_op : x.alu_operand;
    alu = sdp_x_alu(in, sdp_x_alu_operand(op, x.alu_shift), x.alu_algo);
  }
  std::int32_t v = 0;
  if (x.mul_bypass) {
    v = sdp_x_truncate(alu, x.mul_shift);
  } else {
    const std::int16_t op = x.mul_src == SdpOperandSource::kMemory ? mul_op : x.mul_operand;
    v = sdp_x_mul_truncate(alu, op, x.mul_prelu, x.mul_shift);
  }
  return x.relu_bypass ? v : sdp_relu(v);
}

std::int32_t SdpDatapath::y_core(const SdpYConfig& y, std::int32_t in, std::int16_t alu_op,
                                 std::int16_t mul_op) {
  std::int32_t v = in;
  if (!y.mul_bypass) {
    std::int32_t op = y.mul_operand;
    if (y.mul_src == SdpOperandSource::kMemory) {
      op = y.mul_cvt.bypass ? mul_op
                            : sdp_ew_operand_convert(mul_op, y.mul_cvt.offset, y.mul_cvt.scale,
                                                     y.mul_cvt.truncate);
    }
    v = sdp_y_mul_truncate(v, op, y.mul_prelu, y.truncate);
  }
  if (!y.alu_bypass) {
    std::int32_t op = y.alu_operand;
    if (y.alu_src == SdpOperandSource::kMemory) {
      op = y.alu_cvt.bypass ? alu_op
                            : sdp_ew_operand_convert(alu_op, y.alu_cvt.offset, y.alu_cvt.scale,
                                                     y.alu_cvt.truncate);
    }
    v = sdp_y_alu(v, op, y.alu_algo);
  }
  return v;
}

std::int32_t SdpDatapath::process(std::int32_t in, const SdpOperands& ops, SdpStats& stats) const {
  if (fp16_) return process_fp16(in, ops, stats);
  std::int32_t v = in;
  if (!bs_.bypass) v = x_stage(bs_, v, ops.bs_alu, ops.bs_mul);
  if (!bn_.bypass) v = x_stage(bn_, v, ops.bn_alu, ops.bn_mul);
  if (!ew_.bypass) {
    v = y_core(ew_, v, ops.ew_alu, ops.ew_mul);
    if (!ew_.lut_bypass) {
      const SdpLutResult r = sdp_lut_lookup(*lut_, v);
      stats.lut_uflow.record(r.uflow);
      stats.lut_oflow.record(r.oflow);
      stats.lut_hybrid.record(r.hybrid());
      stats.lut_le_hit.record(r.le_hit);
      stats.lut_lo_hit.record(r.lo_hit);
      v = r.value;
    }
  }
  if (eql_) {
    // The output convertor passes the compare result through (its low 16 bits).
    const auto result = static_cast<std::int16_t>(static_cast<std::uint16_t>(v));
    if (result != 0) stats.unequal = true;
    return result;
  }
  if (fp16_out_) {
    // INT16 -> FP16: the convertor into 17 bits, then FP16; outputs of magnitude 65504 count.
    const std::uint16_t h = sdp_output_convert_fp16(v, cvt_);
    stats.out_saturation.record(fp16_overflows(h));
    return h;
  }
  const Saturated out = sdp_output_convert(v, cvt_, out_);
  stats.out_saturation.record(out.saturated);
  return static_cast<std::int32_t>(out.value);
}

void SdpDatapath::process_atom(const std::int32_t* in, const SdpOperands* ops, std::size_t n,
                               std::int32_t* out, SdpStats& stats) const {
  for (std::size_t i = 0; i < n; ++i) out[i] = process(in[i], ops[i], stats);
}

namespace {

// One data cube through SDP, adding to `result` (its counters accumulate across batches).
void run_sdp_cube(const SdpConfig& cfg, Memory& mem, const ConvCube* flying,
                  SdpLayerResult& result) {
  check_supported(cfg, flying);
  const SdpDatapath dp(cfg);

  const unsigned epa = cfg.elements_per_atom(cfg.proc_precision);
  const unsigned in_bytes = bytes_of(cfg.in_precision);
  const unsigned out_bytes = bytes_of(cfg.out_precision);
  const std::uint32_t surfaces = cfg.surfaces();
  const std::uint32_t width = cfg.width;
  const std::uint32_t height = cfg.height;
  const unsigned atom = cfg.atom_bytes;
  // A 1x1xC cube is read and written as packed atoms (NVDLA reads it as one per-channel request
  // and writes it line-packed), whatever the strides say.
  const bool packed_1x1 = width == 1 && height == 1;
  const bool write_output = !cfg.ew.eql_mode();
  const bool fp16_in = !cfg.flying && cfg.in_precision == SdpPrecision::kFp16;

  OperandStream streams[3];
  bind_stream(streams[0], cfg.brdma, "BRDMA", x_alu_from_memory(cfg.bs), x_mul_from_memory(cfg.bs));
  bind_stream(streams[1], cfg.nrdma, "NRDMA", x_alu_from_memory(cfg.bn), x_mul_from_memory(cfg.bn));
  bind_stream(streams[2], cfg.erdma, "ERDMA", y_alu_from_memory(cfg.ew), y_mul_from_memory(cfg.ew));

  // Bytes every enabled RDMA moves (an enabled stream is read whether or not a stage uses it).
  const std::uint64_t elements_padded = std::uint64_t{surfaces} * epa;
  for (const OperandStream& s : streams) {
    if (!s.surface->enabled) continue;
    const std::uint64_t per_layer =
        s.surface->mode == SdpDataMode::kPerChannel
            ? elements_padded * s.surface->bytes_per_element()
            : elements_padded * width * height * s.surface->bytes_per_element();
    result.bytes_read += per_layer;
  }
  for (OperandStream& s : streams) {
    if (!s.used()) continue;
    const unsigned bpe = s.surface->bytes_per_element();
    if (s.surface->mode == SdpDataMode::kPerChannel) {
      s.buffer.resize(elements_padded * bpe);
      mem.read(s.surface->base, s.buffer.data(), s.buffer.size());
    } else {
      s.buffer.resize(std::size_t{width} * epa * bpe);
    }
  }

  std::vector<std::uint8_t> in_line(std::size_t{width} * atom);
  std::vector<std::uint8_t> out_line(std::size_t{width} * epa * out_bytes);
  std::vector<std::int32_t> in_vals(epa), out_vals(epa);
  std::vector<SdpOperands> ops(epa);

  for (std::uint32_t s = 0; s < surfaces; ++s) {
    for (std::uint32_t h = 0; h < height; ++h) {
      const std::uint64_t in_addr = packed_1x1
                                        ? cfg.src_base + std::uint64_t{s} * atom
                                        : sdp_atom_address(cfg.src_base, cfg.src_line_stride,
                                                           cfg.src_surface_stride, atom, 0, h, s);
      if (!cfg.flying) {
        mem.read(in_addr, in_line.data(), in_line.size());
        result.bytes_read += in_line.size();
      }
      for (OperandStream& st : streams) {
        if (!st.used() || st.surface->mode != SdpDataMode::kPerElement) continue;
        const std::uint64_t addr = st.surface->base +
                                   std::uint64_t{s} * st.surface->surface_stride +
                                   std::uint64_t{h} * st.surface->line_stride;
        mem.read(addr, st.buffer.data(), st.buffer.size());
      }

      for (std::uint32_t w = 0; w < width; ++w) {
        for (unsigned i = 0; i < epa; ++i) {
          if (cfg.flying) {
            const std::uint32_t c = s * epa + i;
            in_vals[i] = c < flying->channels ? flying->at(w, h, c) : 0;
          } else {
            const std::uint8_t* p = &in_line[(std::size_t{w} * epa + i) * in_bytes];
            in_vals[i] = fp16_in ? SdpDatapath::fp16_input(
                                       static_cast<std::uint16_t>(p[0] | p[1] << 8), result.stats)
                                 : load_element(p, in_bytes);
          }
          std::int16_t vals[3][2] = {};
          for (unsigned k = 0; k < 3; ++k) {
            const OperandStream& st = streams[k];
            if (!st.used()) continue;
            const unsigned bpc = st.surface->bytes_per_component;
            const unsigned bpe = st.surface->bytes_per_element();
            const std::size_t element = st.surface->mode == SdpDataMode::kPerChannel
                                            ? std::size_t{s} * epa + i
                                            : std::size_t{w} * epa + i;
            const std::uint8_t* p = &st.buffer[element * bpe];
            if (st.feeds_alu) vals[k][0] = load_element(p + st.alu_component * bpc, bpc);
            if (st.feeds_mul) vals[k][1] = load_element(p + st.mul_component * bpc, bpc);
          }
          ops[i] =
              SdpOperands{vals[0][0], vals[0][1], vals[1][0], vals[1][1], vals[2][0], vals[2][1]};
        }
        dp.process_atom(in_vals.data(), ops.data(), epa, out_vals.data(), result.stats);
        for (unsigned i = 0; i < epa; ++i) {
          std::uint8_t* p = &out_line[(std::size_t{w} * epa + i) * out_bytes];
          const auto bits = static_cast<std::uint32_t>(out_vals[i]);
          p[0] = static_cast<std::uint8_t>(bits);
          if (out_bytes == 2) p[1] = static_cast<std::uint8_t>(bits >> 8);
        }
      }

      if (!write_output) continue;
      const std::uint64_t out_addr =
          packed_1x1 ? cfg.dst_base + std::uint64_t{s} * epa * out_bytes
                     : sdp_atom_address(cfg.dst_base, cfg.dst_line_stride, cfg.dst_surface_stride,
                                        epa * out_bytes, 0, h, s);
      mem.write(out_addr, out_line.data(), out_line.size());
      result.bytes_written += out_line.size();
    }
  }
}

}  // namespace

SdpLayerResult run_sdp_layer(const SdpConfig& cfg, Memory& mem, const ConvCube* flying) {
  SdpLayerResult result;
  run_sdp_cube(cfg, mem, flying, result);
  return result;
}

SdpLayerResult run_sdp_batches(const SdpConfig& cfg, Memory& mem,
                               const std::vector<ConvCube>& flying) {
  if (!cfg.flying) throw std::runtime_error("SDP multi-batch mode needs flying input (from CACC)");
  if (flying.size() != cfg.batches) {
    throw std::runtime_error("SDP BATCH_NUMBER says " + std::to_string(cfg.batches) +
                             " batches but the convolution delivers " +
                             std::to_string(flying.size()));
  }
  for (const SdpOperandSurface* op : {&cfg.brdma, &cfg.nrdma, &cfg.erdma}) {
    if (cfg.batches > 1 && op->enabled && op->mode == SdpDataMode::kPerElement) {
      throw std::runtime_error(
          "SDP multi-batch mode with a per-element operand from memory (BS/BN/EW_BATCH_STRIDE) "
          "is not supported");
    }
  }
  SdpLayerResult result;
  for (std::uint32_t b = 0; b < cfg.batches; ++b) {
    run_sdp_cube(sdp_batch(cfg, b), mem, &flying[b], result);
  }
  return result;
}

SdpConfig sdp_batch(const SdpConfig& cfg, std::uint32_t b) {
  SdpConfig one = cfg;
  one.batches = 1;
  one.dst_base = cfg.dst_base + std::uint64_t{b} * cfg.dst_batch_stride;
  return one;
}

}  // namespace octasim::models::ops
