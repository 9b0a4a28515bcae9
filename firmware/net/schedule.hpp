// Issuing a compiled network's layers to the device: in order, each awaited before the next is
// programmed (what a trace records), or overlapped as NVDLA's register groups allow: a layer is
// programmed as soon as the layers it depends on are done, so independent layers run on
// different engines at once and an engine's next layer waits in its other register group.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "firmware/driver/mmio.hpp"
#include "firmware/net/program.hpp"

namespace octasim::firmware::net {

enum class Schedule : std::uint8_t {
  kSerial,   // every layer awaited before the next is programmed
  kOverlap,  // a layer awaits only what it depends on (layer_dependencies)
  // kOverlap with the device ordering the PPU (`--sync device`): a PPU layer is pushed at once
  // into its channel's ring, behind a SYNCPT_WAIT for each layer it depends on (the DLA groups'
  // done interrupts and the other channels' INTERRUPTs count in syncpoints), so it starts when
  // its inputs are written, not when the host has seen them. A DLA layer is still started by
  // the host: programmed once the DLA layers it depends on are done, its starts (D_OP_ENABLE,
  // CFG_LAUNCH) written once the PPU layers among them are too (their channel's syncpoint
  // reached the count). Needs the device's memory (the rings) and CSB reads.
  kDeviceSync,
};

// The GLB S_INTR_STATUS bits that signal a layer's completion, in the order the host awaits
// them.
using LayerInterrupts = std::vector<unsigned>;

// Awaits each bit (Mmio::wait_interrupt).
void await_layer(Mmio& mmio, const LayerInterrupts& bits);

// A byte range [begin, end) of device memory a layer reads or writes, and the memory it is in.
struct ByteRange {
  std::uint64_t begin = 0, end = 0;
  Ram ram = Ram::kMc;
  [[nodiscard]] bool overlaps(const ByteRange& o) const { return begin < o.end && o.begin < end; }
};

// The feature memory layer `i` reads and writes, and the weights it reads (constants, which no
// layer writes).
struct LayerAccess {
  std::vector<ByteRange> reads, writes;
  std::vector<ByteRange> weights;
};
[[nodiscard]] LayerAccess layer_access(const NetProgram& p, std::size_t i);

// The hardware units whose register groups layer `i` takes (a register group is free again
// when the layer that last took it is done): "CONV" (the convolution pipeline), "SDP",
// "SDP_RDMA", "PDP", "PDP_RDMA", "CDP", "OCTAV", "PPU<channel>".
[[nodiscard]] std::vector<const char*> layer_units(const NetProgram& p, std::size_t i);

// For every layer, the earlier layers it must wait for under kOverlap: those writing memory it
// reads or writes (true and output dependencies), those reading memory it writes (a buffer
// reused after its tensor died), the one that took the same register group of a unit it uses
// (two layers back on that unit; for BDMA, whose slots both groups share, and a PPU channel, which
// runs one push buffer at a time, the last one), every
// layer before and after an OCTAV layer (it programs the next SDP's registers when it finishes),
// and for an SDP layer with a LUT every earlier one with a different LUT (the LUT storage is shared
// by both register groups). Sorted, without repeats.
[[nodiscard]] std::vector<std::vector<std::size_t>> layer_dependencies(const NetProgram& p);

}  // namespace octasim::firmware::net
