#include "firmware/net/schedule.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/core.h>

#include "firmware/net/runtime.hpp"
#include "firmware/ppu/commands.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware::net {

void await_layer(Mmio& mmio, const LayerInterrupts& bits) {
  for (const unsigned bit : bits) mmio.wait_interrupt(bit);
}

namespace {

ByteRange range(const FeatureSurface& s, Precision p, unsigned atom, std::uint32_t batches = 1,
                std::uint32_t batch_stride = 0) {
  const std::uint64_t bytes = surface_bytes(s, p, atom);
  return {s.address, s.address + std::uint64_t{batches - 1} * batch_stride + bytes, s.ram};
}

ByteRange weights(const ConvLayer& l, const ConvHardware& hw) {
  const ConvPlan plan = plan_conv(l, hw);
  return {l.weight_address, l.weight_address + plan.weight_bytes + plan.wmb_bytes, l.weight_ram};
}

// The SDP LUT an SDP layer programs (SdpStage::lut), or null.
const models::ops::SdpLutConfig* sdp_lut(const NetProgram& p, std::size_t i) {
  const auto* s = std::get_if<SdpLayer>(&p.layers[i].hw);
  return s != nullptr && s->lut ? &*s->lut : nullptr;
}

bool same_sdp_lut(const models::ops::SdpLutConfig& a, const models::ops::SdpLutConfig& b) {
  return a.le_linear == b.le_linear && a.uflow_priority_lo == b.uflow_priority_lo &&
         a.oflow_priority_lo == b.oflow_priority_lo &&
         a.hybrid_priority_lo == b.hybrid_priority_lo && a.le_index_offset == b.le_index_offset &&
         a.le_index_select == b.le_index_select && a.lo_index_select == b.lo_index_select &&
         a.le_start == b.le_start && a.le_end == b.le_end && a.lo_start == b.lo_start &&
         a.lo_end == b.lo_end && a.le_uflow_scale == b.le_uflow_scale &&
         a.le_oflow_scale == b.le_oflow_scale && a.lo_uflow_scale == b.lo_uflow_scale &&
         a.lo_oflow_scale == b.lo_oflow_scale && a.le_uflow_shift == b.le_uflow_shift &&
         a.le_oflow_shift == b.le_oflow_shift && a.lo_uflow_shift == b.lo_uflow_shift &&
         a.lo_oflow_shift == b.lo_oflow_shift && a.le == b.le && a.lo == b.lo;
}

}  // namespace

LayerAccess layer_access(const NetProgram& p, std::size_t i) {
  const unsigned atom = p.hw.atom_bytes;
  LayerAccess a;
  std::visit(
      [&](const auto& hw) {
        using T = std::decay_t<decltype(hw)>;
        if constexpr (std::is_same_v<T, ConvLayer>) {
          a.reads.push_back(range(hw.src, hw.precision, atom, hw.batches, hw.src_batch_stride));
          // A fused element-wise operand (a residual Add's other addend), read per element.
          if (hw.sdp.ew) a.reads.push_back(range(hw.sdp.ew->surface, hw.precision, atom));
          a.writes.push_back(range(hw.dst, hw.precision, atom, hw.batches, hw.dst_batch_stride));
          a.weights.push_back(weights(hw, p.hw));
        } else if constexpr (std::is_same_v<T, ConvPoolLayer>) {
          // The convolution's own output streams into PDP: never in memory.
          a.reads.push_back(range(hw.conv.src, hw.conv.precision, atom));
          if (hw.conv.sdp.ew) {
            a.reads.push_back(range(hw.conv.sdp.ew->surface, hw.conv.precision, atom));
          }
          a.writes.push_back(range(hw.pool.dst, hw.pool.precision, atom));
          a.weights.push_back(weights(hw.conv, p.hw));
        } else if constexpr (std::is_same_v<T, SdpLayer>) {
          a.reads.push_back(range(hw.src, hw.precision, atom));
          if (hw.ew) a.reads.push_back(range(hw.ew->surface, hw.precision, atom));
          a.writes.push_back(range(hw.dst, hw.output_precision(), atom));
        } else if constexpr (std::is_same_v<T, OctavLayer>) {
          // Its source is feature data (INT8 or INT16 elements): the wider extent.
          a.reads.push_back(range(hw.src, Precision::kInt16, atom));
        } else if constexpr (std::is_same_v<T, PpuSoftmaxLayer>) {
          a.reads.push_back(range(hw.src, Precision::kFp16, atom));
          a.writes.push_back(range(hw.dst, Precision::kFp16, atom));
        } else if constexpr (std::is_same_v<T, PpuNodeLayer>) {
          for (const FeatureSurface& s : hw.srcs) a.reads.push_back(range(s, hw.precision, atom));
          a.writes.push_back(range(hw.dst, hw.precision, atom));
        } else {  // PDP, CDP, the fake-quantizing SDP: src and dst at one precision
          a.reads.push_back(range(hw.src, hw.precision, atom));
          a.writes.push_back(range(hw.dst, hw.precision, atom));
        }
      },
      p.layers.at(i).hw);
  return a;
}

