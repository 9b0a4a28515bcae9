#include "firmware/net/placement.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/core.h>

#include "sim/core/hw_config.hpp"

namespace octasim::firmware::net {

namespace {

// A feature surface of a layer: its precision (for its extent) and whether the unit that reads or
// writes it can reach the CV-SRAM.
struct SurfaceRef {
  FeatureSurface* surface;
  Precision precision;
  bool dram_only;
  // Multi-batch (batch.hpp): the bytes the other images' slots add beyond the surface.
  std::uint64_t other_slots = 0;
};

// An address field naming (a part of) a constant, and the field saying which memory it is in;
// null: the unit reads it from DRAM only.
struct AddressRef {
  std::uint64_t* address;
  Ram* ram;
};

struct LayerRefs {
  std::vector<SurfaceRef> surfaces;
  std::vector<AddressRef> addresses;
};

void add_stage(SdpStage& s, LayerRefs& r) {
  if (s.bias) r.addresses.push_back({&s.bias->address, &s.bias->ram});
  if (s.scale) r.addresses.push_back({&s.scale->address, &s.scale->ram});
  if (s.bias_scale) r.addresses.push_back({&s.bias_scale->address, &s.bias_scale->ram});
  if (s.bn_bias_scale) r.addresses.push_back({&s.bn_bias_scale->address, &s.bn_bias_scale->ram});
}

Precision octav_precision(OctavDataType t) {
  return t == OctavDataType::kInt8 ? Precision::kInt8 : Precision::kInt16;  // 1 or 2 bytes
}

// Every surface and constant address of a layer, with what may move.
LayerRefs layer_refs(NetLayer& layer) {
  LayerRefs r;
  HwLayer& hw = layer.hw;
  std::visit(
      [&r](auto& l) {
        using T = std::decay_t<decltype(l)>;
        if constexpr (std::is_same_v<T, ConvLayer>) {
          // Compressed weights: the WMB and WGS follow WEIGHT_RAM_TYPE too; the compiler does not
          // compress, so such a layer's weights simply stay.
          r.surfaces.push_back(
              {&l.src, l.precision, false, std::uint64_t{l.batches - 1} * l.src_batch_stride});
          r.surfaces.push_back(
              {&l.dst, l.precision, false, std::uint64_t{l.batches - 1} * l.dst_batch_stride});
          r.addresses.push_back({&l.weight_address, l.compressed ? nullptr : &l.weight_ram});
          add_stage(l.sdp, r);
          // A fused element-wise operand (a residual): the flying SDP reads it per element.
          if (l.sdp.ew) r.surfaces.push_back({&l.sdp.ew->surface, l.precision, false});
        } else if constexpr (std::is_same_v<T, ConvPoolLayer>) {
          // conv.dst (= pool.src) is not written by the device, but the golden passes through it.
          r.surfaces.push_back({&l.conv.src, l.conv.precision, false});
          r.surfaces.push_back({&l.conv.dst, l.conv.precision, false});
          r.surfaces.push_back({&l.pool.src, l.pool.precision, false});
          r.surfaces.push_back({&l.pool.dst, l.pool.precision, false});
          r.addresses.push_back(
              {&l.conv.weight_address, l.conv.compressed ? nullptr : &l.conv.weight_ram});
          add_stage(l.conv.sdp, r);
          if (l.conv.sdp.ew) {
            r.surfaces.push_back({&l.conv.sdp.ew->surface, l.conv.precision, false});
          }
        } else if constexpr (std::is_same_v<T, PdpLayer> || std::is_same_v<T, CdpLayer> ||
                             std::is_same_v<T, BdmaLayer>) {
          r.surfaces.push_back({&l.src, l.precision, false});
          r.surfaces.push_back({&l.dst, l.precision, false});
        } else if constexpr (std::is_same_v<T, SdpLayer>) {
          r.surfaces.push_back({&l.src, l.precision, false});
          r.surfaces.push_back({&l.dst, l.output_precision(), false});
          add_stage(l, r);
          if (l.ew) r.surfaces.push_back({&l.ew->surface, l.precision, false});
          if (l.quantize) {  // sdp_quantize programs its tables' RAM_TYPE as MC
            if (l.quantize->bs_table) r.addresses.push_back({&*l.quantize->bs_table, nullptr});
            if (l.quantize->zero_point_table) {
              r.addresses.push_back({&*l.quantize->zero_point_table, nullptr});
            }
          }
        } else if constexpr (std::is_same_v<T, OctavLayer>) {
          r.surfaces.push_back({&l.src, octav_precision(l.type), true});  // DRAM only
        } else if constexpr (std::is_same_v<T, RubikContract>) {
          r.surfaces.push_back({&l.src, l.precision, true});  // Rubik reads and writes MCIF only
          r.surfaces.push_back({&l.dst, l.precision, true});
        } else if constexpr (std::is_same_v<T, FakeQuantSdpLayer>) {
          r.surfaces.push_back({&l.src, l.precision, false});
          r.surfaces.push_back({&l.dst, l.precision, false});
        } else if constexpr (std::is_same_v<T, PpuSoftmaxLayer>) {
          // The PPU reaches DRAM only; its push buffer names the surfaces' addresses.
          r.surfaces.push_back({&l.src, Precision::kFp16, true});
          r.surfaces.push_back({&l.dst, Precision::kFp16, true});
          r.addresses.push_back({&l.push_buffer, nullptr});
        } else if constexpr (std::is_same_v<T, PpuNodeLayer>) {
          // The PPU reaches DRAM only; its kernel image names the surfaces' addresses.
          for (FeatureSurface& s : l.srcs) r.surfaces.push_back({&s, l.precision, true});
          r.surfaces.push_back({&l.dst, l.precision, true});
          r.addresses.push_back({&l.push_buffer, nullptr});
        } else {
          static_assert(!sizeof(T), "placement: a HwLayer alternative without its surfaces");
        }
      },
      hw);
  // A band of a convolution split in height (split.hpp) names the whole output too.
  if (layer.bands > 1) {
    if (const auto* conv = std::get_if<ConvLayer>(&hw)) {
      r.surfaces.push_back({&layer.whole_output, conv->precision, false});
    }
  }
  return r;
}

// A set of disjoint half-open intervals.
class IntervalSet {
 public:
  void add(std::uint64_t b, std::uint64_t e) {
    if (b < e) set_[b] = e;  // only used on an empty set
  }
  void remove(std::uint64_t b, std::uint64_t e) {
    std::map<std::uint64_t, std::uint64_t> out;
    for (const auto& [x, y] : set_) {
      if (y <= b || x >= e) {
        out[x] = y;
        continue;
      }
      if (x < b) out[x] = b;
      if (y > e) out[e] = y;
    }
    set_ = std::move(out);
  }
  [[nodiscard]] bool contains(std::uint64_t b, std::uint64_t e) const {
    auto it = set_.upper_bound(b);
    if (it == set_.begin()) return false;
    --it;
    return it->first <= b && e <= it->second;
  }
  [[nodiscard]] bool intersects(std::uint64_t b, std::uint64_t e) const {
    auto it = set_.lower_bound(e);  // the first interval starting at or after e cannot
    if (it == set_.begin()) return false;
    --it;
    return it->second > b;
  }
  [[nodiscard]] std::uint64_t bytes() const {
    std::uint64_t n = 0;
    for (const auto& [x, y] : set_) n += y - x;
    return n;
  }
  [[nodiscard]] std::uint64_t end() const { return set_.empty() ? 0 : set_.rbegin()->second; }

