// firmware/zoo: every network written, read back through firmware::load_onnx and counted
// against the published MACs and parameters (independent data, cited per network), the
// transformers against counts by hand; the bytes the same on every write; the weights
// He-scaled; LeNet-5, AlexNet and the transformers run by the reference executor to finite
// outputs with a spread.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "firmware/onnx/onnx_import.hpp"
#include "firmware/zoo/builder.hpp"
#include "firmware/zoo/zoo.hpp"
#include "models/graph/macs.hpp"
#include "models/graph/reference.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace octasim::firmware::zoo {
namespace {

namespace g = models::graph;

struct Published {
  const char* name;
  double macs_lo, macs_hi;  // the published count's window
  double params;            // the published parameter count
  double params_tolerance;  // relative
  std::int64_t classes;
  // Exact counts where they are known (0: not checked): MACs and parameters by hand, or
  // torchvision's parameters without the BatchNormalization buffers (learnable() below).
  std::uint64_t exact_macs = 0, exact_params = 0, exact_learnable = 0;
};

// LeNet-5, 32x32 input, computed by hand (output elements x products each):
//   conv1 6 x 28 x 28 x (1 x 5 x 5) = 117600; conv2 16 x 10 x 10 x (6 x 5 x 5) = 240000;
//   fc1 400 x 120 = 48000; fc2 120 x 84 = 10080; fc3 84 x 10 = 840: 416520 MACs.
//   Parameters: 156 + 2416 + 48120 + 10164 + 850 = 61706.
// AlexNet: BVLC AlexNet with groups ~724 M MACs, ~61 M parameters (Netscope CNN Analyzer,
//   bvlc_alexnet; Krizhevsky et al. 2012 quote 60 M parameters). By hand: conv1
//   96 x 55 x 55 x 363 = 105415200; conv2 256 x 27 x 27 x (48 x 25) = 223948800; conv3
//   384 x 13 x 13 x 2304 = 149520384; conv4 384 x 169 x (192 x 9) = 112140288; conv5
//   256 x 169 x 1728 = 74760192; fc6 9216 x 4096 = 37748736; fc7 16777216; fc8 4096000:
//   724406816 MACs. Parameters (weights + biases): 34944 + 307456 + 885120 + 663936 + 442624 +
//   37752832 + 16781312 + 4097000 = 60965224.
// GoogLeNet: "a computational budget of 1.5 billion multiply-adds at inference time" (Szegedy
//   et al. 2014); ~7.0 M parameters for BVLC GoogLeNet without the auxiliary classifiers.
// ResNet-50: torchvision's ResNet50_Weights.IMAGENET1K_V1: 4.09 GFLOPS (multiply-adds),
//   25,557,032 parameters.
// MobileNetV2: 300 M multiply-adds (Sandler et al. 2018, table 4); torchvision's
//   MobileNet_V2_Weights.IMAGENET1K_V1: 3,504,872 parameters.
// Our parameter count also holds BatchNormalization's running mean and variance (buffers in
// PyTorch), hence the tolerance; exact_learnable takes them out.
const Published kPublished[] = {
    {"lenet5", 416520, 416520, 61706, 0.0, 10, 416520, 61706, 0},
    {"alexnet", 0.70e9, 0.74e9, 61.0e6, 0.03, 1000, 724406816, 60965224, 0},
    {"googlenet", 1.4e9, 1.6e9, 7.0e6, 0.03, 1000, 0, 0, 0},
    {"resnet50", 3.9e9, 4.1e9, 25557032, 0.01, 1000, 0, 0, 25557032},
    {"mobilenet_v2", 0.29e9, 0.32e9, 3504872, 0.02, 1000, 0, 0, 3504872},
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::uint64_t elements_named(const g::Graph& graph, const std::string& suffix) {
  std::uint64_t n = 0;
  for (const auto& [name, t] : graph.initializers) {
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      n += t.elements();
    }
  }
  return n;
}

// The learnable parameters as PyTorch counts them: without BatchNormalization's running
// statistics and the Clip bounds.
std::uint64_t learnable(const g::Graph& graph) {
  return g::count_parameters(graph) - elements_named(graph, ".running_mean") -
         elements_named(graph, ".running_var") - elements_named(graph, "relu6.min") -
         elements_named(graph, "relu6.max");
}

// gtest prints the parameter by name (ctest names and failure messages).
void PrintTo(const Published& p, std::ostream* os) {
  *os << p.name;
}

// write_model's file, read back as bytes or through the importer.
std::string written_bytes(const std::string& name) {
  const test::TempDir dir("zoo");
  const std::string path = (dir.path() / (name + ".onnx")).string();
  write_model(name, path);
  return read_file(path);
}

g::Graph written_and_loaded(const std::string& name) {
  const test::TempDir dir("zoo");
  const std::string path = (dir.path() / (name + ".onnx")).string();
  write_model(name, path);
  return load_onnx(path);
}

using ZooModel = ::testing::TestWithParam<Published>;

TEST_P(ZooModel, LoadsWithThePublishedMacsAndParameters) {
  const Published& p = GetParam();
  const g::Graph graph = written_and_loaded(p.name);
  EXPECT_EQ(graph.opset, 13);
  ASSERT_EQ(graph.inputs.size(), 1U);
  EXPECT_EQ(graph.inputs[0].shape, model_info(p.name).input_shape);
  ASSERT_EQ(graph.outputs.size(), 1U);
  EXPECT_EQ(graph.outputs[0].shape, (std::vector<std::int64_t>{1, p.classes}));
  EXPECT_EQ(g::infer_shapes(graph).at(graph.outputs[0].name), graph.outputs[0].shape);

  const auto macs = static_cast<double>(g::count_macs(graph));
  EXPECT_GE(macs, p.macs_lo) << p.name;
  EXPECT_LE(macs, p.macs_hi) << p.name;
  const auto params = static_cast<double>(g::count_parameters(graph));
  EXPECT_LE(std::abs(params - p.params), p.params_tolerance * p.params)
      << p.name << ": " << params << " parameters";
  if (p.exact_macs != 0) {
    EXPECT_EQ(g::count_macs(graph), p.exact_macs);
  }
  if (p.exact_params != 0) {
    EXPECT_EQ(g::count_parameters(graph), p.exact_params);
  }
  if (p.exact_learnable != 0) {
    EXPECT_EQ(learnable(graph), p.exact_learnable);
  }
}

// Every weight of a Conv, Gemm or MatMul by a constant lies within +-sqrt(6 / fan_in) and, for
// tensors large enough to measure, has He's variance 2 / fan_in within 10 %; every initializer is
// finite and every running variance positive.
void expect_he_scaled_and_finite(const std::string& model) {
  const g::Graph graph = written_and_loaded(model);
  std::size_t measured = 0;
  for (const g::Node& n : graph.nodes) {
    const bool matmul = n.op_type == "MatMul";
    if (n.op_type != "Conv" && n.op_type != "Gemm" && !matmul) continue;
    const auto it = graph.initializers.find(n.inputs.at(1));
    if (it == graph.initializers.end()) {
      ASSERT_TRUE(matmul) << n.label() << ": weights not an initializer";
      continue;  // a MatMul of two activations (attention)
    }
    const g::Tensor& w = it->second;
    // Conv's and Gemm's (transB) W is out x in, MatMul's in x out (nn.Linear exported).
    const double fan_in = matmul
                              ? static_cast<double>(w.shape[0])
                              : static_cast<double>(w.elements()) / static_cast<double>(w.shape[0]);
    const double bound = std::sqrt(6.0 / fan_in);
    double sum_sq = 0;
    for (const float v : w.f) {
      ASSERT_LE(std::abs(double{v}), bound * (1 + 1e-6)) << n.label();
      sum_sq += double{v} * double{v};
    }
    if (w.elements() < 4096) continue;
    EXPECT_NEAR(sum_sq / static_cast<double>(w.elements()) / (2.0 / fan_in), 1.0, 0.1) << n.label();
    ++measured;
  }
  EXPECT_GT(measured, 0U);
  for (const auto& [name, t] : graph.initializers) {
    for (std::size_t k = 0; k < t.elements(); ++k) ASSERT_TRUE(std::isfinite(t.at(k))) << name;
    if (name.find(".running_var") != std::string::npos) {
      for (const float v : t.f) ASSERT_GT(v, 0.0F) << name;
    }
  }
}

TEST_P(ZooModel, WeightsAreHeScaledAndFinite) {
  expect_he_scaled_and_finite(GetParam().name);
}

// Two writes, each building the model anew, give the same bytes.
TEST_P(ZooModel, SameBytesOnEveryWrite) {
  const Published& p = GetParam();
  const std::string first = written_bytes(p.name);
  const std::string second = written_bytes(p.name);
  ASSERT_GT(first.size(), 1000U);
  EXPECT_TRUE(first == second) << p.name;
}

INSTANTIATE_TEST_SUITE_P(Networks, ZooModel, ::testing::ValuesIn(kPublished),
                         [](const ::testing::TestParamInfo<Published>& param) {
                           return std::string(param.param.name);
                         });

// splitmix64's published outputs for seed 1234567 (Rosetta Code, "Pseudo-random numbers/
// Splitmix64"): the weights' generator is the published one.
TEST(ZooWeights, SplitMix64KnownAnswers) {
  detail::SplitMix64 rng(1234567);
  EXPECT_EQ(rng.next(), 6457827717110365317ULL);
  EXPECT_EQ(rng.next(), 3203168211198807973ULL);
  EXPECT_EQ(rng.next(), 9817491932198370423ULL);
  EXPECT_EQ(rng.next(), 4593380528125082431ULL);
  EXPECT_EQ(rng.next(), 16408922859458223821ULL);
}

// A deterministic [0, 1) image (a 64-bit LCG, Knuth's MMIX constants), independent of the zoo's
// generator.
g::Tensor random_image(const std::vector<std::int64_t>& shape) {
  g::Tensor x;
  x.shape = shape;
  x.f.resize(x.elements());
  std::uint64_t s = 12345;
  for (float& v : x.f) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<float>(static_cast<double>(s >> 40) / 16777216.0);
  }
  return x;
}

