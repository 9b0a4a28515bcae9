// The reference executor's Resize in modes linear and cubic (models/graph/reference_tensor.cpp),
// through the operator registry, on small cases worked by hand from ONNX's definitions: the input
// coordinate x of each output per coordinate_transformation_mode, then the taps nearest x (two
// for linear, four for cubic, the lower ones preferred, so that x sits in (tap 1, tap 2] of two
// and (tap 2, tap 3] of four), indices past the edges reading the edge value.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "models/graph/op_registry.hpp"

namespace octasim::models::graph {
namespace {

Attribute string_attr(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = s;
  return a;
}

Attribute float_attr(float f) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = f;
  return a;
}

Attribute int_attr(std::int64_t i) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = i;
  return a;
}

// A Resize (opset 13 unless told) of x with scales or sizes (one of them empty) and roi.
struct ResizeCase {
  std::string mode = "linear";
  std::string coord;  // empty: the opset's default
  std::vector<float> scales;
  std::vector<std::int64_t> sizes;
  std::vector<float> roi;
  std::int64_t opset = 13;
  std::string op = "Resize";
  std::map<std::string, Attribute> extra;
};

Tensor run(const Tensor& x, const ResizeCase& c) {
  Node n;
  n.op_type = c.op;
  n.name = "resize";
  n.attributes = c.extra;
  n.attributes["mode"] = string_attr(c.mode);
  if (!c.coord.empty()) n.attributes["coordinate_transformation_mode"] = string_attr(c.coord);
  const Tensor roi = Tensor::floats({static_cast<std::int64_t>(c.roi.size())}, c.roi);
  const Tensor scales = Tensor::floats({static_cast<std::int64_t>(c.scales.size())}, c.scales);
  const Tensor sizes =
      Tensor::ints(DType::kInt64, {static_cast<std::int64_t>(c.sizes.size())}, c.sizes);
  Inputs in{&x};
  if (c.op == "Upsample" || c.opset == 10) {
    n.inputs = {"x", "scales"};
    in.push_back(&scales);
  } else {
    n.inputs = {"x", c.roi.empty() ? "" : "roi", c.scales.empty() ? "" : "scales",
                c.sizes.empty() ? "" : "sizes"};
    in.push_back(c.roi.empty() ? nullptr : &roi);
    in.push_back(c.scales.empty() ? nullptr : &scales);
    if (!c.sizes.empty()) in.push_back(&sizes);
  }
  n.outputs = {"y"};
  const std::vector<Tensor> out = run_op(n, in, c.opset);
  EXPECT_EQ(out.size(), 1U);
  return out.at(0);
}

// v = [1, 2, 4, 8] along W (1 x 1 x 1 x 4): not affine, so a wrong tap or weight shows.
Tensor row() {
  return Tensor::floats({1, 1, 1, 4}, {1, 2, 4, 8});
}

void expect_values(const Tensor& got, const std::vector<std::int64_t>& shape,
                   const std::vector<double>& want) {
  ASSERT_EQ(got.shape, shape);
  ASSERT_EQ(got.f.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    EXPECT_NEAR(got.f[k], want[k], 1e-5) << "element " << k;
  }
}

// Keys' cubic convolution kernel with parameter A, written out for the expectations:
// (A + 2)|d|^3 - (A + 3)|d|^2 + 1 for |d| <= 1, A|d|^3 - 5A|d|^2 + 8A|d| - 4A for 1 < |d| < 2.
double keys(double A, double d) {
  d = std::fabs(d);
  if (d <= 1) return (A + 2) * d * d * d - (A + 3) * d * d + 1;
  if (d < 2) return A * d * d * d - 5 * A * d * d + 8 * A * d - 4 * A;
  return 0;
}

// The cubic value at x in (i, i + 1] from the four values at i - 1 .. i + 2.
double cubic_at(double A, double x, double i, double a, double b, double c, double d) {
  return keys(A, x - (i - 1)) * a + keys(A, x - i) * b + keys(A, x - (i + 1)) * c +
         keys(A, x - (i + 2)) * d;
}

