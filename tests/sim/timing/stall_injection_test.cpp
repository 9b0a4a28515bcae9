// Stall injection (MatchLib Pacer style): a TLM passthrough between an engine's DMA sockets and
// the memory system adds a deterministic pseudo-random delay (fixed seed) to every
// transaction — part of it before the memory system sees the request (the request held back),
// part on the response. The engine (a StreamEngine built standalone, started with the
// functional op's OpResult and a RegRead over a RegisterFile programmed by firmware) must still
// finish; the counters that do not depend on time equal the run without stalls; its cycles are
// never fewer; and the output (computed functionally, outside the timing model) equals models/.
// Several independent benches (one per seed) run side by side in one simulation, since SystemC
// elaborates once per process; ctest runs each TEST alone.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "firmware/dla/conv.hpp"
#include "firmware/dla/conv_hardware.hpp"
#include "firmware/dla/pdp.hpp"
#include "firmware/dla/sdp.hpp"
#include "firmware/driver/mmio.hpp"
#include "models/ops/pdp.hpp"
#include "models/ops/sdp.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/core/overlay_memory.hpp"
#include "sim/core/register_file.hpp"
#include "sim/dla/conv_core.hpp"
#include "sim/dla/engines.hpp"
#include "sim/dla/stream_engine.hpp"
#include "sim/mem/memory_system.hpp"

namespace octasim {
namespace {

const sc_core::sc_time kPeriod(1, sc_core::SC_NS);

bool already_elaborated() {
  return sc_core::sc_get_status() != sc_core::SC_ELABORATION;
}

// Passes every transaction on, adding `request` cycles before the memory system sees it and
// `response` cycles to its completion, each drawn from [0, max_extra] by a fixed-seed LCG
// (max_extra 0: transparent). Never blocks the caller's thread.
class StallInjector final : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<StallInjector> target{"target"};
  tlm_utils::simple_initiator_socket<StallInjector> initiator{"initiator"};

  StallInjector(const sc_core::sc_module_name& name, std::uint32_t seed, unsigned max_extra)
      : sc_core::sc_module(name), state_(seed), max_extra_(max_extra) {
    target.register_b_transport(this, &StallInjector::b_transport);
  }
  [[nodiscard]] std::uint64_t transactions() const { return transactions_; }
  [[nodiscard]] std::uint64_t injected_cycles() const { return injected_; }

 private:
  unsigned draw() {
    if (max_extra_ == 0) return 0;
    state_ = state_ * 1664525u + 1013904223u;
    return (state_ >> 8) % (max_extra_ + 1);
  }
  void b_transport(int /*port*/, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    ++transactions_;
    const unsigned request = draw();
    const unsigned response = draw();
    injected_ += request + response;
    delay += kPeriod * static_cast<double>(request);
    initiator->b_transport(trans, delay);
    delay += kPeriod * static_cast<double>(response);
  }

  std::uint32_t state_;
  unsigned max_extra_;
  std::uint64_t transactions_ = 0, injected_ = 0;
};

// Firmware's register port on a bare RegisterFile (nothing runs; no interrupt to wait for).
class RegisterMmio final : public firmware::Mmio {
 public:
  explicit RegisterMmio(RegisterFile& regs) : regs_(regs) {}
  void write32(std::uint32_t addr, std::uint32_t value) override { regs_.csb_write(addr, value); }
  std::uint32_t read32(std::uint32_t addr) override { return regs_.csb_read(addr); }
  void wait_interrupt(unsigned /*status_bit*/) override { FAIL() << "no device to wait for"; }

