// The residual Add fused into a convolution (planner.hpp): NVDLA's online element-wise mode, the
// convolution's flying SDP adding a tensor another layer wrote, so the sum costs no memory pass
// of its own.
#include "firmware/net/planner.hpp"

namespace octasim::firmware::net {

std::vector<std::string> layer_reads(const models::graph::Graph& g, const PlannedLayer& l) {
  if (l.kind == LayerKind::kPpu) return l.ppu.reads;
  std::vector<std::string> reads{l.input};
  if (l.kind == LayerKind::kConv && !l.conv.residual.empty()) reads.push_back(l.conv.residual);
  if (l.kind == LayerKind::kSdp && !l.sdp.operand.empty() && !g.is_constant(l.sdp.operand)) {
    reads.push_back(l.sdp.operand);
  }
  return reads;
}

namespace detail {

void Planner::fuse_residual(PlannedLayer& layer) {
  // An activation fused already would come before the sum; integer networks do not add on SDP
  // (ONNX's integer Add wraps): both leave the Add to a layer of its own.
  if (layer.conv.relu || layer.conv.clip_max > 0.0 || layer.conv.integer) return;
  std::size_t idx = 0;
  const Node* add = sole_consumer(layer.output, &idx);
  if (add == nullptr || add->op_type != "Add" || add->inputs.size() != 2) return;
  const std::string& other = add->inputs[0] == layer.output ? add->inputs[1] : add->inputs[0];
  // The other addend must be on the device before this layer runs: the graph's input or an
  // earlier layer's output (not a constant, a view or a tensor still to come), of the sum's
  // shape (SDP reads it element for element, no broadcasting).
  const std::string& sum = add->outputs.at(0);
  if (other == layer.output || g_.is_constant(other) || plan_.cubes.count(other) == 0 ||
      plan_.views.count(other) != 0 || plan_.transposed.count(other) != 0 ||
      plan_.shapes.at(other) != plan_.shapes.at(sum) ||
      plan_.shapes.at(layer.output) != plan_.shapes.at(sum)) {
    return;
  }
  used_[idx] = true;
  layer.nodes.push_back(idx);
  layer.conv.residual = other;
  layer.output = sum;
  // A ReLU after the sum: BN's, after the operand.
  const Node* relu = sole_consumer(layer.output, &idx);
  if (relu != nullptr && relu->op_type == "Relu") {
    used_[idx] = true;
    layer.nodes.push_back(idx);
    layer.conv.relu = true;
    layer.output = relu->outputs.at(0);
  }
}

}  // namespace detail
}  // namespace octasim::firmware::net
