#include "sim/octav/octav_functional.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "models/numerics/float_format.hpp"
#include "models/quant/clip_convertor.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::octav {
namespace {

namespace R = octasim::regs;
using models::Signedness;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("OCTAV: " + what);
}

float float_of_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

std::uint32_t bits_of_float(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// One element's raw bytes (little-endian) as the front end's FP32.
float to_fp32(DataType t, const std::uint8_t* p) {
  switch (t) {
    case DataType::kInt8:
      return static_cast<float>(static_cast<std::int8_t>(p[0]));
    case DataType::kInt16:
      return static_cast<float>(static_cast<std::int16_t>(p[0] | p[1] << 8));
    case DataType::kInt32: {
      const std::uint32_t u = std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 |
                              std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
      return static_cast<float>(static_cast<std::int32_t>(u));  // round to nearest even
    }
    case DataType::kFp16:
      return models::fp16_to_float(static_cast<std::uint16_t>(p[0] | p[1] << 8));
    case DataType::kFp32:
      return float_of_bits(std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 |
                           std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24);
  }
  return 0.0f;
}

// Group statistics of pass 0: the largest and the smallest nonzero magnitude (FP32 bits).
struct GroupStats {
  std::uint32_t max_bits = 0;
  std::uint32_t min_nonzero_bits = 0;
};

GroupStats group_stats(const float* x, std::size_t n, Signedness sign) {
  GroupStats st;
  std::uint32_t min_nz = 0xffffffffu;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t m = models::octav_magnitude_bits(bits_of_float(x[i]), sign);
    st.max_bits = std::max(st.max_bits, m);
    if (m != 0) min_nz = std::min(min_nz, m);
  }
  if (st.max_bits != 0) st.min_nonzero_bits = min_nz;
  return st;
}

// AUTO_PROGRAM=FAKEQUANT: models::clip_to_fake_quant's operands into SDP's next group.
void add_fake_quant_writes(dla::OpResult& r, float clip, const OctavOp& op) {
  namespace S = R::SDP;
  const models::FakeQuantParams p =
      models::clip_to_fake_quant(static_cast<double>(clip), op.options.bits, op.options.sign);
  const auto u16 = [](std::int16_t v) { return std::uint32_t{static_cast<std::uint16_t>(v)}; };
  using AluCfg = S::D_DP_BN_ALU_CFG;
  using MulCfg = S::D_DP_BN_MUL_CFG;
  r.status.emplace_back(S::D_DP_BS_ALU_SRC_VALUE::kAddr, u16(p.hi));
  r.status.emplace_back(S::D_DP_BS_MUL_SRC_VALUE::kAddr, u16(p.r1));
  r.status.emplace_back(AluCfg::kAddr, AluCfg::BN_ALU_SRC.set(0, AluCfg::BN_ALU_SRC_REG) |
                                           AluCfg::BN_ALU_SHIFT_VALUE.set(0, p.lo_shift));
  r.status.emplace_back(S::D_DP_BN_ALU_SRC_VALUE::kAddr, u16(p.lo));
  r.status.emplace_back(MulCfg::kAddr, MulCfg::BN_MUL_SRC.set(0, MulCfg::BN_MUL_SRC_REG) |
                                           MulCfg::BN_MUL_SHIFT_VALUE.set(0, p.t2));
  r.status.emplace_back(S::D_DP_BN_MUL_SRC_VALUE::kAddr, u16(p.r2));
  r.status.emplace_back(S::D_CVT_OFFSET::kAddr, static_cast<std::uint32_t>(p.cvt.offset));
  r.status.emplace_back(S::D_CVT_SCALE::kAddr, u16(p.cvt.scale));
  r.status.emplace_back(S::D_CVT_SHIFT::kAddr, p.cvt.shift);
}

// A 64-bit count in a 32-bit counter register (sticks at the maximum).
std::uint32_t sat32(std::uint64_t v) {
  return v > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(v);
}

}  // namespace

unsigned element_bytes(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return 1;
    case DataType::kInt16:
    case DataType::kFp16:
      return 2;
    case DataType::kInt32:
    case DataType::kFp32:
      return 4;
  }
  return 1;
}

const char* data_type_name(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return "INT8";
    case DataType::kInt16:
      return "INT16";
    case DataType::kInt32:
      return "INT32";
    case DataType::kFp16:
      return "FP16";
    case DataType::kFp32:
      return "FP32";
  }
  return "?";
}