 private:
  RegisterFile& regs_;
};

// The stream engine's spec for an engine name (the registry hands the same to its factory).
const dla::StreamSpec& stream_spec(const std::string& engine) {
  if (engine == "PDP") return dla::pdp_stream();
  if (engine == "CDP") return dla::cdp_stream();
  return dla::sdp_stream();
}

// An engine's timing model, built as the registry's factory builds it (unbound).
template <class Model>
Model make_model(const char* engine, const HwConfig& hw);
template <>
dla::StreamEngine make_model(const char* engine, const HwConfig& hw) {
  return dla::StreamEngine(engine, hw, kPeriod, stream_spec(engine));
}
template <>
dla::ConvCore make_model(const char* engine, const HwConfig& hw) {
  return dla::ConvCore(engine, hw, kPeriod);
}

// The DMA sockets of an engine's timing model.
using DmaSocket = tlm::tlm_initiator_socket<>;
[[maybe_unused]] std::vector<DmaSocket*> dma_sockets(dla::StreamEngine& m) {
  return {&m.rdma_socket, &m.wdma_socket};
}
[[maybe_unused]] std::vector<DmaSocket*> dma_sockets(dla::ConvCore& m) {
  return {&m.dma_socket};
}

// One memory system and one engine model, each of its DMA sockets through its own injector
// (seed < 0: bound to the memory system directly).
template <class Model>
class Bench final : public sc_core::sc_module {
 public:
  Bench(const sc_core::sc_module_name& name, const HwConfig& hw, MemoryImage& image,
        const char* engine, int seed, unsigned max_extra)
      : sc_core::sc_module(name),
        mem("mem", hw, image, kPeriod),
        model(make_model<Model>(engine, hw)) {
    auto s = static_cast<std::uint32_t>(seed);
    for (DmaSocket* socket : dma_sockets(model)) {
      if (seed < 0) {
        socket->bind(mem.socket);
        continue;
      }
      const std::string injector = "stall" + std::to_string(stalls.size());
      stalls.push_back(std::make_unique<StallInjector>(injector.c_str(), s, max_extra));
      s = s * 7u + 1u;
      socket->bind(stalls.back()->target);
      stalls.back()->initiator.bind(mem.socket);
    }
  }

  void start(const dla::Engine& e, const dla::OpResult& op, const dla::RegRead& read) {
    model.start(e, op, read, [this] {
      done = true;
      cycles = static_cast<std::uint64_t>(sc_core::sc_time_stamp() / kPeriod + 0.5) - start_cycle;
    });
  }

  std::uint64_t counter(const std::string& counter_name) const {
    const stats::Group& g = model.statistics();
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (g.info(i).name == counter_name) return g.value(i);
    }
    ADD_FAILURE() << "no counter " << counter_name;
    return 0;
  }
  [[nodiscard]] std::uint64_t injected_cycles() const {
    std::uint64_t n = 0;
    for (const auto& i : stalls) n += i->injected_cycles();
    return n;
  }
  [[nodiscard]] std::vector<std::uint64_t> transactions() const {
    std::vector<std::uint64_t> n;
    for (const auto& i : stalls) n.push_back(i->transactions());
    return n;
  }

  MemorySystem mem;
  Model model;
  std::vector<std::unique_ptr<StallInjector>> stalls;  // empty: bound directly
  bool done = false;
  std::uint64_t start_cycle = 0;
  std::uint64_t cycles = 0;  // cycles from start to on_done
};

// Input bytes: a fixed pseudo-random pattern over [addr, addr + bytes).
void fill_pattern(models::ops::Memory& m, std::uint64_t addr, std::size_t bytes,
                  std::uint32_t seed) {
  std::vector<std::uint8_t> data(bytes);
  for (auto& b : data) {
    seed = seed * 1103515245u + 12345u;
    b = static_cast<std::uint8_t>(seed >> 16);
  }
  m.write(addr, data.data(), data.size());
}

const std::vector<int> kSeeds = {1, 2, 3, 17, 12345};
// The counters that do not depend on time.
const std::vector<std::string> kStreamCounters = {
    "operations",  "bytes_read",       "bytes_written",   "elements",
    "busy_cycles", "rdma_busy_cycles", "wdma_busy_cycles"};
