// Fuzz target: the PPU node kernel's image (models/ops/ppu_node.cpp decode_node). A malformed
// image must give NodeImageError, nothing else; an accepted one encodes back to the same bytes
// (the format has one encoding per image) and its cost and place sizes are computed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "models/ops/ppu_node.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace M = octasim::models::ops;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  M::NodeImage image;
  try {
    image = M::decode_node(data, size);
  } catch (const M::NodeImageError& e) {
    octasim::fuzz::rejected(e);
    return 0;
  }
  const std::vector<std::uint8_t> again = M::encode_node(image);
  if (again.size() != size || !std::equal(again.begin(), again.end(), data)) std::abort();
  (void)M::node_cost(image);
  for (const M::TensorPlace& p : image.outputs) (void)M::place_bytes(p);
  return 0;
}
