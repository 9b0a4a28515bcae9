// The PPU's software interface as data: the push-buffer command format the front end executes
// and the kernel descriptors a LAUNCH command points at. Shared by the simulator (sim/ppu
// decodes it) and firmware (PushBuffer below encodes it), like the register map. Plain C++.
//
// A push buffer is a sequence of little-endian 32-bit words in device memory. Every command is
// one header word — opcode in bits 31..24, payload length in words in bits 7..0 — followed by
// exactly that many payload words:
//
//   NOP            0 words
//   REG_WRITE      2 words: CSB address, value          (a DLA/OCTAV register, as the host's)
//   WAIT_DLA       1 word:  GLB S_INTR_STATUS mask       (waits until every bit is set, then
//                                                         clears them: write one to clear)
//   LAUNCH         2 words: descriptor address low, high (runs a kernel; the channel continues
//                                                         when it has finished: stream order)
//   SEM_ACQUIRE    3 words: address low, high, value     (waits until the 32-bit word at the
//                                                         address is >= value)
//   SEM_RELEASE    3 words: address low, high, value     (writes value to the word)
//   MEMCPY         5 words: dst low, high, src low, high, bytes
//   INTERRUPT      0 words                               (raises GLB bit 24+channel)
//   SYNCPT_WAIT    2 words: syncpoint, value             (waits until syncpoint S_SYNCPT<n>,
//                                                         the count of raises of GLB bit n,
//                                                         has reached value: count - value,
//                                                         as a signed 32-bit number, >= 0;
//                                                         n below kSyncpoints, else
//                                                         BAD_SYNCPOINT)
//
// Commands of one channel run in order, each after the previous one has finished; channels run
// concurrently, so SEM_ACQUIRE/SEM_RELEASE order work across channels (a DLA layer driven by one
// channel, a PPU kernel by another), and SYNCPT_WAIT orders a channel after DLA work the host
// programmed: every engine group's done interrupt counts in its syncpoint as it is raised, so a
// channel waits for "the k-th completion of SDP group 0" however late the host looks (the host
// clears the level bit; the count stays). A malformed command stops its channel in the ERROR state
// with a code and the byte offset of the command (registers S_CH<n>_ERROR, _ERROR_OFFSET) and
// raises the channel's interrupt.
#pragma once

#include <cstdint>
#include <vector>