TEST(ResizeLinear, BilinearHalfPixelUpsample) {
  // 2 x 2 -> 4 x 4, half_pixel: x = (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 along each
  // axis; -0.25 reads the edge (taps -1 and 0, both v0), 1.25 likewise (v1), so each axis maps
  // [p, q] to [p, 3/4 p + 1/4 q, 1/4 p + 3/4 q, q]. Rows [1, 2], [3, 4] become
  // [1, 1.25, 1.75, 2] and [3, 3.25, 3.75, 4]; the columns then mix them the same way.
  ResizeCase c;
  c.scales = {1, 1, 2, 2};
  const std::vector<double> r0{1, 1.25, 1.75, 2}, r1{3, 3.25, 3.75, 4};
  std::vector<double> want;
  for (const double wq : {0.0, 0.25, 0.75, 1.0}) {
    for (std::size_t k = 0; k < 4; ++k) want.push_back((1 - wq) * r0[k] + wq * r1[k]);
  }
  expect_values(run(Tensor::floats({1, 1, 2, 2}, {1, 2, 3, 4}), c), {1, 1, 4, 4}, want);
}

TEST(ResizeLinear, EachCoordinateMode) {
  ResizeCase c;
  // asymmetric x2: x = o / 2; x = 3.5 has taps 3 and 4 (the edge): 8.
  c.coord = "asymmetric";
  c.scales = {1, 1, 1, 2};
  expect_values(run(row(), c), {1, 1, 1, 8}, {1, 1.5, 2, 3, 4, 6, 8, 8});
  // half_pixel 4 -> 2: x = (o + 0.5) * 2 - 0.5 = 0.5, 2.5.
  c.coord = "half_pixel";
  c.scales = {};
  c.sizes = {1, 1, 1, 2};
  expect_values(run(row(), c), {1, 1, 1, 2}, {1.5, 6});
  // half_pixel 4 -> 1: x = 0.5 * 4 - 0.5 = 1.5; pytorch_half_pixel takes x = -0.5 for one output
  // (taps -1 and 0: v0).
  c.sizes = {1, 1, 1, 1};
  expect_values(run(row(), c), {1, 1, 1, 1}, {3});
  c.coord = "pytorch_half_pixel";
  expect_values(run(row(), c), {1, 1, 1, 1}, {1});
  c.sizes = {1, 1, 1, 2};
  expect_values(run(row(), c), {1, 1, 1, 2}, {1.5, 6});
  // align_corners 3 -> 5: x = o (3 - 1) / (5 - 1) = o / 2 on [1, 2, 4].
  c.coord = "align_corners";
  c.sizes = {1, 1, 1, 5};
  expect_values(run(Tensor::floats({1, 1, 1, 3}, {1, 2, 4}), c), {1, 1, 1, 5}, {1, 1.5, 2, 3, 4});
  // align_corners with scales: the resized length is scale x length (0.6 x 4 = 2.4, 2 outputs),
  // as in ONNX's reference: x = 1 x 3 / 1.4 = 15/7, between 4 and 8 at 1/7.
  c.sizes = {};
  c.scales = {1, 1, 1, 0.6F};
  expect_values(run(row(), c), {1, 1, 1, 2}, {1, 4 + 4.0 / 7});
  // tf_half_pixel_for_nn x2: x = (o + 0.5) / 2 = 0.25, 0.75, ..., 3.75.
  c.coord = "tf_half_pixel_for_nn";
  c.scales = {1, 1, 1, 2};
  expect_values(run(row(), c), {1, 1, 1, 8}, {1.25, 1.75, 2.5, 3.5, 5, 7, 8, 8});
}

TEST(ResizeLinear, TfCropAndResize) {
  ResizeCase c;
  c.coord = "tf_crop_and_resize";
  c.sizes = {1, 1, 1, 3};
  // W's region [0.25, 0.75] of (4 - 1): x = 0.75 + o x 0.5 x 3 / 2 = 0.75, 1.5, 2.25.
  c.roi = {0, 0, 0, 0.25F, 1, 1, 1, 0.75F};
  expect_values(run(row(), c), {1, 1, 1, 3}, {0.25 * 1 + 0.75 * 2, 3, 0.75 * 4 + 0.25 * 8});
  // [-0.5, 1.5]: x = -1.5, 1.5, 4.5; outside the input the output is extrapolation_value.
  c.roi = {0, 0, 0, -0.5F, 1, 1, 1, 1.5F};
  c.extra["extrapolation_value"] = float_attr(10);
  expect_values(run(row(), c), {1, 1, 1, 3}, {10, 3, 10});
  // With scales the output is floor(4 x (0.75 - 0.25) x 1.5) = 3 long, spanning the region.
  c.sizes = {};
  c.scales = {1, 1, 1, 1.5F};
  c.roi = {0, 0, 0, 0.25F, 1, 1, 1, 0.75F};
  expect_values(run(row(), c), {1, 1, 1, 3}, {1.75, 3, 5});
  // Cubic over the same region (A = -0.75): x = 0.75 (taps -1 .. 2: 1, 1, 2, 4), 1.5 (0 .. 3),
  // 2.25 (1 .. 4: 2, 4, 8, 8).
  c.mode = "cubic";
  c.sizes = {1, 1, 1, 3};
  c.scales = {};
  expect_values(run(row(), c), {1, 1, 1, 3},
                {cubic_at(-0.75, 0.75, 0, 1, 1, 2, 4), cubic_at(-0.75, 1.5, 1, 1, 2, 4, 8),
                 cubic_at(-0.75, 2.25, 2, 2, 4, 8, 8)});
}