// The reference executor runs the network: logits finite, spread neither vanished nor exploded
// (He's scaling keeps the input's second moment, 1/3, within an order of magnitude or two), and
// every tensor's shape as infer_shapes found it.
void expect_sane_logits(const std::string& name) {
  const g::Graph graph = written_and_loaded(name);
  const g::TensorMap values =
      g::run_reference(graph, {{graph.inputs[0].name, random_image(graph.inputs[0].shape)}});
  const g::ShapeMap fast = g::infer_shapes(graph);
  for (const auto& [tensor, t] : values) EXPECT_EQ(fast.at(tensor), t.shape) << tensor;
  const g::Tensor& y = values.at(graph.outputs[0].name);
  double sum = 0, sum_sq = 0;
  for (const float v : y.f) {
    ASSERT_TRUE(std::isfinite(v));
    sum += double{v};
    sum_sq += double{v} * double{v};
  }
  const auto n = static_cast<double>(y.f.size());
  const double spread = std::sqrt(sum_sq / n - (sum / n) * (sum / n));
  EXPECT_GT(spread, 0.05) << name;
  EXPECT_LT(spread, 20.0) << name;
}

TEST(ZooReference, LeNet5LogitsFiniteWithSpread) {
  expect_sane_logits("lenet5");
}

TEST(ZooReference, AlexNetLogitsFiniteWithSpread) {
  expect_sane_logits("alexnet");
}

