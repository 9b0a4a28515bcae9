// The engine registry (sim/dla/engines.hpp): every entry is complete — units, ownership,
// interrupts, functional op, timing-model factory, roofline peak, a LUT the register file has —
// names are unique, and a name octasim has no engine of is an error, never a fallback.
#include "sim/dla/engines.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "sim/core/hw_config.hpp"
#include "sim/core/register_file.hpp"

namespace octasim::dla {
namespace {

TEST(EngineRegistry, EveryEntryIsComplete) {
  const HwConfig hw = load_hw_config("nv_full");
  const RegisterFile rf;
  const RegRead read = group_reader(rf, rf.consumers());
  for (const Engine& e : engines()) {
    SCOPED_TRACE(std::string(e.name));
    EXPECT_FALSE(e.name.empty());
    ASSERT_NE(e.units, nullptr);
    ASSERT_NE(e.owns, nullptr);
    EXPECT_NE(e.run, nullptr);
    EXPECT_NE(e.make_model, nullptr);
    ASSERT_NE(e.peak_ops_per_cycle, nullptr);
    // The core unit first, and every unit has registers.
    const UnitList units = e.units(read);
    ASSERT_GE(units.size, 1u);
    for (std::string_view u : units) EXPECT_NO_THROW((void)rf.group_of(u, rf.consumers())) << u;
    // At least one interrupt, each on a unit with a register group, bits below 32.
    ASSERT_GE(e.interrupt_count, 1u);
    ASSERT_LE(e.interrupt_count, e.interrupts.size());
    for (std::size_t i = 0; i < e.interrupt_count; ++i) {
      EXPECT_FALSE(e.interrupts[i].unit.empty());
      EXPECT_LT(e.interrupts[i].status_bit0 + 1, 32u);
    }
    // The LUT it reads is one the register file has (or none).
    if (!e.lut_unit.empty()) {
      EXPECT_NO_THROW((void)rf.lut(e.lut_unit));
    }
    // A roofline peak for a layer of this engine (a convolution's from its MAC array).
    OpResult op;
    op.macs_per_cycle = hw.dla.mac_atomic_c * hw.dla.mac_atomic_k;
    EXPECT_GT(e.peak_ops_per_cycle(hw, op), 0.0);
  }
}

TEST(EngineRegistry, NamesAreUniqueAndFoundByIndex) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < engines().size(); ++i) {
    EXPECT_TRUE(names.insert(std::string(engines()[i].name)).second) << engines()[i].name;
    EXPECT_EQ(engine_index(engines()[i].name), i);
  }
  EXPECT_EQ(names.size(), kEngineCount);
}

TEST(EngineRegistry, PeaksAreTheConfiguredThroughputs) {
  const HwConfig hw = load_hw_config("nv_full");
  OpResult conv;
  conv.macs_per_cycle = 1024;
  EXPECT_EQ(engines()[engine_index("CONV")].peak_ops_per_cycle(hw, conv), 2048.0);
  const OpResult none;
  EXPECT_EQ(engines()[engine_index("SDP")].peak_ops_per_cycle(hw, none), hw.dla.sdp_bs_throughput);
  EXPECT_EQ(engines()[engine_index("PDP")].peak_ops_per_cycle(hw, none), hw.dla.pdp_throughput);
  EXPECT_EQ(engines()[engine_index("CDP")].peak_ops_per_cycle(hw, none), hw.dla.cdp_throughput);
  EXPECT_EQ(engines()[engine_index("OCTAV")].peak_ops_per_cycle(hw, none),
            hw.octav.elements_per_cycle);
}

TEST(EngineRegistry, AnUnknownEngineIsAnError) {
  try {
    (void)engine_index("NPU");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown engine 'NPU'");
  }
}

TEST(EngineRegistry, AUnitWithoutALutIsAnError) {
  const RegisterFile rf;
  EXPECT_THROW((void)rf.lut("PDP"), CsbError);
}

}  // namespace
}  // namespace octasim::dla
