// octasim._core: the C++ half of the Python package (python/octasim/__init__.py wraps it).
// Clipping scalars by the code `octasim clip` runs (sim/app/clip_core), the quantizer and its
// MSE (models/quant), hardware configurations (sim/core/hw_config) and .npy/.npz reading
// (models/io), the QAT-initialisation recipe (models/quant/qat_init). No SystemC: simulations run
// in a child octasim process (__init__.py), whose path is `executable`.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/io/tensor_file.hpp"
#include "models/quant/qat_init.hpp"
#include "models/quant/quantizer.hpp"
#include "sim/app/clip_core.hpp"
#include "sim/core/hw_config.hpp"

namespace py = pybind11;
using octasim::app::ClipOptions;

namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::vector<std::size_t> shape_of(const py::array& a) {
  std::vector<std::size_t> shape;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<std::size_t>(a.shape(i)));
  return shape;
}

std::vector<float> values_of(const FloatArray& a) {
  return std::vector<float>(a.data(), a.data() + a.size());
}

octasim::models::Signedness sign_of(bool is_unsigned) {
  return is_unsigned ? octasim::models::Signedness::kUnsigned
                     : octasim::models::Signedness::kSigned;
}

// The clip command's computation on an array (converted to float32 as NumPy's astype does,
// which is how the CLI converts a file's values). Returns every group's row as arrays.
py::dict clip(const FloatArray& a, int bits, bool is_unsigned, const std::string& method,
              std::optional<int> per_channel, std::optional<std::size_t> per_vector,
              const std::string& init, double tol, int max_iter, std::size_t candidates,
              double percentile, const std::string& name, const std::string& dtype) {
  ClipOptions o;
  o.bits = bits;
  o.is_unsigned = is_unsigned;
  o.method = method;
  if (per_channel) o.per_channel = *per_channel;
  if (per_vector) {
    if (*per_vector == 0) throw octasim::app::UsageError("per_vector: expected a positive size");
    o.per_vector = *per_vector;
  }
  o.init = init;
  o.tolerance = tol;
  o.max_iterations = max_iter;
  o.candidates = candidates;
  o.percentile = percentile;
  octasim::app::check_clip_options(o);
  const std::vector<std::size_t> shape = shape_of(a);
  const std::vector<float> values = values_of(a);
  octasim::app::ClipComputation c;
  {
    py::gil_scoped_release release;
    c = octasim::app::compute_clips(o, name, values, shape, dtype);
  }
  const auto n = static_cast<py::ssize_t>(c.rows.size());
  py::array_t<double> clips(n), mse(n), mse_max(n);
  py::array_t<std::int64_t> elements(n), iterations(n);
  py::array_t<bool> converged(n);
  for (py::ssize_t g = 0; g < n; ++g) {
    const octasim::app::ClipRow& r = c.rows[static_cast<std::size_t>(g)];
    clips.mutable_at(g) = r.result.clip;
    mse.mutable_at(g) = r.mse;
    mse_max.mutable_at(g) = r.mse_max;
    elements.mutable_at(g) = static_cast<std::int64_t>(r.elements);
    iterations.mutable_at(g) = r.result.iterations;
    converged.mutable_at(g) = r.result.converged;
  }
  py::dict d;
  d["clip"] = clips;
  d["mse"] = mse;
  d["mse_max"] = mse_max;
  d["elements"] = elements;
  d["iterations"] = iterations;
  d["converged"] = converged;
  d["iterative"] = c.iterative;
  d["grouping"] = c.grouping_text;
  d["total_mse"] = c.total_mse;
  d["total_mse_max"] = c.total_mse_max;
  return d;
}

// Clipped quantization (eq. 3) of `a` with a clipping scalar per element (`s`, broadcast by the
// caller to a's shape): Q(x) as float32, as models::quantize_clipped computes it.
py::array_t<float> quantize(const FloatArray& a, const DoubleArray& s, int bits, bool is_unsigned) {
  if (s.size() != a.size()) throw std::invalid_argument("s must have one value per element");
  octasim::models::check_quant_bits(bits);
  for (py::ssize_t i = 0; i < s.size(); ++i) {
    if (!(s.data()[i] >= 0.0) || !std::isfinite(s.data()[i])) {
      throw std::invalid_argument("clipping scalar " + std::to_string(s.data()[i]) +
                                  ": expected a finite value >= 0");
    }
  }
  py::array_t<float> out(a.request().shape);
  float* o = out.mutable_data();
  const float* x = a.data();
  const double* sv = s.data();
  const auto n = static_cast<std::size_t>(a.size());
  const auto sign = sign_of(is_unsigned);
  {
    py::gil_scoped_release release;
    std::size_t i = 0;
    while (i < n) {  // runs of one clipping scalar share a quantizer
      std::size_t j = i + 1;
      while (j < n && sv[j] == sv[i]) ++j;
      octasim::models::quantize_clipped(x + i, j - i, sv[i], bits, sign, o + i);
      i = j;
    }
  }
  return out;
}

