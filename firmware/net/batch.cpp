#include "firmware/net/batch.hpp"

#include <algorithm>
#include <functional>
#include <iterator>
#include <string>
#include <type_traits>
#include <variant>

#include <fmt/core.h>

#include "firmware/net/memory_layout.hpp"
#include "firmware/net/runtime.hpp"

namespace octasim::firmware::net {

using models::graph::GraphError;

bool fully_connected(const ConvLayer& l) {
  return !l.winograd && l.kernel_width == l.src.width && l.kernel_height == l.src.height &&
         l.pad_left == 0 && l.pad_right == 0 && l.pad_top == 0 && l.pad_bottom == 0 &&
         l.dilation_x == 1 && l.dilation_y == 1;
}

std::uint32_t max_fc_batch(const ConvLayer& l, const ConvHardware& hw) {
  const ConvCbufBudget b = conv_cbuf_budget(l, hw);
  std::uint32_t n = 1;
  while (n < 32 &&
         b.data_banks(std::uint64_t{l.src.height} * (n + 1)) + b.min_weight_banks <= b.banks) {
    ++n;
  }
  return n;
}

std::vector<std::uint32_t> fc_batches(const ConvLayer& l, std::uint32_t images,
                                      const ConvHardware& hw) {
  const std::uint32_t most = max_fc_batch(l, hw);
  std::vector<std::uint32_t> out;
  for (std::uint32_t left = images; left > 0; left -= std::min(left, most)) {
    out.push_back(std::min(left, most));
  }
  return out;
}

void write_batch_input(const NetProgram& p, const models::graph::Tensor& batch, std::size_t first,
                       models::ops::Memory& mem) {
  for (std::size_t b = 0; b < p.images; ++b) {
    const std::vector<std::uint8_t> bytes = input_image(p, batch, first + b);
    mem.write(dma_address_of(p.input.surface) + b * p.input.batch_stride, bytes.data(),
              bytes.size());
  }
}

namespace {

enum class Access : std::uint8_t { kRead, kWrite };
using SurfaceFn = std::function<void(FeatureSurface&, Precision, Access)>;

// Every feature surface of a layer, reads before the writes that follow them (a convolution's
// output before the pooling that takes it on the fly).
void visit_surfaces(HwLayer& hw, const SurfaceFn& f) {
  std::visit(
      [&f](auto& l) {
        using T = std::decay_t<decltype(l)>;
        if constexpr (std::is_same_v<T, ConvLayer>) {
          f(l.src, l.precision, Access::kRead);
          if (l.sdp.ew) f(l.sdp.ew->surface, l.precision, Access::kRead);  // a residual Add
          f(l.dst, l.precision, Access::kWrite);
        } else if constexpr (std::is_same_v<T, ConvPoolLayer>) {
          f(l.conv.src, l.conv.precision, Access::kRead);
          if (l.conv.sdp.ew) f(l.conv.sdp.ew->surface, l.conv.precision, Access::kRead);
          f(l.conv.dst, l.conv.precision, Access::kWrite);
          f(l.pool.src, l.pool.precision, Access::kRead);
          f(l.pool.dst, l.pool.precision, Access::kWrite);
        } else if constexpr (std::is_same_v<T, SdpLayer>) {
          f(l.src, l.precision, Access::kRead);
          if (l.ew) f(l.ew->surface, l.precision, Access::kRead);
          f(l.dst, l.output_precision(), Access::kWrite);
        } else if constexpr (std::is_same_v<T, OctavLayer>) {
          f(l.src, Precision::kInt16, Access::kRead);  // INT8 or INT16 elements: the wider
        } else if constexpr (std::is_same_v<T, PpuSoftmaxLayer>) {
          f(l.src, Precision::kFp16, Access::kRead);
          f(l.dst, Precision::kFp16, Access::kWrite);
        } else if constexpr (std::is_same_v<T, PpuNodeLayer>) {
          for (FeatureSurface& s : l.srcs) f(s, l.precision, Access::kRead);
          f(l.dst, l.precision, Access::kWrite);
        } else {  // PDP, CDP, the fake-quantizing SDP: src and dst at one precision
          f(l.src, l.precision, Access::kRead);
          f(l.dst, l.precision, Access::kWrite);
        }
      },
      hw);
}

bool same_surface(const FeatureSurface& a, const FeatureSurface& b) {
  return a.address == b.address && a.ram == b.ram && a.width == b.width && a.height == b.height &&
         a.channels == b.channels && a.line_stride == b.line_stride &&
         a.surface_stride == b.surface_stride;
}

std::uint64_t round_up(std::uint64_t v, std::uint64_t m) {
  return (v + m - 1) / m * m;
}

// A byte range of one memory: a tensor's buffer as the one-image program placed it.
struct Region {
  std::uint64_t begin = 0, end = 0;
  Ram ram = Ram::kMc;
  [[nodiscard]] bool contains(std::uint64_t b, std::uint64_t e, Ram r) const {
    return r == ram && b >= begin && e <= end;
  }
  [[nodiscard]] bool overlaps(std::uint64_t b, std::uint64_t e, Ram r) const {
    return r == ram && b < end && begin < e;
  }
};

// A tensor with one slot per image: where the one-image program had it, and where slot 0 is.
struct Slots {
  Region was;
  std::uint64_t address = 0;  // slot 0
  std::uint64_t stride = 0;   // bytes from one slot to the next
};

// A surface the tail writes: the one-image program's, and slot 0 of its buffer.
struct TailBuffer {
  FeatureSurface was, placed;
  std::uint64_t stride = 0;
};

// One visited surface of a tail layer: slot 0 and the slot stride (0: the same for every image,
// a constant).
struct Placed {
  FeatureSurface slot0;
  std::uint64_t stride = 0;
};

FeatureSurface in_slot(const Placed& v, std::size_t image) {
  FeatureSurface s = v.slot0;
  s.address += image * v.stride;
  return s;
}

class Batcher {
 public:
  Batcher(const NetProgram& one, unsigned images)
      : one_(one), images_(images), next_(aligned(one.memory_end)) {}

