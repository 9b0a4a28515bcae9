// ViT and BERT in miniature, written with the operators PyTorch 1.13 exports at opset 13:
// LayerNorm and GELU decomposed (builder.hpp), nn.Linear as MatMul + Add, multi-head attention
// as per-projection Reshape/Transpose to 1 x heads x T x d, MatMul of two activations, Div by
// sqrt(d), Softmax, MatMul, Transpose/Reshape back. Not trained: LayerNorm keeps every layer's
// input at unit scale, the Linear weights have He's variance.
#include <cmath>
#include <string>

#include "firmware/zoo/builder.hpp"
#include "firmware/zoo/networks.hpp"

namespace octasim::firmware::zoo::detail {
namespace {

// Multi-head self-attention on x (1 x T x D), `heads` heads of d = D / heads: Q, K and V
// projections, each split into heads (K transposed once, to 1 x heads x d x T), scores
// q k^T / sqrt(d), Softmax over the keys, the heads' contexts merged and projected.
std::string attention(ModelBuilder& b, const std::string& x, const std::string& name,
                      std::int64_t heads) {
  const Shape s = b.shape(x);
  const std::int64_t tokens = s[1], dim = s[2], d = dim / heads;
  const auto split = [&](const std::string& proj, const std::vector<std::int64_t>& perm) {
    const std::string p = b.linear(x, name + "." + proj, dim);
    return b.transpose(b.reshape(p, p + ".heads", {1, tokens, heads, d}), p + ".transpose", perm);
  };
  const std::string q = split("q", {0, 2, 1, 3});  // 1 x heads x T x d
  const std::string k = split("k", {0, 2, 3, 1});  // 1 x heads x d x T
  const std::string v = split("v", {0, 2, 1, 3});
  const std::string scores =
      b.binary("Div", b.matmul(q, k, name + ".scores"),
               b.scalar("attention.sqrt" + std::to_string(d),
                        static_cast<float>(std::sqrt(static_cast<double>(d)))),
               name + ".scaled");
  const std::string context = b.matmul(b.softmax(scores, name + ".softmax"), v, name + ".context");
  const std::string merged =
      b.reshape(b.transpose(context, name + ".context.transpose", {0, 2, 1, 3}), name + ".merge",
                {1, tokens, dim});
  return b.linear(merged, name + ".out", dim);
}

// Linear (D -> hidden), GELU, Linear (hidden -> D).
std::string mlp(ModelBuilder& b, const std::string& x, const std::string& name,
                std::int64_t hidden) {
  const std::int64_t dim = b.shape(x).back();
  return b.linear(b.gelu(b.linear(x, name + ".fc1", hidden), name + ".gelu"), name + ".fc2", dim);
}

}  // namespace

// Dosovitskiy et al. 2020's ViT at CIFAR's size: 4x4 patches of a 32x32 image (64 tokens, as
// tiny_vit's 8x8 patches of 64x64 in the exporter zoo), a class token, a learned position
// embedding, pre-norm encoder layers, the classifier on the class token.
onnx::ModelProto vit_tiny(std::uint64_t seed) {
  constexpr std::int64_t kImage = 32, kPatch = 4, kDim = 64, kHeads = 4, kLayers = 2, kMlp = 128,
                         kClasses = 10;
  constexpr std::int64_t kPatches = (kImage / kPatch) * (kImage / kPatch);
  ModelBuilder b("vit_tiny",
                 "ViT (Dosovitskiy et al. 2020) in miniature on 1x3x32x32: 4x4 patches (64 tokens "
                 "+ class token) of 64, 2 pre-norm encoder layers (4 heads, MLP 128, GELU), "
                 "logits of 10 classes on the class token; deterministic untrained weights",
                 seed, {1, 3, kImage, kImage});
  // The patch embedding: a Conv with stride = kernel = patch, flattened and transposed to tokens
  // (x.flatten(2).transpose(1, 2)).
  std::string x = b.conv(b.input(), "patch_embed", {kDim, kPatch, kPatch});
  x = b.transpose(b.reshape(x, "patch_embed.flatten", {1, kDim, kPatches}), "patch_embed.tokens",
                  {0, 2, 1});
  // The class token at the scale of the patch tokens (U[-1, 1), second moment 1/3), so that the
  // first LayerNorm's squares of its row stay far from FP16's subnormals; the position
  // embedding a perturbation (U[-0.1, 0.1)).
  x = b.concat({b.parameter("cls_token", {1, 1, kDim}, 1.0), x}, "tokens", 1);
  x = b.add(x, b.parameter("pos_embed", {1, kPatches + 1, kDim}, 0.1), "pos_embed.add");
  for (std::int64_t layer = 0; layer < kLayers; ++layer) {
    const std::string p = "blocks." + std::to_string(layer);
    x = b.add(x, attention(b, b.layer_norm(x, p + ".norm1"), p + ".attn", kHeads), p + ".add1");
    x = b.add(x, mlp(b, b.layer_norm(x, p + ".norm2"), p + ".mlp", kMlp), p + ".add2");
  }
  x = b.gather(b.layer_norm(x, "norm"), "cls", 1, 0);  // x[:, 0]: 1 x 64
  return b.finish(b.gemm(x, "head", kClasses));
}

// Devlin et al. 2018's encoder in miniature, without the embeddings (the input is an embedded
// sequence): post-norm layers, Add & LayerNorm after the attention and after the GELU FFN, as
// nn.TransformerEncoderLayer(norm_first=False) and BERT's BertLayer compute.
onnx::ModelProto bert_tiny(std::uint64_t seed) {
  constexpr std::int64_t kTokens = 32, kDim = 64, kHeads = 4, kLayers = 2, kFfn = 128;
  ModelBuilder b("bert_tiny",
                 "BERT-like encoder (Devlin et al. 2018) in miniature on an embedded sequence "
                 "1x32x64: 2 post-norm layers (4 heads, GELU FFN 128), the sequence out; "
                 "deterministic untrained weights",
                 seed, {1, kTokens, kDim});
  std::string x = b.input();
  for (std::int64_t layer = 0; layer < kLayers; ++layer) {
    const std::string p = "layers." + std::to_string(layer);
    x = b.layer_norm(b.add(x, attention(b, x, p + ".attn", kHeads), p + ".add1"), p + ".norm1");
    x = b.layer_norm(b.add(x, mlp(b, x, p + ".ffn", kFfn), p + ".add2"), p + ".norm2");
  }
  return b.finish(x);
}

}  // namespace octasim::firmware::zoo::detail