double mse(const FloatArray& a, double s, int bits, bool is_unsigned) {
  octasim::models::check_quant_bits(bits);
  if (!(s >= 0.0) || !std::isfinite(s)) {
    throw std::invalid_argument("clipping scalar " + std::to_string(s) +
                                ": expected a finite value >= 0");
  }
  py::gil_scoped_release release;
  return octasim::models::empirical_mse(a.data(), static_cast<std::size_t>(a.size()), s, bits,
                                        sign_of(is_unsigned));
}

// A configuration (a built-in name, a JSON or .spec path, or JSON text when `is_text`) as the
// JSON text of every key.
std::string config_json(const std::string& what, bool is_text) {
  const octasim::HwConfig c =
      is_text ? octasim::parse_hw_config(what, "config") : octasim::load_hw_config(what);
  return octasim::hw_config_json(c);
}

// A .npy file or .npz member as (float32 array, dtype name), by the reader the CLI uses.
py::tuple read_npy(const std::string& path) {
  octasim::models::Tensor t = octasim::models::read_npy(path, true);
  std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
  py::array_t<float> a(shape);
  std::copy(t.values.begin(), t.values.end(), a.mutable_data());
  return py::make_tuple(a, t.dtype);
}

// models::mmse_weight_quantization of `w`'s values: (scale, codes, mse).
py::tuple mmse_weight_quantization(const FloatArray& w, int bits, std::size_t candidates) {
  octasim::models::MmseWeights r;
  {
    py::gil_scoped_release release;
    r = octasim::models::mmse_weight_quantization(w.data(), static_cast<std::size_t>(w.size()),
                                                  bits, candidates);
  }
  py::array_t<std::int32_t> codes(static_cast<py::ssize_t>(r.codes.size()));
  std::copy(r.codes.begin(), r.codes.end(), codes.mutable_data());
  return py::make_tuple(r.scale, codes, r.mse);
}

std::vector<std::vector<float>> batches_of(const std::vector<FloatArray>& batches) {
  std::vector<std::vector<float>> out;
  for (const FloatArray& b : batches) out.push_back(values_of(b));
  return out;
}

// models::calibrate_activation over the batches: (offset, saturation, total MSE).
py::tuple calibrate_activation(const std::vector<FloatArray>& batches, int bits,
                               std::size_t candidates) {
  const std::vector<std::vector<float>> values = batches_of(batches);
  octasim::models::ActivationCalibration r;
  {
    py::gil_scoped_release release;
    r = octasim::models::calibrate_activation(values, bits, candidates);
  }
  return py::make_tuple(r.offset, r.saturation, r.total_mse);
}

double activation_total_mse(const std::vector<FloatArray>& batches, double offset,
                            double saturation, int bits) {
  return octasim::models::activation_total_mse(batches_of(batches), offset, saturation, bits);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "octasim's C++ core: clipping, quantization, configurations (see octasim)";
  static py::exception<octasim::app::UsageError> error(m, "Error", PyExc_RuntimeError);
  // Module-local: a global translator would also turn other extensions' C++ exceptions (torch's
  // tracer's, for one) into octasim.Error.
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const octasim::app::UsageError& e) {
      error(e.what());
    } catch (const octasim::models::TensorFileError& e) {
      error(e.what());
    } catch (const std::invalid_argument& e) {
      error(e.what());
    } catch (const std::runtime_error& e) {  // configuration errors name the file and key
      error(e.what());
    }
  });
  m.attr("executable") = OCTASIM_EXECUTABLE;
  m.def("clip", &clip, py::arg("a"), py::arg("bits"), py::arg("unsigned"), py::arg("method"),
        py::arg("per_channel"), py::arg("per_vector"), py::arg("init"), py::arg("tol"),
        py::arg("max_iter"), py::arg("candidates"), py::arg("percentile"), py::arg("name"),
        py::arg("dtype"));
  m.def("quantize", &quantize, py::arg("a"), py::arg("s"), py::arg("bits"), py::arg("unsigned"));
  m.def("mse", &mse, py::arg("a"), py::arg("s"), py::arg("bits"), py::arg("unsigned"));
  m.def("config_json", &config_json, py::arg("what"), py::arg("is_text"));
  m.def("builtin_configs", &octasim::builtin_hw_configs);
  m.def("read_npy", &read_npy, py::arg("path"));
  m.def("mmse_weight_quantization", &mmse_weight_quantization, py::arg("w"), py::arg("bits"),
        py::arg("candidates"));
  m.def("quantize_activation", py::vectorize(&octasim::models::quantize_activation), py::arg("x"),
        py::arg("offset"), py::arg("saturation"), py::arg("bits"));
  m.def("calibrate_activation", &calibrate_activation, py::arg("batches"), py::arg("bits"),
        py::arg("candidates"));
  m.def("activation_total_mse", &activation_total_mse, py::arg("batches"), py::arg("offset"),
        py::arg("saturation"), py::arg("bits"));
}