namespace octasim::ppu_format {

// The front end's CSB registers (register map unit PPU): channel n's block starts at
// kCsbBase + n * kChannelStride; offsets of its registers within the block.
inline constexpr std::uint32_t kCsbBase = 0x13000;
inline constexpr std::uint32_t kChannelStride = 0x40;
inline constexpr unsigned kChannels = 4;
inline constexpr std::uint32_t kPbBaseLow = 0x00, kPbBaseHigh = 0x04, kPbSize = 0x08, kPut = 0x0c,
                               kGet = 0x10, kStatus = 0x14, kError = 0x18, kErrorOffset = 0x1c;
// GLB S_INTR_STATUS bit of channel 0's interrupt; channel n raises bit kInterruptBit0 + n.
inline constexpr unsigned kInterruptBit0 = 24;
// The syncpoints (read-only): S_SYNCPT<b> at kSyncptBase + 4 * b counts the raises of GLB
// S_INTR_STATUS bit b (the device's engine completions and the channels' INTERRUPTs).
inline constexpr std::uint32_t kSyncptBase = 0x13100;
inline constexpr unsigned kSyncpoints = 28;

// A CSB address in the front end's page: its channel and the offset within the channel's block
// (channel -1: not a front-end register).
struct ChannelRegister {
  int channel = -1;
  std::uint32_t offset = 0;
};
[[nodiscard]] constexpr ChannelRegister channel_register(std::uint32_t addr) {
  if (addr < kCsbBase || addr >= kCsbBase + kChannels * kChannelStride) return {};
  return {static_cast<int>((addr - kCsbBase) / kChannelStride), (addr - kCsbBase) % kChannelStride};
}
// The channel whose doorbell (PUT) a CSB write to `addr` rings, or -1.
[[nodiscard]] constexpr int doorbell_channel(std::uint32_t addr) {
  const ChannelRegister r = channel_register(addr);
  return r.offset == kPut ? r.channel : -1;
}

enum class Opcode : std::uint8_t {
  kNop = 0x00,
  kRegWrite = 0x01,
  kWaitDla = 0x02,
  kLaunch = 0x03,
  kSemAcquire = 0x04,
  kSemRelease = 0x05,
  kMemcpy = 0x06,
  kInterrupt = 0x07,
  kSyncptWait = 0x08,
};

// Payload words each opcode takes (anything else is BAD_LENGTH); -1 for an unknown opcode.
[[nodiscard]] constexpr int payload_words(std::uint8_t opcode) {
  switch (static_cast<Opcode>(opcode)) {
    case Opcode::kNop:
      return 0;
    case Opcode::kRegWrite:
      return 2;
    case Opcode::kWaitDla:
      return 1;
    case Opcode::kLaunch:
      return 2;
    case Opcode::kSemAcquire:
      return 3;
    case Opcode::kSemRelease:
      return 3;
    case Opcode::kMemcpy:
      return 5;
    case Opcode::kInterrupt:
      return 0;
    case Opcode::kSyncptWait:
      return 2;
  }
  return -1;
}

[[nodiscard]] constexpr std::uint32_t header(Opcode op) {
  return static_cast<std::uint32_t>(op) << 24 |
         static_cast<std::uint32_t>(payload_words(static_cast<std::uint8_t>(op)));
}

// Error codes of S_CH<n>_ERROR.CODE (the register map names them too).
enum class ErrorCode : std::uint8_t {
  kNone = 0,
  kUnknownCommand = 1,
  kBadLength = 2,
  kPbOutOfRange = 3,  // PUT beyond PB_SIZE, not a multiple of 4, or a command running past PUT
  kBadKernel = 4,     // a descriptor the PPU cannot run (kind, type, shape, tiles)
  kBadAddress = 5,    // memory outside the device's address space
  kBadRegister = 6,   // REG_WRITE to an address where no register lives
  kBadSyncpoint = 7,  // SYNCPT_WAIT on a syncpoint number at or above kSyncpoints
};

// ---- Kernel descriptors (LAUNCH) -------------------------------------------------------------
// 32 little-endian 32-bit words at a 4-byte-aligned address. Word 0 is the kind; the rest
// depends on it. Addresses are two words (low, high). Unused words are zero.
enum class KernelKind : std::uint32_t {
  kGemm = 1,         // D = A x B + C on tensor cores (or the FMA path)
  kConv = 2,         // implicit-GEMM convolution, NHWC input, KRSC weights, NHWC output
  kElementwise = 3,  // D[i] = op(A[i], B[i]) over FP32 vectors
  kReduce = 4,       // D[r] = sum over columns of A[r][*] (FP32 rows)
  kSoftmax = 5,      // softmax over one axis of an FP16 feature surface (models/ops/softmax.hpp)
  kNode = 6,  // any ONNX operator of the registry, from a kernel image (models/ops/ppu_node.hpp)
};

// How a shape that breaks the tensor-core rules runs (GEMM/conv flags bits 13..12).
enum class ShapePolicy : std::uint32_t {
  kPad = 0,       // pad M, N, K to the type's multiple with masked lanes (same result)
  kFallback = 1,  // run on the FMA (non-tensor) path
};

enum class ElementwiseOp : std::uint32_t { kAdd = 0, kMul = 1, kRelu = 2 };

inline constexpr unsigned kDescriptorWords = 32;

// Word indices.
namespace gemm {
inline constexpr unsigned kKind = 0;
inline constexpr unsigned kType = 1;   // models::GemmType index: 0 fp16_fp32, 1 fp16_fp16,
                                       // 2 bf16_fp32, 3 int8_int32, 4 int4_int32, 5 fp32
inline constexpr unsigned kFlags = 2;  // bit 0: C present; bits 13..12: ShapePolicy;
                                       // bit 16: split-precision FP32 (type must be fp32)
inline constexpr unsigned kM = 3, kN = 4, kK = 5;
inline constexpr unsigned kA = 6, kB = 8, kC = 10, kD = 12;       // address pairs
inline constexpr unsigned kTileM = 14, kTileN = 15, kTileK = 16;  // 0: the PPU's default
// Split precision (flags bit 16): format 0 BF16, 1 FP16; parts 1..3; products 1, 3 or 6;
// residual scale as a signed power of two.
inline constexpr unsigned kSplitFormat = 17, kSplitParts = 18, kSplitProducts = 19,
                          kSplitScaleLog2 = 20;
}  // namespace gemm

namespace conv {
inline constexpr unsigned kKind = 0;
inline constexpr unsigned kType = 1;
inline constexpr unsigned kFlags = 2;  // bit 0: bias (as C, broadcast down the output rows);
                                       // bits 13..12: ShapePolicy
inline constexpr unsigned kN = 3, kH = 4, kW = 5, kC = 6, kKOut = 7, kR = 8, kS = 9;
inline constexpr unsigned kStrideH = 10, kStrideW = 11, kPadH = 12, kPadW = 13;
inline constexpr unsigned kInput = 14, kWeights = 16, kBias = 18, kOutput = 20;
inline constexpr unsigned kTileM = 22, kTileN = 23, kTileK = 24;
}  // namespace conv

namespace elementwise {
inline constexpr unsigned kKind = 0, kOp = 1, kCount = 2;
inline constexpr unsigned kA = 4, kB = 6, kD = 8;
}  // namespace elementwise

namespace reduce {
inline constexpr unsigned kKind = 0, kRows = 1, kCols = 2;
inline constexpr unsigned kA = 4, kD = 6;
}  // namespace reduce

// Softmax over one axis of a DLA feature surface (NVDLA's feature format, as
// firmware/dla/surface.hpp describes it): y = exp(x - max) / sum(exp(x - max)) along the axis,
// with models/ops/softmax.hpp's arithmetic. Input and output share the cube W x H x C and the
// atom; each has its address and strides (bytes). Every output atom is written whole: padding
// lanes beyond C are +0; stride gaps are not touched. The output may be the input (in place).
namespace softmax {
inline constexpr unsigned kKind = 0;
inline constexpr unsigned kType = 1;  // element type in NVDLA's encoding: 2 = FP16 (the only one)
inline constexpr unsigned kAxis = 2;  // SoftmaxAxis: 0 C, 1 H, 2 W
inline constexpr unsigned kWidth = 3, kHeight = 4, kChannels = 5;  // 1 .. 8192 each
inline constexpr unsigned kAtomBytes = 6;  // the memory atom: a power of two, 2 .. 128
inline constexpr unsigned kInput = 8;      // address pair
inline constexpr unsigned kInputLineStride = 10, kInputSurfaceStride = 11;
inline constexpr unsigned kOutput = 12;  // address pair
inline constexpr unsigned kOutputLineStride = 14, kOutputSurfaceStride = 15;
inline constexpr std::uint32_t kTypeFp16 = 2;
}  // namespace softmax

enum class SoftmaxAxis : std::uint32_t { kC = 0, kH = 1, kW = 2 };

// One ONNX node of the operator registry (the DLA's "GPU fallback"): the descriptor points at a
// kernel image in device memory, models/ops/ppu_node.hpp's NodeImage as encode_node writes it
// (the operator, its attributes and opset, each input's and output's place: FP16 or INT8 feature
// surfaces, dense FP32/INT64 constants). The PPU reads the image at LAUNCH (stream order) and
// computes the node with models::ops::run_node's arithmetic. A malformed image, an operator the
// registry does not know or a node its kernel refuses is kBadKernel; an image or a tensor outside
// memory kBadAddress.
namespace node {
inline constexpr unsigned kKind = 0;
inline constexpr unsigned kImage = 2;       // address pair: the kernel image
inline constexpr unsigned kImageBytes = 4;  // its length: 1 .. kMaxImageBytes
inline constexpr std::uint32_t kMaxImageBytes = std::uint32_t{1} << 20;  // 1 MiB
}  // namespace node

// ---- Encoding (firmware side) --------------------------------------------------------------
// Builds a push buffer word by word.
class PushBuffer {
 public:
  void nop() { words_.push_back(header(Opcode::kNop)); }
  void reg_write(std::uint32_t addr, std::uint32_t value) {
    words_.insert(words_.end(), {header(Opcode::kRegWrite), addr, value});
  }
  void wait_dla(std::uint32_t mask) {
    words_.insert(words_.end(), {header(Opcode::kWaitDla), mask});
  }
  void launch(std::uint64_t descriptor) {
    words_.insert(words_.end(), {header(Opcode::kLaunch), lo(descriptor), hi(descriptor)});
  }
  void sem_acquire(std::uint64_t addr, std::uint32_t value) {
    words_.insert(words_.end(), {header(Opcode::kSemAcquire), lo(addr), hi(addr), value});
  }
  void sem_release(std::uint64_t addr, std::uint32_t value) {
    words_.insert(words_.end(), {header(Opcode::kSemRelease), lo(addr), hi(addr), value});
  }
  void memcpy(std::uint64_t dst, std::uint64_t src, std::uint32_t bytes) {
    words_.insert(words_.end(),
                  {header(Opcode::kMemcpy), lo(dst), hi(dst), lo(src), hi(src), bytes});
  }
  void interrupt() { words_.push_back(header(Opcode::kInterrupt)); }
  void syncpt_wait(std::uint32_t syncpoint, std::uint32_t value) {
    words_.insert(words_.end(), {header(Opcode::kSyncptWait), syncpoint, value});
  }

