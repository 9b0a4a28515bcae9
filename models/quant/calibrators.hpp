// Clipping-scalar calibrators beside OCTAV: the brute-force sweep OCTAV replaces, and the peer
// methods users know (abs-max, percentile, TensorRT-style histogram MSE search).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/quant/grouping.hpp"
#include "models/quant/octav.hpp"
#include "models/quant/quantizer.hpp"

namespace octasim::models {

// Brute force: the candidate among s_k = s_max * k / K (k = 1..K) with the least empirical
// MSE (eq. 1); ties go to the smaller s. iterations = K. s_max = 0 gives 0.
[[nodiscard]] ClipResult brute_force_clip(const float* x, std::size_t n, int bits, Signedness sign,
                                          std::size_t candidates);

// Abs-max: s = s_max (eq. 2's scalar).
[[nodiscard]] ClipResult max_clip(const float* x, std::size_t n, Signedness sign);

// Percentile (nearest rank): the ceil(p/100 * n)-th smallest magnitude, p in (0, 100].
[[nodiscard]] ClipResult percentile_clip(const float* x, std::size_t n, Signedness sign,
                                         double percentile);

// TensorRT-style histogram MSE search (as pytorch-quantization's "mse" calibrator): a
// histogram of the magnitudes over [0, s_max] with `bins` bins; every bin centre from bin
// `start_bin` on is a candidate; each candidate's MSE is estimated by quantizing the bin centres
// (weighted by their counts) with this project's clipped quantizer; the least wins.
// iterations = candidates tried.
[[nodiscard]] ClipResult mse_histogram_clip(const float* x, std::size_t n, int bits,
                                            Signedness sign, std::size_t bins = 2048,
                                            std::size_t start_bin = 128);

enum class ClipMethod : std::uint8_t { kOctav, kBruteForce, kMax, kPercentile, kMseHistogram };

[[nodiscard]] const char* clip_method_name(ClipMethod m);
// Parses "octav", "bruteforce", "max", "percentile", "mse-hist"; false when unknown.
[[nodiscard]] bool parse_clip_method(const std::string& name, ClipMethod& out);

struct CalibrationOptions {
  OctavOptions octav;  // bits and sign here apply to every method
  std::size_t candidates = 1000;
  double percentile = 99.99;
  std::size_t histogram_bins = 2048;
  std::size_t histogram_start_bin = 128;
};

// One result per group of t.
[[nodiscard]] std::vector<ClipResult> calibrate(const GroupedTensor& t, ClipMethod method,
                                                const CalibrationOptions& opts);

}  // namespace octasim::models