std::vector<std::size_t> OctavOp::shape() const {
  if (flat) return {length};
  return {channels, height, width};
}

OctavOp decode_octav(const dla::RegRead& regs, unsigned atom_bytes) {
  using Misc = R::OCTAV::D_MISC_CFG;
  const std::uint32_t misc = regs(Misc::kAddr);
  OctavOp op;
  const std::uint32_t type = Misc::DATA_TYPE.get(misc);
  if (type > 4) {
    fail("D_MISC_CFG.DATA_TYPE has the reserved value " + std::to_string(type) +
         " (expected 0 INT8, 1 INT16, 2 INT32, 3 FP16 or 4 FP32)");
  }
  op.type = static_cast<DataType>(type);
  op.sign = Misc::SIGNEDNESS.get(misc) == Misc::SIGNEDNESS_UNSIGNED ? Signedness::kUnsigned
                                                                    : Signedness::kSigned;
  op.flat = Misc::LAYOUT.get(misc) == Misc::LAYOUT_FLAT;
  const unsigned eb = element_bytes(op.type);
  if (atom_bytes < eb) fail("the memory atom is smaller than one element");
  op.src = dla::read_address(regs, R::OCTAV::D_SRC_BASE_ADDR_HIGH::kAddr,
                             R::OCTAV::D_SRC_BASE_ADDR_LOW::kAddr);
  if (op.src % atom_bytes != 0) {
    fail("source address is not aligned to the " + std::to_string(atom_bytes) + "-byte atom");
  }
  if (op.flat) {
    op.length = regs(R::OCTAV::D_FLAT_LENGTH::kAddr);
    if (op.length == 0) fail("D_FLAT_LENGTH is 0 (a flat input needs at least one element)");
  } else {
    using S0 = R::OCTAV::D_DATAIN_SIZE_0;
    const std::uint32_t s0 = regs(S0::kAddr);
    op.width = S0::DATAIN_WIDTH.get(s0) + 1;
    op.height = S0::DATAIN_HEIGHT.get(s0) + 1;
    op.channels =
        R::OCTAV::D_DATAIN_SIZE_1::DATAIN_CHANNEL.get(regs(R::OCTAV::D_DATAIN_SIZE_1::kAddr)) + 1;
    op.line_stride = regs(R::OCTAV::D_SRC_LINE_STRIDE::kAddr);
    op.surface_stride = regs(R::OCTAV::D_SRC_SURFACE_STRIDE::kAddr);
    const std::uint64_t line = std::uint64_t{op.width} * atom_bytes;
    if (op.line_stride < line) {
      fail("D_SRC_LINE_STRIDE " + std::to_string(op.line_stride) + " is smaller than a line (" +
           std::to_string(line) + " bytes)");
    }
    const unsigned cpa = atom_bytes / eb;
    if (op.channels > cpa && op.surface_stride < std::uint64_t{op.height} * op.line_stride) {
      fail("D_SRC_SURFACE_STRIDE " + std::to_string(op.surface_stride) +
           " is smaller than a surface (height * line stride)");
    }
  }
  const std::uint32_t gran = Misc::GRANULARITY.get(misc);
  if (gran == Misc::GRANULARITY_TENSOR) {
    op.grouping = models::Grouping::per_tensor();
  } else if (gran == Misc::GRANULARITY_CHANNEL) {
    if (op.flat) fail("per-channel granularity needs the feature layout (a flat input has none)");
    op.grouping = models::Grouping::per_channel(0);
  } else if (gran == Misc::GRANULARITY_VECTOR) {
    const std::uint32_t n = regs(R::OCTAV::D_VECTOR_SIZE::kAddr);
    if (n == 0) fail("D_VECTOR_SIZE is 0 (per-vector granularity needs N >= 1)");
    op.grouping = models::Grouping::per_vector(n);
  } else {
    fail("D_MISC_CFG.GRANULARITY has the reserved value 3 (expected TENSOR, CHANNEL or VECTOR)");
  }
  models::OctavOptions& o = op.options;
  o.bits = static_cast<int>(R::OCTAV::D_BITS::BITS.get(regs(R::OCTAV::D_BITS::kAddr)));
  if (o.bits < models::kMinQuantBits || o.bits > models::kMaxQuantBits) {
    fail("D_BITS is " + std::to_string(o.bits) + " (expected 2..16)");
  }
  o.sign = op.sign;
  o.max_iterations = static_cast<int>(regs(R::OCTAV::D_MAX_ITERATIONS::kAddr) & 0xffu);
  if (o.max_iterations == 0) fail("D_MAX_ITERATIONS is 0 (expected 1..255)");
  const float tol = float_of_bits(regs(R::OCTAV::D_TOLERANCE::kAddr));
  if (!(tol >= 0.0f) || !std::isfinite(tol)) fail("D_TOLERANCE is not a finite FP32 >= 0");
  o.tolerance = tol;
  const std::uint32_t init = Misc::INIT_MODE.get(misc);
  if (init == Misc::INIT_MODE_HALF_MAX) {
    o.init = models::OctavInit::kHalfMax;
  } else if (init == Misc::INIT_MODE_ZERO) {
    o.init = models::OctavInit::kZero;
  } else if (init == Misc::INIT_MODE_VALUE) {
    const float v = float_of_bits(regs(R::OCTAV::D_INITIAL_VALUE::kAddr));
    if (!(v >= 0.0f) || !std::isfinite(v)) fail("D_INITIAL_VALUE is not a finite FP32 >= 0");
    o.init = models::OctavInit::kValue;
    o.initial_value = v;
  } else {
    fail("D_MISC_CFG.INIT_MODE has the reserved value 3 (expected HALF_MAX, ZERO or VALUE)");
  }
  op.result_addr = dla::read_address(regs, R::OCTAV::D_RESULT_ADDR_HIGH::kAddr,
                                     R::OCTAV::D_RESULT_ADDR_LOW::kAddr);
  op.auto_program = static_cast<AutoProgram>(Misc::AUTO_PROGRAM.get(misc));  // 2 bits: 0..3
  if (op.auto_program == AutoProgram::kFakeQuant) {
    if (op.grouping.kind != models::GroupKind::kTensor) {
      fail(
          "AUTO_PROGRAM=FAKEQUANT needs per-tensor granularity (the SDP's operands take one "
          "clip)");
    }
    if (op.type != DataType::kInt8 && op.type != DataType::kInt16) {
      fail(std::string("AUTO_PROGRAM=FAKEQUANT needs DATA_TYPE INT8 or INT16 (the SDP's "
                       "integer data), not ") +
           data_type_name(op.type));
    }
  } else if (op.auto_program != AutoProgram::kNone &&
             op.grouping.kind != models::GroupKind::kTensor) {
    fail("auto-program needs per-tensor granularity (a convertor takes one scale)");
  }
  op.auto_clamp = Misc::AUTO_CLAMP.get(misc) == Misc::AUTO_CLAMP_ENABLE;
  if (op.auto_clamp && op.auto_program != AutoProgram::kSdp) {
    fail("AUTO_CLAMP needs AUTO_PROGRAM=SDP (the clamps are SDP's BS and BN ALU operands)");
  }
  return op;
}