std::vector<const char*> layer_units(const NetProgram& p, std::size_t i) {
  const HwLayer& hw = p.layers.at(i).hw;
  if (const auto* conv = std::get_if<ConvLayer>(&hw)) {
    if (sdp_rdma_used(conv_sdp_layer(*conv), SdpInput::kFlying)) return {"CONV", "SDP", "SDP_RDMA"};
    return {"CONV", "SDP"};
  }
  if (const auto* cp = std::get_if<ConvPoolLayer>(&hw)) {
    if (sdp_rdma_used(conv_sdp_layer(cp->conv), SdpInput::kFlying)) {
      return {"CONV", "SDP", "SDP_RDMA", "PDP"};
    }
    return {"CONV", "SDP", "PDP"};
  }
  if (std::holds_alternative<PdpLayer>(hw)) return {"PDP", "PDP_RDMA"};
  if (std::holds_alternative<CdpLayer>(hw)) return {"CDP"};
  if (std::holds_alternative<OctavLayer>(hw)) return {"OCTAV"};
  if (std::holds_alternative<BdmaLayer>(hw)) return {"BDMA"};
  if (std::holds_alternative<RubikContract>(hw)) return {"RUBIK"};
  static const char* const kChannels[] = {"PPU0", "PPU1", "PPU2", "PPU3"};
  if (const std::optional<unsigned> ch = ppu_channel(hw)) return {kChannels[*ch % 4]};
  return {"SDP", "SDP_RDMA"};  // SdpLayer, FakeQuantSdpLayer
}

std::vector<std::vector<std::size_t>> layer_dependencies(const NetProgram& p) {
  const std::size_t n = p.layers.size();
  std::vector<LayerAccess> access;
  access.reserve(n);
  for (std::size_t i = 0; i < n; ++i) access.push_back(layer_access(p, i));
  const auto any_overlap = [](const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
    for (const ByteRange& x : a) {
      for (const ByteRange& y : b) {
        if (x.overlaps(y)) return true;
      }
    }
    return false;
  };
  const auto barrier = [&p](std::size_t i) {
    return std::holds_alternative<OctavLayer>(p.layers[i].hw) ||
           std::holds_alternative<FakeQuantSdpLayer>(p.layers[i].hw);
  };
  std::vector<std::vector<std::size_t>> deps(n);
  std::map<std::string, std::deque<std::size_t>> holders;  // per unit: its last two layers
  std::optional<std::size_t> last_bdma;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::size_t>& d = deps[i];
    // BDMA's 20 slots are shared by its two groups: a BDMA layer (up to 16 copies) waits for the
    // one before.
    if (std::holds_alternative<BdmaLayer>(p.layers[i].hw)) {
      if (last_bdma) d.push_back(*last_bdma);
      last_bdma = i;
    }
    for (std::size_t j = 0; j < i; ++j) {
      const bool memory = any_overlap(access[j].writes, access[i].reads) ||
                          any_overlap(access[j].writes, access[i].writes) ||
                          any_overlap(access[j].reads, access[i].writes);
      // The SDP LUT is one storage for both register groups (lut-programming.rst): a layer
      // that writes a different one waits until every earlier layer using it is done.
      const models::ops::SdpLutConfig* li = sdp_lut(p, i);
      const models::ops::SdpLutConfig* lj = sdp_lut(p, j);
      const bool lut = li != nullptr && lj != nullptr && !same_sdp_lut(*li, *lj);
      if (memory || lut || barrier(i) || barrier(j)) d.push_back(j);
    }
    for (const char* unit : layer_units(p, i)) {
      std::deque<std::size_t>& h = holders[unit];
      // A PPU channel runs one push buffer at a time (ringing it rebases it): one layer deep.
      const std::size_t depth = std::string(unit).rfind("PPU", 0) == 0 ? 1 : 2;
      if (h.size() == depth) {
        d.push_back(h.front());
        h.pop_front();
      }
      h.push_back(i);
    }
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
  }
  return deps;
}