const std::vector<std::string> kConvCounters = {
    "operations",     "bytes_read",    "bytes_written",        "macs",
    "cdma_dat_bytes", "cdma_wt_bytes", "cdma_dat_busy_cycles", "cdma_wt_busy_cycles"};

// Runs the operation programmed in `regs` on a direct bench, a transparent one (max_extra 0)
// and one per seed, and checks them against each other.
// `in_bytes` / `out_bytes`: the surfaces' bytes the engine must move.
template <class Model>
void run_and_compare(const HwConfig& hw, const char* engine_name, RegisterFile& regs,
                     MemoryImage& image, unsigned max_extra, std::uint64_t in_bytes,
                     std::uint64_t out_bytes, const std::vector<std::string>& fixed) {
  const std::size_t index = dla::engine_index(engine_name);
  const dla::Engine& e = dla::engines()[index];
  const RegisterFile::Groups groups = regs.consumers();
  ASSERT_TRUE(dla::ready_to_start(e, regs, groups));
  const dla::RegRead read = dla::group_reader(regs, groups);
  OverlayMemory overlay(image);
  const dla::OpResult op = e.run(hw, read, dla::lut_of(e, regs), overlay);
  overlay.commit();

  std::vector<std::unique_ptr<Bench<Model>>> benches;
  benches.push_back(std::make_unique<Bench<Model>>("direct", hw, image, engine_name, -1, 0));
  benches.push_back(std::make_unique<Bench<Model>>("transparent", hw, image, engine_name, 0, 0));
  for (int seed : kSeeds) {
    benches.push_back(std::make_unique<Bench<Model>>(("seed" + std::to_string(seed)).c_str(), hw,
                                                     image, engine_name, seed, max_extra));
  }
  // One after the other, each alone in the simulation: two engines started in the same delta
  // cycle can see their own threads scheduled in a different order (ConvCore's data and weight
  // DMAs issue in the same cycle and the memory system reserves in call order), which would
  // change the cycles by itself.
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  for (auto& b : benches) {
    b->start_cycle = static_cast<std::uint64_t>(sc_core::sc_time_stamp() / kPeriod + 0.5);
    b->start(e, op, read);
    sc_core::sc_start();
    ASSERT_TRUE(b->done) << b->name();
  }

  const Bench<Model>& base = *benches[0];
  ASSERT_TRUE(base.done);
  EXPECT_GT(base.cycles, 0u);
  if (in_bytes != 0) {  // 0: not checked
    EXPECT_EQ(base.counter("bytes_read"), in_bytes);
  }
  EXPECT_EQ(base.counter("bytes_written"), out_bytes);
  EXPECT_EQ(base.counter("active_cycles"), base.cycles);
  for (const auto& b : benches) {
    SCOPED_TRACE(b->name());
    ASSERT_TRUE(b->done);
    EXPECT_FALSE(b->model.busy());
    for (const std::string& c : fixed) EXPECT_EQ(b->counter(c), base.counter(c)) << c;
    EXPECT_EQ(b->counter("active_cycles"), b->cycles);
    EXPECT_GE(b->cycles, base.cycles);
    // Every byte the engine moved went through the memory system's crossbar.
    const stats::Group& x = b->mem.xbar_statistics();
    std::uint64_t read_bytes = 0, written_bytes = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x.info(i).name == "bytes_read") read_bytes = x.value(i);
      if (x.info(i).name == "bytes_written") written_bytes = x.value(i);
    }
    EXPECT_EQ(read_bytes, b->counter("bytes_read"));
    EXPECT_EQ(written_bytes, b->counter("bytes_written"));
  }
  // Transparent injection changes nothing; real injection costs time.
  EXPECT_EQ(benches[1]->cycles, base.cycles);
  EXPECT_EQ(benches[1]->injected_cycles(), 0u);
  for (std::uint64_t n : benches[1]->transactions()) EXPECT_GT(n, 0u);
  for (std::size_t i = 2; i < benches.size(); ++i) {
    SCOPED_TRACE(benches[i]->name());
    EXPECT_GT(benches[i]->injected_cycles(), 0u);
    EXPECT_EQ(benches[i]->transactions(), benches[1]->transactions());
    EXPECT_GT(benches[i]->cycles, base.cycles);
  }
}