 private:
  std::map<std::uint64_t, std::uint64_t> set_;
};

struct Extent {
  SurfaceRef ref;
  std::uint64_t begin, end;
};

// The activation surfaces of the program (in the activation region) with their extents.
std::vector<Extent> activation_extents(NetProgram& p, std::vector<LayerRefs>& refs) {
  std::vector<SurfaceRef> all;
  for (LayerRefs& r : refs) all.insert(all.end(), r.surfaces.begin(), r.surfaces.end());
  const std::uint64_t others = p.images - 1;
  all.push_back({&p.input.surface, p.input.precision, false, others * p.input.batch_stride});
  for (NetTensor& t : p.outputs) {
    all.push_back({&t.surface, t.precision, false, others * t.batch_stride});
  }
  std::vector<Extent> out;
  for (const SurfaceRef& s : all) {
    const std::uint64_t a = s.surface->address;
    if (a < kActivationBase || a >= p.memory_end) continue;
    out.push_back(
        {s, a, a + surface_bytes(*s.surface, s.precision, p.hw.atom_bytes) + s.other_slots});
  }
  return out;
}

// Moves the activation region's part M (see placement.hpp) to `cv_base`; returns the CV-SRAM
// bytes it spans from cv_base.
std::uint64_t place_activations(NetProgram& p, std::vector<LayerRefs>& refs, std::uint64_t cv_base,
                                std::uint64_t capacity) {
  const std::uint64_t footprint =
      p.memory_end > kActivationBase ? p.memory_end - kActivationBase : 0;
  const std::vector<Extent> extents = activation_extents(p, refs);
  IntervalSet m;
  m.add(kActivationBase, kActivationBase + std::min(footprint, capacity));
  for (const Extent& e : extents) {
    if (e.ref.dram_only) m.remove(e.begin, e.end);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const Extent& e : extents) {
      if (m.intersects(e.begin, e.end) && !m.contains(e.begin, e.end)) {
        m.remove(e.begin, e.end);
        changed = true;
      }
    }
  }
  for (const Extent& e : extents) {
    if (!m.contains(e.begin, e.end)) continue;
    e.ref.surface->address = cv_base + (e.begin - kActivationBase);
    e.ref.surface->ram = Ram::kCv;
  }
  p.placement.activation_cvsram_bytes = m.bytes();
  p.placement.activation_dram_bytes = footprint - m.bytes();
  return m.bytes() == 0 ? 0 : aligned(m.end() - kActivationBase);
}

// Moves constants, in program order, to [cv_next, cv_end) where they fit.
std::uint64_t place_constants(NetProgram& p, std::vector<LayerRefs>& refs, std::uint64_t cv_next,
                              std::uint64_t cv_end) {
  // Every address field by the constant it points into.
  std::map<std::uint64_t, std::size_t> by_address;
  for (std::size_t i = 0; i < p.constants.size(); ++i) by_address[p.constants[i].address] = i;
  std::vector<std::vector<AddressRef>> users(p.constants.size());
  for (LayerRefs& r : refs) {
    std::vector<AddressRef> fields = r.addresses;
    // A surface outside the activation region is a constant operand (an element-wise table).
    for (const SurfaceRef& s : r.surfaces) {
      if (s.surface->address < kActivationBase || s.surface->address >= p.memory_end) {
        fields.push_back({&s.surface->address, s.dram_only ? nullptr : &s.surface->ram});
      }
    }
    for (const AddressRef& f : fields) {
      auto it = by_address.upper_bound(*f.address);
      if (it == by_address.begin()) continue;
      const ConstantBlob& c = p.constants[std::prev(it)->second];
      if (*f.address < c.address + c.bytes.size()) users[std::prev(it)->second].push_back(f);
    }
  }
  for (std::size_t i = 0; i < p.constants.size(); ++i) {
    ConstantBlob& c = p.constants[i];
    const std::uint64_t size = c.bytes.size();
    // A constant no layer field names is reached some other way (the PPU's softmax descriptor,
    // named inside its push buffer): it stays where that reference expects it.
    const bool movable =
        !users[i].empty() && std::all_of(users[i].begin(), users[i].end(),
                                         [](const AddressRef& f) { return f.ram != nullptr; });
    if (!movable || size == 0 || cv_next + size > cv_end) {
      p.placement.constant_dram_bytes += size;
      continue;
    }
    for (const AddressRef& f : users[i]) {
      *f.address = cv_next + (*f.address - c.address);
      *f.ram = Ram::kCv;
    }
    c.address = cv_next;
    c.ram = Ram::kCv;
    p.placement.constant_cvsram_bytes += size;
    cv_next += aligned(size);
  }
  return cv_next;
}

}  // namespace