std::uint64_t octav_pass_bytes(const OctavOp& op, unsigned atom_bytes) {
  const unsigned eb = element_bytes(op.type);
  if (op.flat) return (std::uint64_t{op.length} * eb + atom_bytes - 1) / atom_bytes * atom_bytes;
  const unsigned cpa = atom_bytes / eb;
  const std::uint64_t surfaces = (op.channels + cpa - 1) / cpa;
  return surfaces * op.height * op.width * atom_bytes;
}

std::vector<float> read_octav_input(const OctavOp& op, const models::ops::Memory& mem,
                                    unsigned atom_bytes) {
  const unsigned eb = element_bytes(op.type);
  std::vector<float> x(op.elements());
  auto check = [&](float v, std::size_t index) {
    if (std::isfinite(v)) return;
    std::string where = "element " + std::to_string(index);
    if (!op.flat) {
      const std::size_t hw = std::size_t{op.width} * op.height;
      where = "element (w " + std::to_string(index % op.width) + ", h " +
              std::to_string(index % hw / op.width) + ", c " + std::to_string(index / hw) + ")";
    }
    fail(where + " is " + (std::isnan(v) ? "NaN" : "infinite") + "; OCTAV needs finite values");
  };
  if (op.flat) {
    std::vector<std::uint8_t> raw(std::size_t{op.length} * eb);
    mem.read(op.src, raw.data(), raw.size());
    for (std::size_t i = 0; i < op.length; ++i) {
      x[i] = to_fp32(op.type, raw.data() + i * eb);
      check(x[i], i);
    }
    return x;
  }
  const unsigned cpa = atom_bytes / eb;
  const std::uint32_t surfaces = (op.channels + cpa - 1) / cpa;
  std::vector<std::uint8_t> line(std::size_t{op.width} * atom_bytes);
  for (std::uint32_t s = 0; s < surfaces; ++s) {
    for (std::uint32_t h = 0; h < op.height; ++h) {
      const std::uint64_t addr =
          op.src + std::uint64_t{s} * op.surface_stride + std::uint64_t{h} * op.line_stride;
      mem.read(addr, line.data(), line.size());
      for (std::uint32_t w = 0; w < op.width; ++w) {
        for (unsigned lane = 0; lane < cpa; ++lane) {
          const std::uint32_t c = s * cpa + lane;
          if (c >= op.channels) break;
          const std::size_t index = (std::size_t{c} * op.height + h) * op.width + w;
          x[index] = to_fp32(op.type, line.data() + std::size_t{w} * atom_bytes + lane * eb);
          check(x[index], index);
        }
      }
    }
  }
  return x;
}