TEST(ResizeLinear, OpsetTenAndUpsampleAreAsymmetric) {
  // Resize-10 and Upsample-9 have no coordinate mode: x = o / scale.
  ResizeCase c;
  c.opset = 10;
  c.scales = {1, 1, 1, 2};
  const std::vector<double> want{1, 1.5, 2, 3, 4, 6, 8, 8};
  expect_values(run(row(), c), {1, 1, 1, 8}, want);
  c.op = "Upsample";
  c.opset = 9;
  expect_values(run(row(), c), {1, 1, 1, 8}, want);
}

TEST(ResizeLinear, TrilinearOverThreeAxes) {
  // 2 x 2 x 2 -> 3 x 3 x 3 with align_corners: x = 0, 0.5, 1 on every axis, so every output is
  // the mean of the 2^k corners around it: the centre is the mean of all eight values.
  ResizeCase c;
  c.coord = "align_corners";
  c.sizes = {3, 3, 3};
  const Tensor x = Tensor::floats({2, 2, 2}, {0, 1, 2, 4, 8, 16, 32, 64});
  const Tensor y = run(x, c);
  ASSERT_EQ(y.shape, (std::vector<std::int64_t>{3, 3, 3}));
  EXPECT_NEAR(y.f[13], (0 + 1 + 2 + 4 + 8 + 16 + 32 + 64) / 8.0, 1e-6);
  EXPECT_NEAR(y.f[0], 0, 1e-6);
  EXPECT_NEAR(y.f[26], 64, 1e-6);
  EXPECT_NEAR(y.f[1], 0.5, 1e-6);                    // (0, 0, 0.5)
  EXPECT_NEAR(y.f[4], (0 + 1 + 2 + 4) / 4.0, 1e-6);  // (0, 0.5, 0.5)
  EXPECT_NEAR(y.f[9], (0 + 8) / 2.0, 1e-6);          // (0.5, 0, 0)
}

TEST(ResizeCubic, KeysCoefficients) {
  // At x halfway (r = 1/2) the weights are A/8, 1/2 - A/8, 1/2 - A/8, A/8.
  ResizeCase c;
  c.mode = "cubic";
  c.coord = "asymmetric";
  c.scales = {1, 1, 1, 2};
  // x = o / 2 on [1, 2, 4, 8]: integers are the inputs; 0.5 has taps -1 .. 2 (1, 1, 2, 4), 1.5
  // taps 0 .. 3, 2.5 taps 1 .. 4 (2, 4, 8, 8), 3.5 taps 2 .. 5 (4, 8, 8, 8).
  const double a = -0.75 / 8, b = 0.5 + 0.75 / 8;
  expect_values(run(row(), c), {1, 1, 1, 8},
                {1, a * 1 + b * 1 + b * 2 + a * 4, 2, a * 1 + b * 2 + b * 4 + a * 8, 4,
                 a * 2 + b * 4 + b * 8 + a * 8, 8, a * 4 + b * 8 + b * 8 + a * 8});
  EXPECT_DOUBLE_EQ(a * 1 + b * 1 + b * 2 + a * 4, 1.3125);
}

TEST(ResizeCubic, ExcludeOutsideAndCoefficientA) {
  // A = -0.5: weights -1/16, 9/16, 9/16, -1/16 at r = 1/2; exclude_outside zeroes the taps past
  // the edges and divides by what is left.
  ResizeCase c;
  c.mode = "cubic";
  c.coord = "asymmetric";
  c.scales = {1, 1, 1, 2};
  c.extra["cubic_coeff_a"] = float_attr(-0.5F);
  c.extra["exclude_outside"] = int_attr(1);
  const double a = -1.0 / 16, b = 9.0 / 16;
  expect_values(run(row(), c), {1, 1, 1, 8},
                {1, (b * 1 + b * 2 + a * 4) / (b + b + a), 2, a * 1 + b * 2 + b * 4 + a * 8, 4,
                 (a * 2 + b * 4 + b * 8) / (a + b + b), 8, (a * 4 + b * 8) / (a + b)});
  // Without exclude_outside the edge values stand in for the missing ones.
  c.extra.erase("exclude_outside");
  expect_values(run(row(), c), {1, 1, 1, 8},
                {1, a * 1 + b * 1 + b * 2 + a * 4, 2, a * 1 + b * 2 + b * 4 + a * 8, 4,
                 a * 2 + b * 4 + b * 8 + a * 8, 8, a * 4 + b * 8 + b * 8 + a * 8});
}

