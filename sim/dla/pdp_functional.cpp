// PDP + PDP_RDMA register decode and the zero-time pooling layer (models/ops/pdp).
#include "sim/dla/pdp_functional.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/ops/pdp.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::dla {

namespace {

namespace P = regs::PDP;
namespace PR = regs::PDP_RDMA;
using models::ops::PdpMethod;
using models::ops::PdpPrecision;

[[noreturn]] void pdp_fail(const std::string& what) {
  throw std::runtime_error("PDP: " + what);
}

void require_equal(const char* what, std::uint32_t pdp, std::uint32_t rdma) {
  if (pdp != rdma) {
    pdp_fail(std::string(what) + " differs between PDP (" + std::to_string(pdp) +
             ") and PDP_RDMA (" + std::to_string(rdma) + ")");
  }
}

PdpPrecision decode_pdp_precision(const HwConfig& hw, std::uint32_t format) {
  switch (format) {
    case P::D_DATA_FORMAT::INPUT_DATA_INT8:
      if (!hw.dla.feature_int8) throw_not_present(hw, "PDP INT8");
      return PdpPrecision::kInt8;
    case P::D_DATA_FORMAT::INPUT_DATA_INT16:
      if (!hw.dla.feature_int16) throw_not_present(hw, "PDP INT16");
      return PdpPrecision::kInt16;
    case P::D_DATA_FORMAT::INPUT_DATA_FP16:
      if (!hw.dla.feature_fp16) throw_not_present(hw, "PDP FP16");
      return PdpPrecision::kFp16;
    default:
      pdp_fail("D_DATA_FORMAT.INPUT_DATA " + std::to_string(format) +
               " is not INT8, INT16 or FP16");
  }
}

std::uint32_t field(const RegRead& regs, std::uint32_t addr, regs::Field f) {
  return f.get(regs(addr));
}

bool on_the_fly(std::uint32_t op_mode) {
  return P::D_OPERATION_MODE_CFG::FLYING_MODE.get(op_mode) ==
         P::D_OPERATION_MODE_CFG::FLYING_MODE_ON_FLYING;
}

// The D_OPERATION_MODE_CFG method. From memory (OFF_FLYING) PDP_RDMA must agree; on the fly
// PDP_RDMA takes no part (NVDLA's programming guide: "PDP-RDMA is not necessary to config").
PdpMethod decode_method(const RegRead& regs, std::uint32_t op_mode) {
  if (!on_the_fly(op_mode) && PR::D_FLYING_MODE::FLYING_MODE.get(regs(PR::D_FLYING_MODE::kAddr)) !=
                                  PR::D_FLYING_MODE::FLYING_MODE_OFF_FLYING) {
    pdp_fail("PDP_RDMA D_FLYING_MODE is ON_FLYING while PDP reads from memory (OFF_FLYING)");
  }
  const std::uint32_t method = P::D_OPERATION_MODE_CFG::POOLING_METHOD.get(op_mode);
  switch (method) {
    case P::D_OPERATION_MODE_CFG::POOLING_METHOD_POOLING_METHOD_AVERAGE:
      return PdpMethod::kAverage;
    case P::D_OPERATION_MODE_CFG::POOLING_METHOD_POOLING_METHOD_MAX:
      return PdpMethod::kMax;
    case P::D_OPERATION_MODE_CFG::POOLING_METHOD_POOLING_METHOD_MIN:
      return PdpMethod::kMin;
    default:
      pdp_fail("D_OPERATION_MODE_CFG.POOLING_METHOD " + std::to_string(method) +
               " is not AVERAGE, MAX or MIN");
  }
}

// The input and output cubes; PDP_RDMA repeats the input cube when it reads it.
void decode_cubes(const RegRead& regs, bool flying, models::ops::PdpLayerParams& layer) {
  layer.in_width =
      field(regs, P::D_DATA_CUBE_IN_WIDTH::kAddr, P::D_DATA_CUBE_IN_WIDTH::CUBE_IN_WIDTH) + 1;
  layer.in_height =
      field(regs, P::D_DATA_CUBE_IN_HEIGHT::kAddr, P::D_DATA_CUBE_IN_HEIGHT::CUBE_IN_HEIGHT) + 1;
  layer.channels =
      field(regs, P::D_DATA_CUBE_IN_CHANNEL::kAddr, P::D_DATA_CUBE_IN_CHANNEL::CUBE_IN_CHANNEL) + 1;
  layer.out_width =
      field(regs, P::D_DATA_CUBE_OUT_WIDTH::kAddr, P::D_DATA_CUBE_OUT_WIDTH::CUBE_OUT_WIDTH) + 1;
  layer.out_height =
      field(regs, P::D_DATA_CUBE_OUT_HEIGHT::kAddr, P::D_DATA_CUBE_OUT_HEIGHT::CUBE_OUT_HEIGHT) + 1;
  if (flying) return;
  require_equal(
      "input cube width", layer.in_width,
      field(regs, PR::D_DATA_CUBE_IN_WIDTH::kAddr, PR::D_DATA_CUBE_IN_WIDTH::CUBE_IN_WIDTH) + 1);
  require_equal(
      "input cube height", layer.in_height,
      field(regs, PR::D_DATA_CUBE_IN_HEIGHT::kAddr, PR::D_DATA_CUBE_IN_HEIGHT::CUBE_IN_HEIGHT) + 1);
  require_equal(
      "input cube channels", layer.channels,
      field(regs, PR::D_DATA_CUBE_IN_CHANNEL::kAddr, PR::D_DATA_CUBE_IN_CHANNEL::CUBE_IN_CHANNEL) +
          1);
}

// The pooling kernel, its reciprocals and the padding (values at cfg.precision).
void decode_kernel(const RegRead& regs, models::ops::PdpConfig& cfg) {
  const std::uint32_t kernel = regs(P::D_POOLING_KERNEL_CFG::kAddr);
  cfg.kernel_width = P::D_POOLING_KERNEL_CFG::KERNEL_WIDTH.get(kernel) + 1;
  cfg.kernel_height = P::D_POOLING_KERNEL_CFG::KERNEL_HEIGHT.get(kernel) + 1;
  cfg.stride_width = P::D_POOLING_KERNEL_CFG::KERNEL_STRIDE_WIDTH.get(kernel) + 1;
  cfg.stride_height = P::D_POOLING_KERNEL_CFG::KERNEL_STRIDE_HEIGHT.get(kernel) + 1;
  cfg.recip_kernel_width =
      field(regs, P::D_RECIP_KERNEL_WIDTH::kAddr, P::D_RECIP_KERNEL_WIDTH::RECIP_KERNEL_WIDTH);
  cfg.recip_kernel_height =
      field(regs, P::D_RECIP_KERNEL_HEIGHT::kAddr, P::D_RECIP_KERNEL_HEIGHT::RECIP_KERNEL_HEIGHT);

  const std::uint32_t padding = regs(P::D_POOLING_PADDING_CFG::kAddr);
  cfg.pad_left = P::D_POOLING_PADDING_CFG::PAD_LEFT.get(padding);
  cfg.pad_right = P::D_POOLING_PADDING_CFG::PAD_RIGHT.get(padding);
  cfg.pad_top = P::D_POOLING_PADDING_CFG::PAD_TOP.get(padding);
  cfg.pad_bottom = P::D_POOLING_PADDING_CFG::PAD_BOTTOM.get(padding);
  const std::uint32_t pad_regs[7] = {
      field(regs, P::D_POOLING_PADDING_VALUE_1_CFG::kAddr,
            P::D_POOLING_PADDING_VALUE_1_CFG::PAD_VALUE_1X),
      field(regs, P::D_POOLING_PADDING_VALUE_2_CFG::kAddr,
            P::D_POOLING_PADDING_VALUE_2_CFG::PAD_VALUE_2X),
      field(regs, P::D_POOLING_PADDING_VALUE_3_CFG::kAddr,
            P::D_POOLING_PADDING_VALUE_3_CFG::PAD_VALUE_3X),
      field(regs, P::D_POOLING_PADDING_VALUE_4_CFG::kAddr,
            P::D_POOLING_PADDING_VALUE_4_CFG::PAD_VALUE_4X),
      field(regs, P::D_POOLING_PADDING_VALUE_5_CFG::kAddr,
            P::D_POOLING_PADDING_VALUE_5_CFG::PAD_VALUE_5X),
      field(regs, P::D_POOLING_PADDING_VALUE_6_CFG::kAddr,
            P::D_POOLING_PADDING_VALUE_6_CFG::PAD_VALUE_6X),
      field(regs, P::D_POOLING_PADDING_VALUE_7_CFG::kAddr,
            P::D_POOLING_PADDING_VALUE_7_CFG::PAD_VALUE_7X),
  };
  if (cfg.precision == PdpPrecision::kFp16) {
    // FP16 ignores the padding values (precision.rst, "PDP convertors") and may flush NaNs.
    cfg.nan_to_zero =
        field(regs, P::D_NAN_FLUSH_TO_ZERO::kAddr, P::D_NAN_FLUSH_TO_ZERO::NAN_TO_ZERO) != 0;
    return;
  }
  for (unsigned n = 1; n <= 7; ++n) {
    cfg.pad_value[n - 1] = models::ops::pdp_pad_value(pad_regs[n - 1], n, cfg.precision);
  }
}

// SPLIT_NUM and the partial widths of a split layer, which PDP_RDMA repeats.
void decode_splits(const RegRead& regs, std::uint32_t op_mode, models::ops::PdpLayerParams& layer) {
  const models::ops::PdpConfig& cfg = layer.cfg;
  layer.split_num = P::D_OPERATION_MODE_CFG::SPLIT_NUM.get(op_mode);
  if (on_the_fly(op_mode)) {
    // NVDLA's mode 0 (input from SDP) has no split width; D_PARTIAL_WIDTH_* are not used.
    if (layer.split_num != 0) {
      pdp_fail("SPLIT_NUM " + std::to_string(layer.split_num) +
               " with FLYING_MODE=ON_FLYING: PDP pools SDP's output in one pass (split width only "
               "when reading from memory, OFF_FLYING)");
    }
    return;
  }
  require_equal("SPLIT_NUM", layer.split_num,
                field(regs, PR::D_OPERATION_MODE_CFG::kAddr, PR::D_OPERATION_MODE_CFG::SPLIT_NUM));
  if (layer.split_num == 0) return;
  const std::uint32_t in = regs(P::D_PARTIAL_WIDTH_IN::kAddr);
  const std::uint32_t out = regs(P::D_PARTIAL_WIDTH_OUT::kAddr);
  layer.partial_in_first = P::D_PARTIAL_WIDTH_IN::PARTIAL_WIDTH_IN_FIRST.get(in) + 1;
  layer.partial_in_mid = P::D_PARTIAL_WIDTH_IN::PARTIAL_WIDTH_IN_MID.get(in) + 1;
  layer.partial_in_last = P::D_PARTIAL_WIDTH_IN::PARTIAL_WIDTH_IN_LAST.get(in) + 1;
  layer.partial_out_first = P::D_PARTIAL_WIDTH_OUT::PARTIAL_WIDTH_OUT_FIRST.get(out) + 1;
  layer.partial_out_mid = P::D_PARTIAL_WIDTH_OUT::PARTIAL_WIDTH_OUT_MID.get(out) + 1;
  layer.partial_out_last = P::D_PARTIAL_WIDTH_OUT::PARTIAL_WIDTH_OUT_LAST.get(out) + 1;
  // The RDMA fetches the splits (with their kernel overlap) from its own copy of these.
  require_equal("D_PARTIAL_WIDTH_IN", in, regs(PR::D_PARTIAL_WIDTH_IN::kAddr));
  const std::uint32_t rdma_kernel = regs(PR::D_POOLING_KERNEL_CFG::kAddr);
  require_equal("kernel width", cfg.kernel_width,
                PR::D_POOLING_KERNEL_CFG::KERNEL_WIDTH.get(rdma_kernel) + 1);
  require_equal("kernel stride width", cfg.stride_width,
                PR::D_POOLING_KERNEL_CFG::KERNEL_STRIDE_WIDTH.get(rdma_kernel) + 1);
}

// The source (PDP_RDMA) and destination (PDP) surfaces and the RAMs they are in.
void decode_surfaces(const HwConfig& hw, const RegRead& regs, bool flying,
                     models::ops::PdpLayerParams& layer) {
  if (!flying &&
      PR::D_SRC_RAM_CFG::SRC_RAM_TYPE.get(regs(PR::D_SRC_RAM_CFG::kAddr)) ==
          PR::D_SRC_RAM_CFG::SRC_RAM_TYPE_CV &&
      !hw.dla.secondary_memif) {
    throw_not_present(hw, "PDP_RDMA CV-SRAM source (D_SRC_RAM_CFG.SRC_RAM_TYPE=CV)");
  }
  if (P::D_DST_RAM_CFG::DST_RAM_TYPE.get(regs(P::D_DST_RAM_CFG::kAddr)) ==
          P::D_DST_RAM_CFG::DST_RAM_TYPE_CV &&
      !hw.dla.secondary_memif) {
    throw_not_present(hw, "PDP CV-SRAM destination (D_DST_RAM_CFG.DST_RAM_TYPE=CV)");
  }

  layer.atom_bytes = hw.dla.memory_atomic_size;
  layer.src =
      read_address(hw, regs, PR::D_SRC_BASE_ADDR_HIGH::kAddr, PR::D_SRC_BASE_ADDR_LOW::kAddr,
                   PR::D_SRC_RAM_CFG::SRC_RAM_TYPE.get(regs(PR::D_SRC_RAM_CFG::kAddr)));
  layer.src_line_stride = regs(PR::D_SRC_LINE_STRIDE::kAddr);
  layer.src_surface_stride = regs(PR::D_SRC_SURFACE_STRIDE::kAddr);
  layer.dst = read_address(hw, regs, P::D_DST_BASE_ADDR_HIGH::kAddr, P::D_DST_BASE_ADDR_LOW::kAddr,
                           P::D_DST_RAM_CFG::DST_RAM_TYPE.get(regs(P::D_DST_RAM_CFG::kAddr)));
  layer.dst_line_stride = regs(P::D_DST_LINE_STRIDE::kAddr);
  layer.dst_surface_stride = regs(P::D_DST_SURFACE_STRIDE::kAddr);
}

// PDP + PDP_RDMA registers -> the pooling layer, checked (in this order, which fixes which error
// a badly programmed layer reports first).
std::shared_ptr<const PdpDescriptor> decode_pdp(const HwConfig& hw, const RegRead& regs) {
  if (!hw.dla.pdp) throw_not_present(hw, "PDP");
  const std::uint32_t op_mode = regs(P::D_OPERATION_MODE_CFG::kAddr);
  const bool flying = on_the_fly(op_mode);
  models::ops::PdpLayerParams layer;
  models::ops::PdpConfig& cfg = layer.cfg;
  cfg.method = decode_method(regs, op_mode);
  const std::uint32_t format = P::D_DATA_FORMAT::INPUT_DATA.get(regs(P::D_DATA_FORMAT::kAddr));
  if (!flying) {
    require_equal("D_DATA_FORMAT", format,
                  PR::D_DATA_FORMAT::INPUT_DATA.get(regs(PR::D_DATA_FORMAT::kAddr)));
  }
  cfg.precision = decode_pdp_precision(hw, format);
  decode_cubes(regs, flying, layer);
  decode_kernel(regs, cfg);
  decode_splits(regs, op_mode, layer);
  decode_surfaces(hw, regs, flying, layer);
  return std::make_shared<const PdpDescriptor>(layer, flying);
}

// The OpResult of a run: status, cubes, kernel, bytes and the DMA surfaces.
OpResult pdp_result(const models::ops::PdpLayerParams& layer,
                    const models::ops::PdpLayerResult& run) {
  const models::ops::PdpConfig& cfg = layer.cfg;
  OpResult result;
  // FP16 statistics (models::ops::run_pdp_layer counts them; integer layers see none).
  result.status = {{P::D_NAN_INPUT_NUM::kAddr, run.nan_input},
                   {P::D_INF_INPUT_NUM::kAddr, run.inf_input},
                   {P::D_NAN_OUTPUT_NUM::kAddr, run.nan_output}};
  result.in = {layer.in_width, layer.in_height, layer.channels};
  result.out = {layer.out_width, layer.out_height, layer.channels};
  result.kernel_width = cfg.kernel_width;
  result.kernel_height = cfg.kernel_height;
  result.stride_width = cfg.stride_width;
  result.stride_height = cfg.stride_height;
  result.bytes_read = run.bytes_read;
  result.bytes_written = run.bytes_written;
  // Split by split, surface by surface (models::ops::run_pdp_layer's order).
  const unsigned epa = layer.atom_bytes / models::ops::pdp_element_bytes(cfg.precision);
  const std::uint32_t surfaces = (layer.channels + epa - 1) / epa;
  for (const models::ops::PdpSplit& split : models::ops::pdp_splits(layer)) {
    result.dma.input.push_back(
        feature_region(layer.src + static_cast<std::uint64_t>(split.in_col * layer.atom_bytes),
                       std::uint64_t{split.in_width} * layer.atom_bytes, layer.in_height, surfaces,
                       layer.src_line_stride, layer.src_surface_stride));
    result.dma.output.push_back(
        feature_region(layer.dst + std::uint64_t{split.out_col} * layer.atom_bytes,
                       std::uint64_t{split.out_width} * layer.atom_bytes, layer.out_height,
                       surfaces, layer.dst_line_stride, layer.dst_surface_stride));
  }
  return result;
}

// A flying PDP's view of memory: reads come from SDP's output cube, writes go to memory.
class FlyingInput final : public models::ops::Memory {
 public:
  FlyingInput(const FlyingCube& in, models::ops::Memory& mem) : in_(in), mem_(mem) {}
  void read(std::uint64_t addr, std::uint8_t* dst, std::size_t size) const override {
    if (addr > in_.data.size() || size > in_.data.size() - addr) {
      throw std::logic_error("PDP read outside SDP's flying output cube");
    }
    std::copy_n(in_.data.begin() + static_cast<std::ptrdiff_t>(addr), size, dst);
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::size_t size) override {
    mem_.write(addr, src, size);
  }