OctavOutcome octav_sequence(const std::vector<float>& x, const OctavOp& op) {
  const models::OctavOptions& o = op.options;
  const models::GroupedTensor t(x.data(), op.shape(), op.grouping);
  const std::size_t groups = t.group_count();
  struct Run {
    double s = 0.0;
    double previous = -1.0;
    bool active = true;
  };
  std::vector<Run> runs(groups);
  OctavOutcome out;
  out.groups.resize(groups);
  // Pass 0: statistics, the degenerate groups, the initial guesses.
  for (std::size_t g = 0; g < groups; ++g) {
    const GroupStats st = group_stats(t.group_data(g), t.group_size(g), o.sign);
    models::ClipResult& r = out.groups[g];
    if (st.max_bits == 0 || st.max_bits == st.min_nonzero_bits) {
      r.clip = static_cast<double>(float_of_bits(st.max_bits));
      runs[g].active = false;
      continue;
    }
    switch (o.init) {
      case models::OctavInit::kHalfMax:
        runs[g].s = 0.5 * static_cast<double>(float_of_bits(st.max_bits));
        break;
      case models::OctavInit::kZero:
        runs[g].s = 0.0;
        break;
      case models::OctavInit::kValue:
        runs[g].s = o.initial_value;
        break;
      case models::OctavInit::kRandom:
        fail("a random initial guess is not a mode of the unit");
    }
  }
  // One pass per iteration over every group still running.
  for (bool any = true; any;) {
    any = false;
    bool pass = false;
    for (std::size_t g = 0; g < groups; ++g) {
      Run& run = runs[g];
      if (!run.active) continue;
      pass = true;
      const models::OctavReductions red =
          models::octav_reduce(t.group_data(g), t.group_size(g), run.s, o.sign);
      const double next = models::octav_update(red, o.bits, o.sign);
      models::ClipResult& r = out.groups[g];
      ++r.iterations;
      const models::OctavConvergence c =
          models::octav_convergence(run.previous, run.s, next, o.tolerance);
      r.clip = c.clip;
      if (c.converged || r.iterations >= o.max_iterations) {
        run.active = false;
        r.converged = c.converged;
        continue;
      }
      run.previous = run.s;
      run.s = next;
      any = true;
    }
    if (pass) ++out.iterations;
  }
  out.clips.resize(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    out.clips[g] = static_cast<float>(out.groups[g].clip);
    if (!out.groups[g].converged) {
      out.converged = false;
      ++out.unconverged_groups;
    }
  }
  return out;
}

OctavTraffic octav_traffic(const HwConfig& hw, const OctavOp& op, unsigned passes) {
  OctavTraffic t;
  t.passes = passes;
  t.elements = op.elements() * passes;
  const std::uint64_t bytes = octav_pass_bytes(op, hw.dla.memory_atomic_size);
  t.buffered = bytes <= hw.octav.buffer_bytes;
  t.dram_bytes = t.buffered ? bytes : bytes * passes;
  return t;
}

