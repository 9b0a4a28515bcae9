// Running a compiled network (program.hpp): its constants and input into memory, every layer
// programmed through an Mmio (a trace being recorded, or a device driven directly), the outputs
// read back and dequantized; and the same layers through models/ (the quantized reference
// executor: the device's arithmetic, layer by layer, which gives the goldens).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "firmware/driver/mmio.hpp"
#include "firmware/net/program.hpp"
#include "firmware/net/schedule.hpp"
#include "firmware/ppu/commands.hpp"
#include "models/graph/graph.hpp"
#include "models/ops/memory.hpp"

namespace octasim::firmware::net {

// Every Memory here takes DMA addresses (memory_layout.hpp): the device's memory, or a host image
// holding both memories as the device does (a CV-SRAM address with bit 63 set).
void load_constants(const NetProgram& p, models::ops::Memory& mem);

// The codes of image `index` of `batch` (first axis: images; the rest the input's shape) as the
// bytes of the input surface.
[[nodiscard]] std::vector<std::uint8_t> input_image(const NetProgram& p,
                                                    const models::graph::Tensor& batch,
                                                    std::size_t index);
// Writes them into memory.
void write_input(const NetProgram& p, const models::graph::Tensor& batch, std::size_t index,
                 models::ops::Memory& mem);

// Output `k` read from memory: its codes (in ONNX's C order) ...
// `slot`: which image of a program of several (NetProgram::images, batch.hpp).
[[nodiscard]] std::vector<std::int32_t> read_output_codes(const NetProgram& p, std::size_t k,
                                                          const models::ops::Memory& mem,
                                                          std::size_t slot = 0);
// ... and dequantized (code * step), with the output's ONNX shape (N = 1).
[[nodiscard]] models::graph::Tensor read_output(const NetProgram& p, std::size_t k,
                                                const models::ops::Memory& mem,
                                                std::size_t slot = 0);

// Each unit's next register group (NVDLA's ping-pong groups): kept across runs of a program on
// one device, whose consumer pointers advance with every layer.
// SDP_RDMA and PDP_RDMA have their own: a flying SDP without operands, or a flying PDP, leaves
// its RDMA where it was.
// `syncpoints`: the raises of each GLB S_INTR_STATUS bit the layers issued so far cause (the
// bits program_layer returns, a PPU layer's INTERRUPT): the device's syncpoint counts
// (S_SYNCPT<b>) once they are all done, so Schedule::kDeviceSync names a layer's completion
// without reading the device. Like the groups, it starts with the device (both at reset) and
// assumes every layer on the device is issued through it.
struct GroupState {
  unsigned conv = 0, sdp = 0, sdp_rdma = 0, pdp = 0, pdp_rdma = 0, cdp = 0, octav = 0, bdma = 0,
           rubik = 0;
  std::array<std::uint32_t, ppu_format::kSyncpoints> syncpoints{};
};

// Programs layer `i` through `mmio` (register writes, D_OP_ENABLE) and returns the GLB
// S_INTR_STATUS bits of its completion; advances `groups`.
[[nodiscard]] LayerInterrupts program_layer(const NetProgram& p, std::size_t i, Mmio& mmio,
                                            GroupState& groups);
// Every layer, issued as `schedule` says (schedule.hpp); returns when all are done.
// Schedule::kDeviceSync writes the PPU channels' rings into `device` (the device's memory,
// above the program's: memory_end rounded up) and throws FirmwareError without it.
void program_network(const NetProgram& p, Mmio& mmio, GroupState& groups,
                     Schedule schedule = Schedule::kSerial, models::ops::Memory* device = nullptr);

// What the quantized reference executor counted in a layer.
struct LayerGolden {
  std::uint64_t saturations = 0;  // CACC + SDP output saturations, or CDP's
  float clip = 0.0F;              // OCTAV (and the SDP it programs): the clip the device finds
};
// Runs layer `i` through models/ on `mem` (inputs and constants already there). `previous`:
// layer i-1's result when the caller has it — the SDP an OCTAV layer programs then takes that
// layer's clip instead of computing it again from the same tensor.
LayerGolden run_layer_model(const NetProgram& p, std::size_t i, models::ops::Memory& mem,
                            const LayerGolden* previous = nullptr);
// Every layer.
std::vector<LayerGolden> run_network_model(const NetProgram& p, models::ops::Memory& mem);

// One image on a device and on models/: image `index` of `batch` written into `device` and into
// `golden` (both with the constants loaded), every layer programmed through `mmio` and run through
// models/ on `golden`. Returns each layer's golden and the first output whose codes differ between
// the two memories (outputs.size() when none does). A program of several images (batch.hpp) runs
// images index .. index + p.images - 1; each is compared.
struct ImageRun {
  std::vector<LayerGolden> layers;
  std::size_t differing_output = 0;
  std::size_t exact_images = 0;  // images whose outputs all equal the golden's
};
ImageRun run_image(const NetProgram& p, const models::graph::Tensor& batch, std::size_t index,
                   models::ops::Memory& device, Mmio& mmio, GroupState& groups,
                   models::ops::Memory& golden, Schedule schedule = Schedule::kSerial);

// The DLA engines whose layer records (sim/soc/dla.hpp LayerTiming::engine) layer `l` leaves, in
// the order they start: a convolution with a flying PDP leaves CONV's and PDP's; a PPU layer
// none.
[[nodiscard]] std::vector<std::string> device_records(const NetLayer& l);

// The surface layer `l` writes, or null for a layer that writes registers only (OCTAV).
[[nodiscard]] const FeatureSurface* layer_output(const NetLayer& l);

// The bytes of a tensor's surface (what a CRC check covers).
[[nodiscard]] std::uint64_t tensor_bytes(const NetProgram& p, const FeatureSurface& s);

}  // namespace octasim::firmware::net