 private:
  const FlyingCube& in_;
  models::ops::Memory& mem_;
};

}  // namespace

OpResult run_pdp(const HwConfig& hw, const RegRead& regs, models::ops::Memory& mem) {
  if (on_the_fly(regs(P::D_OPERATION_MODE_CFG::kAddr))) {
    pdp_fail(
        "FLYING_MODE=ON_FLYING: a flying PDP pools SDP's output and starts with the SDP or "
        "convolution operation whose D_FEATURE_MODE_CFG.OUTPUT_DST is PDP");
  }
  std::shared_ptr<const PdpDescriptor> decoded = decode_pdp(hw, regs);
  const models::ops::PdpLayerParams& layer = decoded->layer;
  OpResult r = pdp_result(layer, models::ops::run_pdp_layer(layer, mem));
  r.descriptor = std::move(decoded);
  return r;
}

OpResult run_pdp_on_the_fly(const HwConfig& hw, const RegRead& regs, const FlyingCube& in,
                            models::ops::Memory& mem) {
  if (!on_the_fly(regs(P::D_OPERATION_MODE_CFG::kAddr))) {
    pdp_fail(
        "SDP sends its output to PDP (D_FEATURE_MODE_CFG.OUTPUT_DST=PDP) but PDP's "
        "D_OPERATION_MODE_CFG.FLYING_MODE is OFF_FLYING");
  }
  std::shared_ptr<const PdpDescriptor> decoded = decode_pdp(hw, regs);
  models::ops::PdpLayerParams layer = decoded->layer;
  const unsigned bytes = models::ops::pdp_element_bytes(layer.cfg.precision);
  if (bytes != in.element_bytes) {
    pdp_fail("D_DATA_FORMAT takes " + std::to_string(bytes) +
             "-byte elements but SDP's OUT_PRECISION" + " sends " +
             std::to_string(in.element_bytes) + "-byte elements");
  }
  if (layer.in_width != in.width || layer.in_height != in.height || layer.channels != in.channels) {
    pdp_fail("input cube " + std::to_string(layer.in_width) + "x" +
             std::to_string(layer.in_height) + "x" + std::to_string(layer.channels) +
             " differs from SDP's output cube " + std::to_string(in.width) + "x" +
             std::to_string(in.height) + "x" + std::to_string(in.channels) +
             " it pools on the fly");
  }
  // PDP reads the flying cube as a packed surface at address 0 of FlyingInput.
  layer.src = 0;
  layer.src_line_stride = std::uint64_t{in.width} * in.atom_bytes;
  layer.src_surface_stride = layer.src_line_stride * in.height;
  FlyingInput source(in, mem);
  models::ops::PdpLayerResult run = models::ops::run_pdp_layer(layer, source);
  // NVDLA counts input NaN/infinities as PDP_RDMA reads them; on the fly it reads nothing.
  run.nan_input = run.inf_input = 0;
  OpResult r = pdp_result(layer, run);
  r.bytes_on_the_fly = in.data.size();
  r.bytes_read = 0;
  r.dma.input.clear();
  r.descriptor = std::move(decoded);
  return r;
}

}  // namespace octasim::dla