  [[nodiscard]] const std::vector<std::uint32_t>& words() const { return words_; }
  [[nodiscard]] std::vector<std::uint8_t> bytes() const { return to_bytes(words_); }

  static std::uint32_t lo(std::uint64_t v) { return static_cast<std::uint32_t>(v); }
  static std::uint32_t hi(std::uint64_t v) { return static_cast<std::uint32_t>(v >> 32); }
  static std::vector<std::uint8_t> to_bytes(const std::vector<std::uint32_t>& words) {
    std::vector<std::uint8_t> out;
    out.reserve(words.size() * 4);
    for (std::uint32_t w : words) {
      for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(w >> (8 * i)));
    }
    return out;
  }

 private:
  std::vector<std::uint32_t> words_;
};

// A kernel descriptor being filled in.
struct Descriptor {
  std::vector<std::uint32_t> words = std::vector<std::uint32_t>(kDescriptorWords, 0);
  void set(unsigned index, std::uint32_t value) { words.at(index) = value; }
  void set_address(unsigned index, std::uint64_t addr) {
    words.at(index) = PushBuffer::lo(addr);
    words.at(index + 1) = PushBuffer::hi(addr);
  }
  [[nodiscard]] std::vector<std::uint8_t> bytes() const { return PushBuffer::to_bytes(words); }
};