std::pair<std::uint64_t, std::uint64_t> usable_cvsram(const HwConfig& hw) {
  if (!hw.dla.secondary_memif || hw.mem.cvsram_bytes == 0) return {0, 0};
  std::uint64_t begin = hw.mem.cvsram_base;
  std::uint64_t end = begin + hw.mem.cvsram_bytes;
  if (begin < kMemoryBase) {
    end = std::min(end, kMemoryBase);
  } else {
    begin = std::max(begin, kMemoryLimit);
  }
  // The program's bump allocations align to kAlign; so do the CV-SRAM's.
  begin = aligned(begin);
  return begin < end ? std::pair{begin, end} : std::pair<std::uint64_t, std::uint64_t>{0, 0};
}

std::string placement_summary(const MemoryPlacement& m) {
  return fmt::format(
      "memory: activations {} B CV-SRAM, {} B DRAM; constants (weights, tables) {} B CV-SRAM, "
      "{} B DRAM",
      m.activation_cvsram_bytes, m.activation_dram_bytes, m.constant_cvsram_bytes,
      m.constant_dram_bytes);
}

void place_in_cvsram(NetProgram& p, const HwConfig& hw, const PlacementOptions& options) {
  p.placement = MemoryPlacement{};
  const auto [cv_begin, cv_end] =
      options.cvsram ? usable_cvsram(hw) : std::pair<std::uint64_t, std::uint64_t>{0, 0};
  std::vector<LayerRefs> refs;
  for (NetLayer& l : p.layers) refs.push_back(layer_refs(l));
  const std::uint64_t activations = place_activations(p, refs, cv_begin, cv_end - cv_begin);
  const std::uint64_t next = place_constants(p, refs, cv_begin + activations, cv_end);
  p.placement.cvsram_begin = cv_begin;
  p.placement.cvsram_end = next;
}

}  // namespace octasim::firmware::net