  NetProgram run();

 private:
  [[nodiscard]] unsigned atom() const { return one_.hw.atom_bytes; }
  [[nodiscard]] std::uint64_t bytes(const FeatureSurface& s, Precision p) const {
    return surface_bytes(s, p, atom());
  }
  std::uint64_t allocate(std::uint64_t bytes);
  Slots slots(const FeatureSurface& s, Precision p);
  void check_program(std::size_t first_fc) const;
  void locate_tail_input(std::size_t first_fc);
  // Moves `s` into slot `image` when it lies in the input's or the tail input's buffer; returns
  // that tensor's slot stride, or 0 when `s` is elsewhere.
  std::uint64_t into_slot(FeatureSurface& s, Precision p, std::size_t image) const;
  void add_prefix(std::size_t first_fc);
  // Slot 0 and stride of every surface of tail layer `l`, registering the buffers it writes.
  std::vector<Placed> place_tail_layer(const NetLayer& l);
  // A fully-connected layer of the tail: its batches, in multi-batch mode.
  void add_batched_layer(const NetLayer& l);
  // Tail layers [begin, end) (none fully connected) image after image, in order within each
  // image: an OCTAV layer stays just before the SDP it programs.
  void add_per_image(std::size_t begin, std::size_t end);
  void place_outputs();