dla::OpResult run_octav(const HwConfig& hw, const dla::RegRead& regs, const LutTables& /*lut*/,
                        models::ops::Memory& mem) {
  const unsigned atom = hw.dla.memory_atomic_size;
  const OctavOp op = decode_octav(regs, atom);
  const std::vector<float> x = read_octav_input(op, mem, atom);
  const OctavOutcome out = octav_sequence(x, op);
  const OctavTraffic traffic = octav_traffic(hw, op, 1 + out.iterations);
  dla::OpResult r;
  if (op.grouping.kind != models::GroupKind::kTensor) {
    std::vector<std::uint8_t> bytes(out.clips.size() * 4);
    for (std::size_t g = 0; g < out.clips.size(); ++g) {
      const std::uint32_t b = bits_of_float(out.clips[g]);
      for (int k = 0; k < 4; ++k) bytes[g * 4 + k] = static_cast<std::uint8_t>(b >> (8 * k));
    }
    mem.write(op.result_addr, bytes.data(), bytes.size());
    r.bytes_written = bytes.size();
  }
  r.status.emplace_back(R::OCTAV::D_CLIP_RESULT::kAddr, bits_of_float(out.clips[0]));
  r.status.emplace_back(R::OCTAV::D_ITERATIONS::kAddr, out.iterations);
  r.status.emplace_back(R::OCTAV::D_CONVERGED::kAddr, out.converged ? 1u : 0u);
  r.status.emplace_back(R::OCTAV::D_GROUPS::kAddr, static_cast<std::uint32_t>(out.clips.size()));
  r.status.emplace_back(R::OCTAV::D_UNCONVERGED_GROUPS::kAddr, out.unconverged_groups);
  r.status.emplace_back(R::OCTAV::D_PERF_PASSES::kAddr, traffic.passes);
  r.status.emplace_back(R::OCTAV::D_PERF_ELEMENTS::kAddr, sat32(traffic.elements));
  r.status.emplace_back(R::OCTAV::D_PERF_READ_BYTES::kAddr, sat32(traffic.dram_bytes));
  if (op.auto_program == AutoProgram::kFakeQuant) {
    add_fake_quant_writes(r, out.clips[0], op);
  } else if (op.auto_program != AutoProgram::kNone) {
    const models::ConvertorParams p = models::clip_to_convertor(static_cast<double>(out.clips[0]),
                                                                op.options.bits, op.options.sign);
    const auto offset = static_cast<std::uint32_t>(p.offset);
    const auto scale = static_cast<std::uint32_t>(static_cast<std::uint16_t>(p.scale));
    if (op.auto_program == AutoProgram::kSdp) {
      r.status.emplace_back(R::SDP::D_CVT_OFFSET::kAddr, offset);
      r.status.emplace_back(R::SDP::D_CVT_SCALE::kAddr, scale);
      r.status.emplace_back(R::SDP::D_CVT_SHIFT::kAddr, p.shift);
      if (op.auto_clamp) {
        const models::ClampBounds b =
            models::clip_to_clamp(static_cast<double>(out.clips[0]), op.options.sign);
        r.status.emplace_back(R::SDP::D_DP_BS_ALU_SRC_VALUE::kAddr,
                              static_cast<std::uint16_t>(b.hi));
        r.status.emplace_back(R::SDP::D_DP_BN_ALU_SRC_VALUE::kAddr,
                              static_cast<std::uint16_t>(b.lo));
      }
    } else {
      r.status.emplace_back(R::CDP::D_DATOUT_OFFSET::kAddr, offset);
      r.status.emplace_back(R::CDP::D_DATOUT_SCALE::kAddr, scale);
      r.status.emplace_back(R::CDP::D_DATOUT_SHIFTER::kAddr, p.shift);
    }
  }
  r.in.width = op.flat ? op.length : op.width;
  r.in.height = op.flat ? 1 : op.height;
  r.in.channels = op.flat ? 1 : op.channels;
  r.bytes_read = traffic.dram_bytes;
  r.descriptor = std::make_shared<OctavDescriptor>(op, traffic.passes,
                                                   static_cast<std::uint32_t>(out.clips.size()));
  return r;
}

}  // namespace octasim::octav