// ---- The transformers ----------------------------------------------------------------------
//
// Counted by hand. One encoder layer on T tokens of D features (H heads of d = D / H, MLP or FFN
// F), output elements x products each:
//   Q, K, V and output projections   4 x (T x D) x D
//   scores q k^T                         H x T x T x d   = T T D
//   context softmax(..) v                H x T x d x T   = T T D
//   MLP D -> F -> D                  T x F x D + T x D x F
// (LayerNorm, Softmax, GELU, the scale and the residual Adds are no MACs.) Parameters of a
// layer: four D x D weights and D biases, two LayerNorms' gamma and beta (D each), the MLP's
// D x F + F and F x D + D: 33472 for D = 64, F = 128, the count PyTorch gives for
// nn.TransformerEncoderLayer(64, 4, 128) (the exporter zoo's bert_encoder: 66944 for two).
constexpr std::uint64_t encoder_macs(std::uint64_t t, std::uint64_t d, std::uint64_t f) {
  return 4 * t * d * d + 2 * t * t * d + 2 * t * d * f;
}
constexpr std::uint64_t encoder_params(std::uint64_t d, std::uint64_t f) {
  return 4 * (d * d + d) + 2 * 2 * d + (d * f + f) + (f * d + d);
}
// Scalar constants of the decompositions, one initializer each however many nodes read them:
// LayerNorm's 2 and eps, GELU's sqrt 2, 1 and 0.5, attention's sqrt d. ONNX counts them as float
// initializers (count_parameters), PyTorch does not.
constexpr std::uint64_t kScalars = 6;

