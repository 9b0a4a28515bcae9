#include "sim/app/net_expect.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "sim/app/commands.hpp"
#include "sim/app/net_data.hpp"

namespace octasim::app {

std::vector<ExpectedComparison> compare_expected(
    const std::vector<std::string>& files, const std::vector<std::string>& output_names,
    const std::vector<std::vector<models::graph::Tensor>>& device, double max_rel_error) {
  if (files.size() != output_names.size()) {
    throw UsageError(fmt::format("--expect: {} file{} for {} graph output{}", files.size(),
                                 files.size() == 1 ? "" : "s", output_names.size(),
                                 output_names.size() == 1 ? "" : "s"));
  }
  std::vector<ExpectedComparison> out;
  for (std::size_t k = 0; k < files.size(); ++k) {
    const models::graph::Tensor want = read_data_file(files[k], 0);
    std::size_t elements = 0;
    for (const auto& image : device) elements += image.at(k).f.size();
    if (want.elements() != elements) {
      throw UsageError(
          fmt::format("--expect {}: {} values, the device computed {} for output '{}' ({} image{})",
                      files[k], want.elements(), elements, output_names[k], device.size(),
                      device.size() == 1 ? "" : "s"));
    }
    ExpectedComparison c;
    c.output = output_names[k];
    c.file = files[k];
    double diff = 0.0, norm = 0.0;
    std::size_t e = 0;
    for (const auto& image : device) {
      for (const float v : image[k].f) {
        const double w = want.at(e++);
        const double d = double{v} - w;
        diff += d * d;
        norm += w * w;
        c.max_abs = std::max(c.max_abs, std::abs(d));
      }
    }
    c.rel_l2 = norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    c.within = max_rel_error < 0.0 || c.rel_l2 <= max_rel_error;
    fmt::print("output '{}' vs {}: relative L2 error {:.3g}, max |error| {:.3g}{}\n", c.output,
               c.file, c.rel_l2, c.max_abs,
               max_rel_error < 0.0 ? ""
               : c.within          ? fmt::format(" (within {:g})", max_rel_error)
                                   : fmt::format(" (ABOVE {:g})", max_rel_error));
    out.push_back(c);
  }
  return out;
}

}  // namespace octasim::app