// A feature surface's place in memory, as a softmax descriptor holds it (firmware::FeatureSurface
// gives address, line_stride and surface_stride).
struct SurfacePlace {
  std::uint64_t address = 0;
  std::uint32_t line_stride = 0, surface_stride = 0;
};

// The kSoftmax descriptor for a W x H x C FP16 cube in `atom_bytes`-byte atoms (the
// configuration's memory atom), `in` to `out`, over `axis`. No checks here: the PPU refuses a bad
// descriptor with kBadKernel (kBadAddress for surfaces outside memory).
[[nodiscard]] inline Descriptor softmax_descriptor(const SurfacePlace& in, const SurfacePlace& out,
                                                   std::uint32_t width, std::uint32_t height,
                                                   std::uint32_t channels, unsigned atom_bytes,
                                                   SoftmaxAxis axis) {
  namespace S = softmax;
  Descriptor d;
  d.set(S::kKind, static_cast<std::uint32_t>(KernelKind::kSoftmax));
  d.set(S::kType, S::kTypeFp16);
  d.set(S::kAxis, static_cast<std::uint32_t>(axis));
  d.set(S::kWidth, width);
  d.set(S::kHeight, height);
  d.set(S::kChannels, channels);
  d.set(S::kAtomBytes, atom_bytes);
  d.set_address(S::kInput, in.address);
  d.set(S::kInputLineStride, in.line_stride);
  d.set(S::kInputSurfaceStride, in.surface_stride);
  d.set_address(S::kOutput, out.address);
  d.set(S::kOutputLineStride, out.line_stride);
  d.set(S::kOutputSurfaceStride, out.surface_stride);
  return d;
}

// The kNode descriptor for the kernel image of `image_bytes` bytes at `image_address`
// (models::ops::encode_node's bytes, placed by the caller). No checks here: the PPU refuses a
// bad image with kBadKernel (kBadAddress outside memory).
[[nodiscard]] inline Descriptor node_descriptor(std::uint64_t image_address,
                                                std::uint32_t image_bytes) {
  Descriptor d;
  d.set(node::kKind, static_cast<std::uint32_t>(KernelKind::kNode));
  d.set_address(node::kImage, image_address);
  d.set(node::kImageBytes, image_bytes);
  return d;
}

}  // namespace octasim::ppu_format
