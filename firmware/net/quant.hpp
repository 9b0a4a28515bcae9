// How a network's tensors are quantized on the device: the options a user chooses (precision,
// activation clipping method, weight quantizer), the per-tensor result (clipping scalar, code
// bits, sign) and the calibration table that stores it as JSON keyed by ONNX tensor name.
//
// A tensor x is stored as integer codes q = clamp(round_half_away(x / step), -M, M) with
// step = clip / M and M = max_code(): the INT8 datapath is signed, so an 8-bit tensor has codes
// -127..127 (an unsigned one, after a ReLU, 0..127), a 4-bit tensor -7..7 or, unsigned, 0..15
// (4-bit codes held in INT8 elements). Weights are quantized per output channel, activations
// per tensor.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

namespace octasim::firmware::net {

// kMixed ("mixed"): FP16 values everywhere (as kFp16) except the MatMul and Gemm nodes on the
// PPU, which multiply INT8 codes on its tensor cores: each activation operand quantized per
// tensor with a calibrated clip (the calibration option's method, as for an INT8 network), a
// constant operand per output channel (the weight quantizer), exact INT32 sums, the product
// rescaled and rounded once to FP16 (models/ops/ppu_node.hpp MatmulQuant).
enum class NetPrecision : std::uint8_t { kInt8, kInt4, kInt16, kFp16, kMixed };
enum class ClipCalibration : std::uint8_t {
  kMax,
  kPercentile,
  kMseHistogram,
  kOctav,
  kOctavDevice
};
enum class WeightQuantizer : std::uint8_t { kMax, kMmse, kOctav };
// Input channel folding of the first convolution (fold.hpp): the layout the cost model picks,
// none, or one layout wherever the graph input can be folded.
enum class FoldMode : std::uint8_t { kAuto, kOff, kColumns, kFull };

[[nodiscard]] const char* precision_name(NetPrecision p);
[[nodiscard]] const char* calibration_name(ClipCalibration c);
[[nodiscard]] const char* weight_quantizer_name(WeightQuantizer w);
// Parsers for the CLI's spellings ("int8", "mse-hist", "mmse"); false when unknown.
[[nodiscard]] bool parse_precision(const std::string& s, NetPrecision& out);
[[nodiscard]] bool parse_calibration(const std::string& s, ClipCalibration& out);
[[nodiscard]] bool parse_weight_quantizer(const std::string& s, WeightQuantizer& out);
// Whether the network's surfaces hold FP16 values (fp16 and mixed), not quantized codes.
[[nodiscard]] inline bool fp16_values(NetPrecision p) {
  return p == NetPrecision::kFp16 || p == NetPrecision::kMixed;
}

enum class WinogradMode : std::uint8_t { kAuto, kOn, kOff };
[[nodiscard]] const char* winograd_mode_name(WinogradMode m);
[[nodiscard]] bool parse_winograd_mode(const std::string& s, WinogradMode& out);

// Winograd's price in accuracy for one convolution (winograd.hpp measure_winograd): the relative
// L2 error of its output (before the output's requantization, which both modes share) against
// the FP32 reference on the calibration images, in direct and in Winograd mode.
struct WinogradMeasure {
  double direct_error = 0.0;
  double winograd_error = 0.0;
  bool accepted = false;  // winograd_error <= (1 + budget) direct_error
};
// --winograd auto's budget: Winograd's error may exceed direct mode's by 10%.
inline constexpr double kDefaultWinogradBudget = 0.10;

// What the planner does with a node the DLA cannot run (plan.hpp).
enum class Fallback : std::uint8_t {
  kNone,  // refuse it (the one-line message naming node and op)
  kPpu,   // run it on the PPU when the configuration has one (`--fallback ppu`, the default)
};

struct QuantOptions {
  NetPrecision precision = NetPrecision::kInt8;
  ClipCalibration calibration = ClipCalibration::kMax;
  WeightQuantizer weights = WeightQuantizer::kMax;
  double percentile = 99.99;  // kPercentile
  FoldMode fold = FoldMode::kAuto;
  // Images per run with the fully-connected layers in multi-batch mode (batch.hpp); 1: one image.
  unsigned fc_batch = 1;
  // 3x3 convolutions in the convolution core's Winograd mode (winograd.hpp): kOn where the
  // hardware, the layer and the cost model allow it; kAuto there too, but only for the layers
  // whose measured output error in Winograd mode is within `winograd_budget` of direct mode's
  // (`winograd_measured`, filled by quantize_network); kOff: direct convolution everywhere.
  WinogradMode winograd = WinogradMode::kAuto;
  // Nodes the DLA cannot run: on the PPU (configurations with one) or refused.
  Fallback fallback = Fallback::kPpu;
  double winograd_budget = kDefaultWinogradBudget;
  std::map<std::string, WinogradMeasure> winograd_measured;  // by the layer's output tensor
  // A grouped convolution as one CONV layer per group where the surfaces allow it (groups.cpp:
  // Builder::conv_groups); false: one dense layer, zero weights between groups, everywhere.
  bool conv_groups = true;
};

// The code bits tensors and weights get at a precision where the datapath allows it (8 at
// INT8, 4 at INT4).
[[nodiscard]] int code_bits(NetPrecision p);

// One tensor as the device holds it.
struct TensorQuant {
  double clip = 0.0;  // s: the largest magnitude represented; step = s / max_code()
  int bits = 8;       // code bits: 8 or 4
  bool is_unsigned = false;
  // What calibration saw (informational; 0 when the table did not say).
  double min = 0.0, max = 0.0;
  std::string method;  // how clip was chosen ("max", "octav", "table", "input of ...")

  [[nodiscard]] int max_code() const;
  [[nodiscard]] double step() const;
  // The code of x (round half away from zero, clamped to the code range).
  [[nodiscard]] std::int32_t code(double x) const;
};

// The bits the calibrators of models/quant take for a tensor: their quantizer's codes are
// 0..2^B (unsigned, step s/2^B) or -2^(B-1)..2^(B-1) (signed, step s/2^(B-1)); B is chosen so
// that their step is nearest the device's s/M: 2^B = M + 1 (unsigned) or 2^(B-1) = M + 1.
[[nodiscard]] int calibrator_bits(const TensorQuant& q);

using CalibrationTable = std::map<std::string, TensorQuant>;

// A calibration table file that cannot be read: one line starting with the path.
class CalibrationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads a JSON object keyed by tensor name. Each entry is octasim's
// {"clip": s, "bits": 8, "unsigned": false, "min": a, "max": b, "method": "octav"} or NVDLA's
// {"scale": step, "min": a, "max": b, "offset": 0} (clip = 127 * scale; offset must be 0: the
// device's quantization is symmetric). Throws CalibrationError naming the file and the entry.
[[nodiscard]] CalibrationTable read_calibration_table(const std::string& path);
// Writes the table in octasim's form (with "scale" = step as well, so NVDLA-style readers see
// the step). Throws CalibrationError when the file cannot be written.
void write_calibration_table(const std::string& path, const CalibrationTable& table);
// The text write_calibration_table writes.
[[nodiscard]] std::string calibration_table_text(const CalibrationTable& table);

}  // namespace octasim::firmware::net