void expect_bytes_equal(const MemoryImage& got, const MemoryImage& want, std::uint64_t addr,
                        std::uint64_t bytes) {
  std::vector<std::uint8_t> a(bytes), b(bytes);
  got.read(addr, a.data(), bytes);
  want.read(addr, b.data(), bytes);
  EXPECT_EQ(a, b);
}

firmware::SdpLayer strided_sdp_layer() {
  firmware::SdpLayer layer;
  layer.precision = firmware::Precision::kInt8;
  layer.src = {0x10000, 12, 5, 20, 0x200, 0x1000};  // 3 C' surfaces, lines 512 bytes apart
  layer.dst = {0x40000, 12, 5, 20, 0x180, 0xA00};
  layer.relu = true;
  layer.cvt.scale = 3;
  layer.cvt.shift = 1;
  return layer;
}

void sdp_under_stalls(const char* config, unsigned max_extra) {
  const HwConfig hw = load_hw_config(config);
  const unsigned atom = hw.dla.memory_atomic_size;
  const firmware::SdpLayer layer = strided_sdp_layer();
  MemoryImage image, golden;
  const std::uint64_t in_span = firmware::surface_bytes(layer.src, layer.precision, atom);
  fill_pattern(image, layer.src.address, in_span, 99);
  fill_pattern(golden, layer.src.address, in_span, 99);
  RegisterFile regs;
  RegisterMmio mmio(regs);
  (void)firmware::program_sdp(mmio, layer, 0, atom);
  // 12 x 5 x 20 INT8: ceil(20 / C') surfaces of 5 lines of 12 atoms, in and out.
  const std::uint64_t bytes = std::uint64_t{12} * 5 * ((20 + atom - 1) / atom) * atom;
  run_and_compare<dla::StreamEngine>(hw, "SDP", regs, image, max_extra, bytes, bytes,
                                     kStreamCounters);
  (void)models::ops::run_sdp_layer(firmware::sdp_model_config(layer, atom), golden);
  expect_bytes_equal(image, golden, layer.dst.address,
                     firmware::surface_bytes(layer.dst, layer.precision, atom));
}

TEST(StallInjection, SdpOnFlatBus) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  sdp_under_stalls("nv_small", 24);
}

TEST(StallInjection, SdpOnSocSmall) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  sdp_under_stalls("soc_small", 40);
}

void pdp_under_stalls(const char* config, unsigned max_extra) {
  const HwConfig hw = load_hw_config(config);
  const unsigned atom = hw.dla.memory_atomic_size;
  firmware::PdpLayer layer;
  layer.precision = firmware::Precision::kInt8;
  layer.method = firmware::PoolMethod::kAverage;
  layer.kernel_width = 3;
  layer.kernel_height = 2;
  layer.stride_x = 2;
  layer.stride_y = 1;
  layer.pad_left = 1;
  layer.pad_value = 3;
  layer.src = {0x20000, 15, 7, 12, 0x300, 0x2000};
  const std::uint32_t ow = firmware::pdp_output_size(15, 3, 2, 1, 0);
  const std::uint32_t oh = firmware::pdp_output_size(7, 2, 1, 0, 0);
  layer.dst = {0x60000, ow, oh, 12, 0x100, 0x900};
  MemoryImage image, golden;
  const std::uint64_t in_span = firmware::surface_bytes(layer.src, layer.precision, atom);
  fill_pattern(image, layer.src.address, in_span, 7);
  fill_pattern(golden, layer.src.address, in_span, 7);
  RegisterFile regs;
  RegisterMmio mmio(regs);
  (void)firmware::program_pdp(mmio, layer, 0, atom);
  // 15 x 7 x 12 INT8 in, 7 x 6 x 12 out (ow = (15 + 1 - 3) / 2 + 1, oh = 7 - 2 + 1).
  ASSERT_EQ(ow, 7u);
  ASSERT_EQ(oh, 6u);
  const std::uint64_t surfaces = (12 + atom - 1) / atom;
  run_and_compare<dla::StreamEngine>(hw, "PDP", regs, image, max_extra,
                                     std::uint64_t{15} * 7 * surfaces * atom,
                                     std::uint64_t{7} * 6 * surfaces * atom, kStreamCounters);
  (void)models::ops::run_pdp_layer(firmware::pdp_model_params(layer, atom), golden);
  expect_bytes_equal(image, golden, layer.dst.address,
                     firmware::surface_bytes(layer.dst, layer.precision, atom));
}