// vit_tiny: 1x3x32x32, 4x4 patches: 8 x 8 = 64 patches, T = 65 with the class token, D = 64,
// 4 heads, MLP 128, 2 layers, 10 classes.
//   patch Conv: 64 x 8 x 8 outputs x (3 x 4 x 4) = 196608; two layers 2 x encoder_macs(65, 64,
//   128) = 2 x (1064960 + 540800 + 1064960) = 5341440; the head 64 x 10 = 640: 5538688.
//   Parameters: Conv 64 x 48 + 64, class token 64, position embedding 65 x 64, two layers,
//   final LayerNorm 2 x 64, head 64 x 10 + 10 (+ the scalars): 75082 + 6.
constexpr std::uint64_t kVitMacs =
    64 * 8 * 8 * (3 * 4 * 4) + 2 * encoder_macs(65, 64, 128) + 64 * 10;
constexpr std::uint64_t kVitParams =
    (64 * 48 + 64) + 64 + 65 * 64 + 2 * encoder_params(64, 128) + 2 * 64 + (64 * 10 + 10);
static_assert(kVitMacs == 5538688, "vit_tiny's MACs by hand");
static_assert(kVitParams == 75082, "vit_tiny's parameters by hand");
// bert_tiny: T = 32, D = 64, 4 heads, FFN 128, 2 layers: 2 x (524288 + 131072 + 524288) =
// 2359296 MACs, 2 x 33472 = 66944 parameters (+ the scalars).
constexpr std::uint64_t kBertMacs = 2 * encoder_macs(32, 64, 128);
constexpr std::uint64_t kBertParams = 2 * encoder_params(64, 128);
static_assert(kBertMacs == 2359296, "bert_tiny's MACs by hand");
static_assert(kBertParams == 66944, "bert_tiny's parameters by hand");

struct Transformer {
  const char* name;
  std::vector<std::int64_t> input, output;
  std::uint64_t macs, learnable;
  // Nodes of a kind, by hand: L layers of 8 MatMuls (4 projections, 2 in the attention, 2 in the
  // MLP), 1 Softmax, 1 Erf, 2 LayerNorms of 2 ReduceMeans each (+ ViT's final LayerNorm).
  std::size_t matmuls, softmaxes, erfs, reduce_means;
  const char* pytorch_export;  // the exporter zoo's model of the same design
};

void PrintTo(const Transformer& t, std::ostream* os) {
  *os << t.name;
}

const Transformer kTransformers[] = {
    {"vit_tiny", {1, 3, 32, 32}, {1, 10}, kVitMacs, kVitParams, 16, 2, 2, 10, "tiny_vit"},
    {"bert_tiny", {1, 32, 64}, {1, 32, 64}, kBertMacs, kBertParams, 16, 2, 2, 8, "bert_encoder"},
};

std::size_t count_op(const g::Graph& graph, const std::string& op) {
  std::size_t k = 0;
  for (const g::Node& n : graph.nodes) k += n.op_type == op ? 1 : 0;
  return k;
}

using ZooTransformer = ::testing::TestWithParam<Transformer>;