namespace {

namespace F = ppu_format;

// Passes everything to `mmio` but the writes that start a unit's register group (D_OP_ENABLE,
// BDMA's CFG_LAUNCH0/1), which start() makes later, in their order.
class DeferredStarts final : public Mmio {
 public:
  explicit DeferredStarts(Mmio& mmio) : mmio_(mmio) {}
  void write32(std::uint32_t addr, std::uint32_t value) override {
    const regs::RegisterInfo* r = regs::find_register(addr);
    if (r != nullptr &&
        (std::string_view(r->name) == "D_OP_ENABLE" || addr == regs::BDMA::CFG_LAUNCH0::kAddr ||
         addr == regs::BDMA::CFG_LAUNCH1::kAddr)) {
      starts_.emplace_back(addr, value);
      return;
    }
    mmio_.write32(addr, value);
  }
  [[nodiscard]] std::uint32_t read32(std::uint32_t addr) override { return mmio_.read32(addr); }
  void wait_interrupt(unsigned status_bit) override { mmio_.wait_interrupt(status_bit); }
  void start() {
    for (const auto& [addr, value] : starts_) mmio_.write32(addr, value);
    starts_.clear();
  }

 private:
  Mmio& mmio_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> starts_;
};

// Schedule::kDeviceSync (schedule.hpp). Every layer's completion is a syncpoint count: the
// GLB bits it raises (a DLA layer's group done interrupts, a PPU layer's channel INTERRUPT),
// each at the count GroupState::syncpoints holds once the layer is issued (a bit's raises come
// in issue order: a layer reusing a register group, or a channel, comes after the one before).
void program_network_device(const NetProgram& p, Mmio& mmio, GroupState& groups,
                            models::ops::Memory& device) {
  const std::size_t n = p.layers.size();
  const std::vector<std::vector<std::size_t>> deps = layer_dependencies(p);
  // ancestors[i]: the layers that are done when layer i is (its dependencies, transitively).
  std::vector<std::vector<bool>> ancestors(n, std::vector<bool>(n, false));
  for (std::size_t i = 0; i < n; ++i) {
    for (const std::size_t j : deps[i]) {
      ancestors[i][j] = true;
      for (std::size_t k = 0; k < j; ++k) {
        if (ancestors[j][k]) ancestors[i][k] = true;
      }
    }
  }
  using Marks = std::vector<std::pair<unsigned, std::uint32_t>>;  // (syncpoint, count)
  std::vector<Marks> marks(n);
  std::vector<LayerInterrupts> pending(n);
  std::vector<bool> done(n, false);
  // Each used channel's ring: room for its layers' commands (a wait per dependency and bit, and
  // the compiled push buffer), above the program's memory; set up before its first layer.
  std::vector<std::uint64_t> ring(F::kChannels, 0);
  std::vector<std::uint32_t> ring_bytes(F::kChannels, 0), put(F::kChannels, 0);
  std::vector<bool> used(F::kChannels, false), ready(F::kChannels, false);
  std::vector<std::optional<std::size_t>> last_on(F::kChannels);  // the channel's last layer
  std::uint64_t next = (std::max(p.memory_end, p.constants_end) + 4095) / 4096 * 4096;
  for (std::size_t i = 0; i < n; ++i) {
    const std::optional<unsigned> ch = ppu_channel(p.layers[i].hw);
    if (!ch) continue;
    if (*ch >= F::kChannels) throw FirmwareError(fmt::format("layer {}: PPU channel {}", i, *ch));
    const auto* sm = std::get_if<PpuSoftmaxLayer>(&p.layers[i].hw);
    const std::uint32_t own = sm != nullptr
                                  ? sm->push_buffer_bytes
                                  : std::get<PpuNodeLayer>(p.layers[i].hw).push_buffer_bytes;
    ring_bytes[*ch] += own + static_cast<std::uint32_t>(12 * 2 * deps[i].size());
    used[*ch] = true;
  }
  for (unsigned c = 0; c < F::kChannels; ++c) {
    if (!used[c]) continue;
    ring[c] = next;
    next += (ring_bytes[c] + 4095) / 4096 * 4096;
  }
  // Waits, as the host, until layer j is done.
  const auto await = [&](std::size_t j) {
    if (done[j]) return;
    if (ppu_channel(p.layers[j].hw)) {
      // The channel's interrupt is a level: several layers' INTERRUPTs may have merged into
      // one, or a bit may be left from one already counted. The syncpoint tells.
      const auto [bit, target] = marks[j].front();
      while (static_cast<std::int32_t>(mmio.read32(F::kSyncptBase + 4 * bit) - target) < 0) {
        mmio.wait_interrupt(bit);
      }
    } else {
      await_layer(mmio, pending[j]);
    }
    done[j] = true;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const std::optional<unsigned> ch = ppu_channel(p.layers[i].hw);
    if (!ch) {
      // The DLA layers it depends on first (its register groups free, the LUT its own); then,
      // with PPU layers it depends on still running, its registers are written ahead and only
      // its starts (D_OP_ENABLE, BDMA's CFG_LAUNCH) wait until they are done: the ping-pong
      // group holds the layer meanwhile, and nothing else writes its units' registers.
      std::vector<std::size_t> ppu_deps;
      for (const std::size_t j : deps[i]) {
        if (ppu_channel(p.layers[j].hw)) {
          if (!done[j]) ppu_deps.push_back(j);
        } else {
          await(j);
        }
      }
      if (ppu_deps.empty()) {
        pending[i] = program_layer(p, i, mmio, groups);
      } else {
        DeferredStarts deferred(mmio);
        pending[i] = program_layer(p, i, deferred, groups);
        for (const std::size_t j : ppu_deps) await(j);
        deferred.start();
      }
      for (const unsigned bit : pending[i]) {
        if (bit < F::kSyncpoints) marks[i].emplace_back(bit, groups.syncpoints[bit]);
      }
      continue;
    }
    // A wait for each layer it depends on that is not done already when the channel gets to
    // it: not one the host has seen done, nor the channel's layer before (stream order) or what
    // that one depended on, nor one another awaited layer depended on. Oldest first: the
    // newest is likely the last to finish, and the commands after it are fetched then.
    const std::optional<std::size_t> before = last_on[*ch];
    std::vector<std::size_t> wait_for;
    for (const std::size_t j : deps[i]) {
      if (done[j] || (before && (j == *before || ancestors[*before][j]))) continue;
      wait_for.push_back(j);
    }
    std::vector<std::size_t> needed;
    for (const std::size_t j : wait_for) {
      bool implied = false;
      for (const std::size_t k : wait_for) implied = implied || ancestors[k][j];
      if (!implied) needed.push_back(j);
    }
    F::PushBuffer pb;
    for (const std::size_t j : needed) {
      if (marks[j].size() != (ppu_channel(p.layers[j].hw) ? 1u : pending[j].size())) {
        throw FirmwareError(fmt::format("layer {}: layer {} has no syncpoint to wait on", i, j));
      }
      for (const auto& [bit, target] : marks[j]) pb.syncpt_wait(bit, target);
    }
    const auto* sm = std::get_if<PpuSoftmaxLayer>(&p.layers[i].hw);
    const auto* node = std::get_if<PpuNodeLayer>(&p.layers[i].hw);
    const std::uint64_t compiled = sm != nullptr ? sm->push_buffer : node->push_buffer;
    const std::uint32_t compiled_bytes =
        sm != nullptr ? sm->push_buffer_bytes : node->push_buffer_bytes;
    std::vector<std::uint8_t> bytes = pb.bytes();
    const std::size_t head = bytes.size();
    bytes.resize(head + compiled_bytes);  // its LAUNCH and INTERRUPT, as compiled
    device.read(dma_address_of(compiled, Ram::kMc), bytes.data() + head, compiled_bytes);
    if (put[*ch] + bytes.size() > ring_bytes[*ch]) {
      throw FirmwareError(fmt::format("PPU channel {}'s ring is full at layer {}", *ch, i));
    }
    device.write(ring[*ch] + put[*ch], bytes.data(), bytes.size());
    put[*ch] += static_cast<std::uint32_t>(bytes.size());
    const std::uint32_t base = F::kCsbBase + *ch * F::kChannelStride;
    if (!ready[*ch]) {
      // A new push buffer: the channel, idle since the last run, starts over at GET = 0.
      mmio.write32(base + F::kPbBaseLow, static_cast<std::uint32_t>(ring[*ch]));
      mmio.write32(base + F::kPbBaseHigh, static_cast<std::uint32_t>(ring[*ch] >> 32));
      mmio.write32(base + F::kPbSize, ring_bytes[*ch]);
      ready[*ch] = true;
    }
    mmio.write32(base + F::kPut, put[*ch]);  // the doorbell
    const unsigned bit = F::kInterruptBit0 + *ch;
    marks[i].emplace_back(bit, ++groups.syncpoints[bit]);
    last_on[*ch] = i;
  }
  for (std::size_t i = 0; i < n; ++i) await(i);
  // Channel bits left from INTERRUPTs counted without a wait; a channel stopped on an error.
  std::uint32_t stale = 0;
  for (unsigned c = 0; c < F::kChannels; ++c) {
    if (!used[c]) continue;
    stale |= 1u << (F::kInterruptBit0 + c);
    const std::uint32_t error = mmio.read32(F::kCsbBase + c * F::kChannelStride + F::kError);
    if (error != 0) {
      throw FirmwareError(
          fmt::format("PPU channel {} stopped with error {} at byte {} of its ring", c, error,
                      mmio.read32(F::kCsbBase + c * F::kChannelStride + F::kErrorOffset)));
    }
  }
  if (stale != 0) mmio.write32(regs::GLB::S_INTR_STATUS::kAddr, stale);  // write one to clear
}

}  // namespace

void program_network(const NetProgram& p, Mmio& mmio, GroupState& groups, Schedule schedule,
                     models::ops::Memory* device) {
  const std::size_t n = p.layers.size();
  if (schedule == Schedule::kSerial) {
    for (std::size_t i = 0; i < n; ++i) await_layer(mmio, program_layer(p, i, mmio, groups));
    return;
  }
  if (schedule == Schedule::kDeviceSync) {
    if (device == nullptr) {
      throw FirmwareError("device sync writes the PPU's rings: it needs the device's memory");
    }
    program_network_device(p, mmio, groups, *device);
    return;
  }
  const std::vector<std::vector<std::size_t>> deps = layer_dependencies(p);
  std::vector<LayerInterrupts> pending(n);
  std::vector<bool> done(n, false);
  const auto await = [&](std::size_t j) {
    if (done[j]) return;
    await_layer(mmio, pending[j]);
    done[j] = true;
  };
  for (std::size_t i = 0; i < n; ++i) {
    for (const std::size_t j : deps[i]) await(j);
    pending[i] = program_layer(p, i, mmio, groups);
  }
  for (std::size_t i = 0; i < n; ++i) await(i);
}

}  // namespace octasim::firmware::net