TEST(ResizeCubic, EachCoordinateMode) {
  const double A = -0.75;
  ResizeCase c;
  c.mode = "cubic";
  // half_pixel 4 -> 2: x = 0.5, 2.5.
  c.sizes = {1, 1, 1, 2};
  expect_values(run(row(), c), {1, 1, 1, 2},
                {cubic_at(A, 0.5, 0, 1, 1, 2, 4), cubic_at(A, 2.5, 2, 2, 4, 8, 8)});
  // 4 -> 1: half_pixel x = 1.5; pytorch_half_pixel x = -0.5, taps -2 .. 1 (1, 1, 1, 2).
  c.sizes = {1, 1, 1, 1};
  expect_values(run(row(), c), {1, 1, 1, 1}, {cubic_at(A, 1.5, 1, 1, 2, 4, 8)});
  c.coord = "pytorch_half_pixel";
  expect_values(run(row(), c), {1, 1, 1, 1}, {cubic_at(A, -0.5, -1, 1, 1, 1, 2)});
  // align_corners 3 -> 5 on [1, 2, 4]: x = o / 2; 1.5 has taps 0 .. 3 (1, 2, 4, 4).
  c.coord = "align_corners";
  c.sizes = {1, 1, 1, 5};
  expect_values(run(Tensor::floats({1, 1, 1, 3}, {1, 2, 4}), c), {1, 1, 1, 5},
                {1, cubic_at(A, 0.5, 0, 1, 1, 2, 4), 2, cubic_at(A, 1.5, 1, 1, 2, 4, 4), 4});
  // tf_half_pixel_for_nn 4 -> 2: x = (o + 0.5) x 2 = 1, 3: the inputs themselves.
  c.coord = "tf_half_pixel_for_nn";
  c.sizes = {1, 1, 1, 2};
  expect_values(run(row(), c), {1, 1, 1, 2}, {2, 8});
}

TEST(ResizeCubic, BicubicIsSeparable) {
  // 2 x 2 -> 4 x 4 asymmetric: x = 0, 0.5, 1, 1.5 on each axis. An input constant along H
  // resamples W only: each row is the 1-D result; the outer product of rows [1, 2] and columns
  // [1, 3] (v = r c) comes out as the product of the two 1-D results.
  ResizeCase c;
  c.mode = "cubic";
  c.coord = "asymmetric";
  c.scales = {1, 1, 2, 2};
  const double A = -0.75;
  const auto up = [A](double p, double q) {
    return std::vector<double>{p, cubic_at(A, 0.5, 0, p, p, q, q), q,
                               cubic_at(A, 1.5, 1, p, q, q, q)};
  };
  const std::vector<double> w = up(1, 2), h = up(1, 3);
  std::vector<double> want;
  for (const double hv : h) {
    for (const double wv : w) want.push_back(hv * wv);
  }
  expect_values(run(Tensor::floats({1, 1, 2, 2}, {1, 2, 3, 6}), c), {1, 1, 4, 4}, want);
}

TEST(ResizeRefusals, WhatTheKernelDoesNotDefine) {
  const auto error_of = [](const Tensor& x, const ResizeCase& c) {
    try {
      (void)run(x, c);
    } catch (const GraphError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ResizeCase c;
  c.scales = {1, 1, 1, 2};
  const Tensor ints = Tensor::ints(DType::kInt64, {1, 1, 1, 2}, {1, 2});
  EXPECT_NE(error_of(ints, c).find("float tensors only"), std::string::npos);
  c.mode = "cubic";
  c.opset = 10;
  EXPECT_NE(error_of(row(), c).find("is not nearest, linear or cubic"), std::string::npos);
  c.opset = 13;
  c.mode = "nearest";
  c.coord = "tf_crop_and_resize";
  c.roi = {0, 0, 0, 0, 1, 1, 1, 1};
  EXPECT_NE(error_of(row(), c).find("tf_crop_and_resize"), std::string::npos);
  c.mode = "linear";
  c.roi = {0, 1};
  EXPECT_NE(error_of(row(), c).find("needs roi"), std::string::npos);
}

}  // namespace
}  // namespace octasim::models::graph