TEST_P(ZooTransformer, LoadsWithTheMacsAndParametersCountedByHand) {
  const Transformer& t = GetParam();
  const g::Graph graph = written_and_loaded(t.name);
  EXPECT_EQ(graph.opset, 13);
  ASSERT_EQ(graph.inputs.size(), 1U);
  EXPECT_EQ(graph.inputs[0].shape, t.input);
  EXPECT_EQ(model_info(t.name).input_shape, t.input);
  ASSERT_EQ(graph.outputs.size(), 1U);
  EXPECT_EQ(graph.outputs[0].shape, t.output);
  EXPECT_EQ(g::infer_shapes(graph).at(graph.outputs[0].name), t.output);
  EXPECT_EQ(g::count_macs(graph), t.macs);
  EXPECT_EQ(g::count_parameters(graph), t.learnable + kScalars);
  std::uint64_t scalars = 0;
  for (const auto& [name, w] : graph.initializers) {
    if (g::is_float(w.dtype) && w.shape.empty()) ++scalars;
  }
  EXPECT_EQ(scalars, kScalars);
  EXPECT_EQ(count_op(graph, "MatMul"), t.matmuls);
  EXPECT_EQ(count_op(graph, "Softmax"), t.softmaxes);
  EXPECT_EQ(count_op(graph, "Erf"), t.erfs);
  EXPECT_EQ(count_op(graph, "ReduceMean"), t.reduce_means);
}

// Every operator is one PyTorch 1.13 itself exported for a model of the same design (the exporter
// zoo's tiny_vit and bert_encoder, torch.onnx.export at opset 13): no Gelu or
// LayerNormalization op, which opset 13 does not have.
TEST_P(ZooTransformer, OperatorsAreThoseOfPyTorchsExport) {
  const Transformer& t = GetParam();
  const g::Graph ours = written_and_loaded(t.name);
  const g::Graph theirs = load_onnx(std::string(OCTASIM_SOURCE_DIR) +
                                    "/models/networks/exporter_zoo/" + t.pytorch_export + ".onnx");
  std::set<std::string> exported;
  for (const g::Node& n : theirs.nodes) exported.insert(n.op_type);
  for (const g::Node& n : ours.nodes) {
    EXPECT_EQ(exported.count(n.op_type), 1U) << n.label() << ": not in " << t.pytorch_export;
  }
}

TEST_P(ZooTransformer, WeightsAreHeScaledAndFinite) {
  expect_he_scaled_and_finite(GetParam().name);
}

// LayerNorm's gamma 1 +- 0.1 and beta within +-0.05.
TEST_P(ZooTransformer, LayerNormAffineNearIdentity) {
  const g::Graph graph = written_and_loaded(GetParam().name);
  std::size_t norms = 0;
  for (const g::Node& n : graph.nodes) {
    if (n.op_type != "ReduceMean" || n.name.size() < 5 ||
        n.name.compare(n.name.size() - 5, 5, ".mean") != 0) {
      continue;
    }
    const std::string norm = n.name.substr(0, n.name.size() - 5);
    for (const float v : graph.initializers.at(norm + ".weight").f) {
      ASSERT_NEAR(v, 1.0F, 0.1F) << norm;
    }
    for (const float v : graph.initializers.at(norm + ".bias").f) ASSERT_NEAR(v, 0.0F, 0.05F);
    ++norms;
  }
  EXPECT_EQ(2 * norms, GetParam().reduce_means);
}

TEST_P(ZooTransformer, SameBytesOnEveryWrite) {
  const std::string first = written_bytes(GetParam().name);
  EXPECT_GT(first.size(), 1000U);
  EXPECT_TRUE(first == written_bytes(GetParam().name));
}

TEST_P(ZooTransformer, ReferenceOutputFiniteWithSpread) {
  expect_sane_logits(GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(Networks, ZooTransformer, ::testing::ValuesIn(kTransformers),
                         [](const ::testing::TestParamInfo<Transformer>& param) {
                           return std::string(param.param.name);
                         });

TEST(ZooErrors, UnknownModelNamesTheKnownOnes) {
  try {
    (void)build_model("vgg16");
    FAIL() << "expected a ZooError";
  } catch (const ZooError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown model 'vgg16' (known: lenet5, alexnet, googlenet, resnet50, "
                 "mobilenet_v2, vit_tiny, bert_tiny)");
  }
}

TEST(ZooErrors, UnwritablePathIsAZooError) {
  const test::TempDir dir("zoo");
  const std::string path = (dir.path() / "no_such_dir" / "lenet5.onnx").string();
  try {
    write_model("lenet5", path);
    FAIL() << "expected a ZooError";
  } catch (const ZooError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": cannot write", 0), 0U) << e.what();
  }
}

}  // namespace
}  // namespace octasim::firmware::zoo