TEST(StallInjection, PdpOnFlatBus) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  pdp_under_stalls("nv_small", 24);
}

TEST(StallInjection, PdpOnSocLarge) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  pdp_under_stalls("soc_large", 40);
}

void conv_under_stalls(const char* config, unsigned max_extra) {
  const HwConfig hw = load_hw_config(config);
  const unsigned atom = hw.dla.memory_atomic_size;
  const firmware::ConvHardware chw = firmware::conv_hardware(hw);
  firmware::ConvLayer layer;
  layer.precision = firmware::Precision::kInt8;
  layer.src = {0x10000, 9, 7, 12, 0x200, 0x1000};  // lines and surfaces apart
  layer.weight_address = 0x30000;
  layer.kernels = 10;
  layer.kernel_width = 3;
  layer.kernel_height = 3;
  layer.pad_left = 1;
  layer.pad_top = 1;
  layer.pad_right = 1;
  layer.pad_bottom = 1;
  layer.sdp.cvt = firmware::SdpConvertor{0, 1, 8};
  layer.sdp.relu = true;
  const firmware::ConvCubeSize out = firmware::conv_output_cube(layer);
  ASSERT_EQ(out.width, 9u);
  ASSERT_EQ(out.height, 7u);
  layer.dst = {0x50000, out.width, out.height, out.channels, 0x180, 0xC00};
  models::ops::ConvWeights w(layer.kernels, 3, 3, layer.src.channels);
  std::uint32_t seed = 5;
  for (auto& v : w.data) {
    seed = seed * 1103515245u + 12345u;
    v = static_cast<std::int32_t>((seed >> 16) % 255) - 127;
  }
  const std::vector<std::uint8_t> weights = firmware::conv_weight_image(w, layer.precision, chw);
  MemoryImage image, golden;
  const std::uint64_t in_span = firmware::surface_bytes(layer.src, layer.precision, atom);
  for (MemoryImage* m : {&image, &golden}) {
    fill_pattern(*m, layer.src.address, in_span, 11);
    m->write(layer.weight_address, weights.data(), weights.size());
  }
  RegisterFile regs;
  RegisterMmio mmio(regs);
  (void)firmware::program_conv(mmio, layer, 0, chw);
  const std::uint64_t out_bytes =
      std::uint64_t{out.width} * out.height * ((out.channels + atom - 1) / atom) * atom;
  run_and_compare<dla::ConvCore>(hw, "CONV", regs, image, max_extra, 0, out_bytes, kConvCounters);
  (void)firmware::run_conv_model(layer, chw, golden);
  expect_bytes_equal(image, golden, layer.dst.address,
                     firmware::surface_bytes(layer.dst, layer.precision, atom));
}

TEST(StallInjection, ConvOnFlatBus) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  conv_under_stalls("nv_small", 24);
}

TEST(StallInjection, ConvOnSocSmall) {
  if (already_elaborated()) GTEST_SKIP() << "SystemC elaborates once per process; run alone";
  conv_under_stalls("soc_small", 40);
}

}  // namespace
}  // namespace octasim