  const NetProgram& one_;
  const unsigned images_;
  NetProgram p_;
  std::uint64_t next_;
  Slots input_;
  Slots tail_input_;  // the first fully-connected layer's input, when it is not the input
  bool tail_input_is_input_ = false;
  std::vector<TailBuffer> written_;
};

std::uint64_t Batcher::allocate(std::uint64_t n) {
  const std::uint64_t a = next_;
  next_ += aligned(n);
  if (next_ > kMemoryLimit) {
    throw GraphError(fmt::format(
        "--batch {}: the batch's buffers need more than the activation region (up to 0x{:x})",
        images_, kMemoryLimit));
  }
  return a;
}

Slots Batcher::slots(const FeatureSurface& s, Precision p) {
  Slots out;
  out.was = {s.address, s.address + bytes(s, p), s.ram};
  out.stride = aligned(bytes(s, p));
  out.address = allocate(out.stride * images_);
  return out;
}

void Batcher::check_program(std::size_t first_fc) const {
  if (!one_.hw.batch) {
    throw GraphError(
        fmt::format("--batch {}: {} has no multi-batch convolution (BATCH); a configuration with "
                    "it, such as nv_full, runs the fully-connected layers in batches",
                    images_, one_.config));
  }
  if (one_.input.precision == Precision::kFp16) {
    throw GraphError(fmt::format(
        "--batch {}: multi-batch convolution runs INT8 and INT16 codes (not FP16)", images_));
  }
  for (const NetLayer& l : one_.layers) {
    if (std::holds_alternative<PpuSoftmaxLayer>(l.hw) ||
        std::holds_alternative<PpuNodeLayer>(l.hw)) {
      throw GraphError(
          fmt::format("{}: --batch {}: the PPU's kernels are not batched", l.nodes, images_));
    }
  }
  if (first_fc == one_.layers.size()) {
    throw GraphError(fmt::format(
        "--batch {}: the network has no fully-connected layer (a convolution whose kernel "
        "covers its input) to batch",
        images_));
  }
}

void Batcher::locate_tail_input(std::size_t first_fc) {
  const ConvLayer& fc = std::get<ConvLayer>(one_.layers[first_fc].hw);
  const std::uint64_t b = fc.src.address, e = b + bytes(fc.src, fc.precision);
  if (input_.was.contains(b, e, fc.src.ram)) {
    tail_input_is_input_ = true;
    return;
  }
  tail_input_ = slots(fc.src, fc.precision);
  // The layer that last wrote over the tail's input must have written inside it (not a larger
  // tensor holding it): that write moves into the slots.
  for (std::size_t i = first_fc; i-- > 0;) {
    bool found = false, inside = false;
    NetLayer l = one_.layers[i];
    visit_surfaces(l.hw, [&](FeatureSurface& s, Precision p, Access a) {
      const std::uint64_t sb = s.address, se = sb + bytes(s, p);
      if (a == Access::kWrite && tail_input_.was.overlaps(sb, se, s.ram)) {
        found = true;
        inside = inside || tail_input_.was.contains(sb, se, s.ram);
      }
    });
    if (!found) continue;
    if (inside) return;
    break;
  }
  throw GraphError(fmt::format(
      "{}: --batch {}: its input is not a tensor one layer before it writes (batched inputs are "
      "whole tensors)",
      one_.layers[first_fc].nodes, images_));
}

std::uint64_t Batcher::into_slot(FeatureSurface& s, Precision p, std::size_t image) const {
  const std::uint64_t b = s.address, e = b + bytes(s, p);
  for (const Slots* t : {&input_, &tail_input_}) {
    if (t->stride == 0 || (t == &tail_input_ && tail_input_is_input_)) continue;  // no slots yet
    if (!t->was.contains(b, e, s.ram)) continue;
    s.address = t->address + (b - t->was.begin) + image * t->stride;
    s.ram = Ram::kMc;
    return t->stride;
  }
  return 0;
}

void Batcher::add_prefix(std::size_t first_fc) {
  for (std::size_t image = 0; image < images_; ++image) {
    for (std::size_t i = 0; i < first_fc; ++i) {
      NetLayer l = one_.layers[i];
      visit_surfaces(l.hw,
                     [&](FeatureSurface& s, Precision p, Access) { (void)into_slot(s, p, image); });
      if (const auto* conv = std::get_if<ConvLayer>(&l.hw); conv != nullptr && l.bands > 1) {
        (void)into_slot(l.whole_output, conv->precision, image);
      }
      p_.layers.push_back(std::move(l));
    }
  }
}

std::vector<Placed> Batcher::place_tail_layer(const NetLayer& l) {
  NetLayer copy = l;
  const auto* conv = std::get_if<ConvLayer>(&copy.hw);
  const bool batched = conv != nullptr && fully_connected(*conv);
  const Region constants{one_.memory_begin, one_.constants_end, Ram::kMc};
  std::vector<Placed> placed;
  visit_surfaces(copy.hw, [&](FeatureSurface& s, Precision p, Access a) {
    Placed v{s, 0};
    if (a == Access::kWrite) {
      FeatureSurface at = s;
      at.ram = Ram::kMc;
      // What its readers take: a multi-batch layer's output is 1x1, which SDP writes as packed
      // atoms whatever the strides say (models/ops/sdp.cpp); the strides it is programmed with
      // are 64-byte aligned, as the programming guide requires in multi-batch mode.
      FeatureSurface read = at;
      if (batched) {
        read.line_stride = read.surface_stride = atom();
        at.line_stride = static_cast<std::uint32_t>(round_up(at.line_stride, 64));
        at.surface_stride = static_cast<std::uint32_t>(round_up(
            std::max<std::uint64_t>(at.surface_stride, std::uint64_t{at.height} * at.line_stride),
            64));
      }
      v.stride = aligned(std::max(bytes(at, p), bytes(read, p)));
      at.address = read.address = allocate(v.stride * images_);
      v.slot0 = at;
      written_.push_back({s, read, v.stride});
    } else {
      const auto w = std::find_if(written_.rbegin(), written_.rend(),
                                  [&s](const TailBuffer& t) { return same_surface(t.was, s); });
      const std::uint64_t e = s.address + bytes(s, p);
      if (w != written_.rend()) {
        v = {w->placed, w->stride};
      } else if ((v.stride = into_slot(v.slot0, p, 0)) == 0 &&
                 !constants.contains(s.address, e, s.ram)) {
        throw GraphError(fmt::format(
            "{}: --batch {}: after the first fully-connected layer, every layer must read the "
            "tensors the layers after it write whole, or their input (it reads a surface at "
            "0x{:x})",
            l.nodes, images_, s.address));
      }
    }
    placed.push_back(v);
  });
  return placed;
}

void Batcher::add_batched_layer(const NetLayer& l) {
  const ConvLayer& conv = std::get<ConvLayer>(l.hw);
  if (conv.sdp.ew) {
    throw GraphError(fmt::format(
        "{}: --batch {}: a fully-connected layer with an element-wise operand is not batched "
        "(multi-batch mode reads no per-element operand)",
        l.nodes, images_));
  }
  const std::vector<Placed> placed = place_tail_layer(l);  // src, dst
  std::vector<std::uint32_t> batches;
  try {
    batches = fc_batches(conv, images_, one_.hw);
  } catch (const FirmwareError& e) {
    throw GraphError(fmt::format("{}: --batch {}: {}", l.nodes, images_, e.what()));
  }
  if (placed[0].stride > 0xffffffffu || placed[1].stride > 0xffffffffu) {
    throw GraphError(fmt::format("{}: --batch {}: a batch stride above 4 GiB", l.nodes, images_));
  }
  std::size_t first = 0;
  for (const std::uint32_t n : batches) {
    NetLayer b = l;
    auto& c = std::get<ConvLayer>(b.hw);
    c.src = in_slot(placed[0], first);
    c.dst = in_slot(placed[1], first);
    c.batches = n;
    c.src_batch_stride = static_cast<std::uint32_t>(placed[0].stride);
    c.dst_batch_stride = static_cast<std::uint32_t>(placed[1].stride);
    try {
      (void)plan_conv(c, one_.hw);
    } catch (const FirmwareError& e) {
      throw GraphError(fmt::format("{}: --batch {}: {}", l.nodes, images_, e.what()));
    }
    b.macs = l.macs * n;
    b.network_macs = l.network_macs * n;
    p_.layers.push_back(std::move(b));
    first += n;
  }
}

void Batcher::add_per_image(std::size_t begin, std::size_t end) {
  std::vector<std::vector<Placed>> placed;
  for (std::size_t i = begin; i < end; ++i) placed.push_back(place_tail_layer(one_.layers[i]));
  for (std::size_t image = 0; image < images_; ++image) {
    for (std::size_t i = begin; i < end; ++i) {
      NetLayer copy = one_.layers[i];
      std::size_t k = 0;
      visit_surfaces(copy.hw, [&](FeatureSurface& s, Precision, Access) {
        s = in_slot(placed[i - begin][k++], image);
      });
      p_.layers.push_back(std::move(copy));
    }
  }
}

void Batcher::place_outputs() {
  for (NetTensor& t : p_.outputs) {
    const auto w = std::find_if(written_.rbegin(), written_.rend(), [&t](const TailBuffer& b) {
      return same_surface(b.was, t.surface);
    });
    if (w == written_.rend()) {
      throw GraphError(fmt::format(
          "--batch {}: the network output '{}' is computed before the fully-connected layers "
          "(only their outputs have a slot per image)",
          images_, t.name));
    }
    t.surface = w->placed;
    t.batch_stride = w->stride;
  }
}

NetProgram Batcher::run() {
  std::size_t first_fc = 0;
  while (first_fc < one_.layers.size()) {
    const auto* conv = std::get_if<ConvLayer>(&one_.layers[first_fc].hw);
    if (conv != nullptr && fully_connected(*conv)) break;
    ++first_fc;
  }
  check_program(first_fc);
  p_ = one_;
  p_.layers.clear();
  p_.images = images_;
  const FeatureSurface& in = one_.input.surface;
  input_.was = {in.address, in.address + bytes(in, one_.input.precision), in.ram};
  const auto place_input = [this] {
    input_ = slots(one_.input.surface, one_.input.precision);
    p_.input.surface.address = input_.address;
    p_.input.surface.ram = Ram::kMc;
    p_.input.batch_stride = input_.stride;
  };
  // The input's slots are allocated last unless the tail reads them: read once per image, they
  // are what placement (placement.hpp) should leave in DRAM when the CV-SRAM runs short.
  locate_tail_input(first_fc);
  if (tail_input_is_input_) place_input();
  const auto batched = [this](std::size_t i) {
    const auto* conv = std::get_if<ConvLayer>(&one_.layers[i].hw);
    return conv != nullptr && fully_connected(*conv);
  };
  for (std::size_t i = first_fc; i < one_.layers.size();) {
    if (batched(i)) {
      add_batched_layer(one_.layers[i++]);
      continue;
    }
    std::size_t end = i;
    while (end < one_.layers.size() && !batched(end)) ++end;
    add_per_image(i, end);
    i = end;
  }
  if (!tail_input_is_input_) place_input();
  std::vector<NetLayer> tail = std::move(p_.layers);
  p_.layers.clear();
  add_prefix(first_fc);
  p_.layers.insert(p_.layers.end(), std::make_move_iterator(tail.begin()),
                   std::make_move_iterator(tail.end()));
  place_outputs();
  p_.memory_end = next_;
  return std::move(p_);
}

}  // namespace

NetProgram batch_program(NetProgram one, unsigned images) {
  if (images <= 1) return one;
  return Batcher(one, images).run();
}

}  // namespace octasim::firmware::net
