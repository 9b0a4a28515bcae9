// Hardware configurations: the built-ins against NVDLA's spec/defs/*.spec (values copied by hand
// from those files), user JSON files with "base", and the errors that name file and key.
#include "sim/core/hw_config.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "sim_test_util.hpp"

namespace octasim {
namespace {

using test::TempDir;

// Expects load/parse to throw std::runtime_error whose message contains every fragment.
template <typename F>
void expect_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    for (const auto& frag : fragments) {
      EXPECT_NE(msg.find(frag), std::string::npos) << "'" << frag << "' not in: " << msg;
    }
  }
}

TEST(HwConfig, BuiltinsAreTheFiveNvdlaConfigurationsAndTwoSocs) {
  auto names = builtin_hw_configs();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"nv_full", "nv_large", "nv_small", "nv_small_256",
                                             "nv_small_256_full", "soc_large", "soc_small"}));
}

TEST(HwConfig, NvdlaConfigurationsHaveNoPpuAndAFlatMemory) {
  for (const char* name :
       {"nv_small", "nv_small_256", "nv_small_256_full", "nv_large", "nv_full"}) {
    const HwConfig c = load_hw_config(name);
    EXPECT_EQ(c.ppu.gpcs, 0u) << name;
    EXPECT_EQ(c.mem.l2_slices_per_partition, 0u) << name;
    EXPECT_EQ(c.mem.partitions, 1u) << name;
    EXPECT_EQ(c.mem.dram_trcd + c.mem.dram_trp + c.mem.dram_cl + c.mem.dram_tras, 0u) << name;
  }
}

TEST(HwConfig, SocConfigurationsStartFromNvdlaOnes) {
  const HwConfig small = load_hw_config("soc_small");
  EXPECT_EQ(small.dla.mac_atomic_c, 8u);  // nv_small's DLA
  EXPECT_EQ(small.ppu.gpcs * small.ppu.sms_per_gpc, 2u);
  EXPECT_EQ(small.mem.partitions * small.mem.l2_slices_per_partition, 4u);
  const HwConfig large = load_hw_config("soc_large");
  EXPECT_EQ(large.dla.mac_atomic_c, 64u);  // nv_full's DLA
  EXPECT_EQ(large.ppu.gpcs * large.ppu.sms_per_gpc, 16u);
}

TEST(HwConfig, RejectsAnImpossibleL2Geometry) {
  EXPECT_THROW((void)parse_hw_config(R"({"base": "soc_small", "l2_slice_bytes": 100000})", "x"),
               std::runtime_error);
  EXPECT_THROW((void)parse_hw_config(R"({"base": "soc_small", "ppu_tensor_cores_per_sm": 0})", "x"),
               std::runtime_error);
}

TEST(HwConfig, NvSmallMatchesNvdlaSpec) {
  const HwConfig c = load_hw_config("nv_small");
  EXPECT_EQ(c.name, "nv_small");
  EXPECT_TRUE(c.dla.feature_int8);
  EXPECT_FALSE(c.dla.feature_int16);
  EXPECT_FALSE(c.dla.feature_fp16);
  EXPECT_FALSE(c.dla.weight_compression);
  EXPECT_FALSE(c.dla.winograd);
  EXPECT_FALSE(c.dla.batch);
  EXPECT_FALSE(c.dla.secondary_memif);
  EXPECT_FALSE(c.dla.sdp_lut);
  EXPECT_TRUE(c.dla.sdp_bs);
  EXPECT_TRUE(c.dla.sdp_bn);
  EXPECT_FALSE(c.dla.sdp_ew);
  EXPECT_FALSE(c.dla.bdma);
  EXPECT_FALSE(c.dla.rubik);
  EXPECT_TRUE(c.dla.pdp);
  EXPECT_TRUE(c.dla.cdp);
  EXPECT_EQ(c.dla.mac_atomic_c, 8u);
  EXPECT_EQ(c.dla.mac_atomic_k, 8u);
  EXPECT_EQ(c.dla.memory_atomic_size, 8u);
  EXPECT_EQ(c.dla.cbuf_bank_number, 32u);
  EXPECT_EQ(c.dla.cbuf_bank_width, 8u);
  EXPECT_EQ(c.dla.cbuf_bank_depth, 512u);
  EXPECT_EQ(c.dla.sdp_bs_throughput, 1u);
  EXPECT_EQ(c.dla.sdp_bn_throughput, 1u);
  EXPECT_EQ(c.dla.pdp_throughput, 1u);
  EXPECT_EQ(c.dla.cdp_throughput, 1u);
  EXPECT_EQ(c.dla.primary_memif_latency, 64u);
  EXPECT_EQ(c.dla.primary_memif_max_burst, 1u);
  EXPECT_EQ(c.dla.primary_memif_width, 64u);
  EXPECT_EQ(c.dla.mem_address_width, 32u);
}

TEST(HwConfig, NvSmall256FullMatchesNvdlaSpec) {
  const HwConfig c = load_hw_config("nv_small_256_full");
  EXPECT_EQ(c.name, "nv_small_256_full");
  EXPECT_TRUE(c.dla.secondary_memif);
  EXPECT_TRUE(c.dla.sdp_lut);
  EXPECT_TRUE(c.dla.sdp_ew);
  EXPECT_EQ(c.dla.mac_atomic_c, 32u);
  EXPECT_EQ(c.dla.mac_atomic_k, 8u);
  EXPECT_EQ(c.dla.memory_atomic_size, 8u);
  EXPECT_EQ(c.dla.cbuf_bank_width, 32u);
  EXPECT_EQ(c.dla.cbuf_bank_depth, 128u);
  EXPECT_EQ(c.dla.sdp_bs_throughput, 2u);
  EXPECT_EQ(c.dla.sdp_bn_throughput, 2u);
  EXPECT_EQ(c.dla.sdp_ew_throughput, 1u);
  EXPECT_EQ(c.dla.primary_memif_max_burst, 4u);
  EXPECT_EQ(c.dla.primary_memif_width, 64u);
  EXPECT_EQ(c.dla.mem_address_width, 32u);
}

TEST(HwConfig, NvSmall256NvLargeNvFullMatchNvdlaSpec) {
  const HwConfig s = load_hw_config("nv_small_256");
  EXPECT_EQ(s.dla.mac_atomic_c, 32u);
  EXPECT_EQ(s.dla.cbuf_bank_depth, 128u);
  EXPECT_FALSE(s.dla.sdp_ew);
  EXPECT_FALSE(s.dla.sdp_lut);

  const HwConfig l = load_hw_config("nv_large");
  EXPECT_EQ(l.dla.mac_atomic_c, 64u);
  EXPECT_EQ(l.dla.mac_atomic_k, 32u);
  EXPECT_EQ(l.dla.memory_atomic_size, 32u);
  EXPECT_EQ(l.dla.cbuf_bank_number, 16u);
  EXPECT_EQ(l.dla.cbuf_bank_width, 64u);
  EXPECT_EQ(l.dla.sdp_bs_throughput, 16u);
  EXPECT_EQ(l.dla.sdp_ew_throughput, 4u);
  EXPECT_EQ(l.dla.pdp_throughput, 8u);
  EXPECT_EQ(l.dla.primary_memif_latency, 1024u);
  EXPECT_EQ(l.dla.primary_memif_width, 256u);
  EXPECT_EQ(l.dla.mem_address_width, 64u);
  EXPECT_FALSE(l.dla.bdma);

  const HwConfig f = load_hw_config("nv_full");
  EXPECT_TRUE(f.dla.winograd);
  EXPECT_TRUE(f.dla.weight_compression);
  EXPECT_TRUE(f.dla.batch);
  EXPECT_TRUE(f.dla.bdma);
  EXPECT_TRUE(f.dla.rubik);
  EXPECT_EQ(f.dla.primary_memif_latency, 1200u);
  EXPECT_EQ(f.dla.primary_memif_width, 512u);
}

// NVDLA's performance figures assume a 1 GHz clock: every built-in configuration file states
// its clock (directly, or through the configuration it starts from), read from the JSON files
// themselves, not from the loaded values (whose default is also 1000).
TEST(HwConfig, EveryBuiltinConfigurationFileGivesItsClock) {
  const std::filesystem::path dir = std::filesystem::path(OCTASIM_SOURCE_DIR) / "sim" / "configs";
  std::map<std::string, nlohmann::json> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    files[entry.path().stem().string()] = nlohmann::json::parse(in);
  }
  ASSERT_EQ(files.size(), builtin_hw_configs().size());
  for (const auto& [name, j] : files) {
    const nlohmann::json* f = &j;
    while (!f->contains("clock_mhz") && f->contains("base")) f = &files.at((*f)["base"]);
    ASSERT_TRUE(f->contains("clock_mhz")) << name << ".json states no clock_mhz";
    EXPECT_EQ((*f)["clock_mhz"], 1000) << name;
    EXPECT_EQ(load_hw_config(name).clock_mhz, 1000u) << name;
  }
}

TEST(HwConfig, UserFileStartsFromBaseAndOverrides) {
  TempDir dir;
  const std::string path = dir.write(
      "mine.json", R"({"base": "nv_small", "name": "mine", "sdp_lut": true, "cdp_throughput": 4})");
  const HwConfig c = load_hw_config(path);
  EXPECT_EQ(c.name, "mine");
  EXPECT_TRUE(c.dla.sdp_lut);
  EXPECT_EQ(c.dla.cdp_throughput, 4u);
  EXPECT_EQ(c.dla.mac_atomic_c, 8u);  // from nv_small
  EXPECT_EQ(c.dla.primary_memif_latency, 64u);

  const HwConfig big = parse_hw_config(R"({"base": "nv_large", "pdp_throughput": 2})", "inline");
  EXPECT_EQ(big.dla.pdp_throughput, 2u);
  EXPECT_EQ(big.dla.mac_atomic_c, 64u);
  EXPECT_EQ(big.dla.mem_address_width, 64u);
}

TEST(HwConfig, EmptyObjectGivesDefaults) {
  const HwConfig c = parse_hw_config("{}", "empty.json");
  EXPECT_EQ(c.dla.mac_atomic_c, 8u);
  EXPECT_EQ(c.dla.mem_address_width, 32u);
}

// ppu_cta_scheduler is a string: round_robin unless set (every built-in omits it or says so);
// another name than a policy's is an error naming file, key, value and the valid names
// (tests/ppu/ppu_scheduler_test.cpp checks they are the PPU's policies).
TEST(HwConfig, PpuCtaSchedulerIsAStringDefaultingToRoundRobin) {
  for (const auto& name : builtin_hw_configs()) {
    EXPECT_EQ(load_hw_config(name).ppu.cta_scheduler, "round_robin") << name;
  }
  EXPECT_EQ(parse_hw_config(R"({"base": "soc_large", "ppu_cta_scheduler": "locality"})", "x")
                .ppu.cta_scheduler,
            "locality");
  expect_error([] { (void)parse_hw_config(R"({"ppu_cta_scheduler": 1})", "h.json"); },
               {"h.json", "ppu_cta_scheduler", "must be a string"});
  expect_error(
      [] { (void)parse_hw_config(R"({"ppu_cta_scheduler": "fifo"})", "i.json"); },
      {"i.json", "\"ppu_cta_scheduler\" is \"fifo\"", "valid: \"locality\", \"round_robin\""});
}

TEST(HwConfig, UnknownKeyNamesFileAndKey) {
  TempDir dir;
  const std::string path = dir.write("bad.json", R"({"base": "nv_small", "mac_atomic_x": 8})");
  expect_error([&] { (void)load_hw_config(path); }, {path, "mac_atomic_x"});
}

TEST(HwConfig, WrongTypesNameFileAndKey) {
  expect_error([] { (void)parse_hw_config(R"({"pdp": 1})", "a.json"); }, {"a.json", "pdp"});
  expect_error([] { (void)parse_hw_config(R"({"pdp": "yes"})", "a.json"); }, {"a.json", "pdp"});
  expect_error([] { (void)parse_hw_config(R"({"mac_atomic_c": true})", "b.json"); },
               {"b.json", "mac_atomic_c"});
  expect_error([] { (void)parse_hw_config(R"({"mac_atomic_c": -8})", "c.json"); },
               {"c.json", "mac_atomic_c"});
  expect_error([] { (void)parse_hw_config(R"({"mac_atomic_c": 8.5})", "d.json"); },
               {"d.json", "mac_atomic_c"});
  expect_error([] { (void)parse_hw_config(R"({"mac_atomic_c": "8"})", "e.json"); },
               {"e.json", "mac_atomic_c"});
  expect_error([] { (void)parse_hw_config(R"({"name": 3})", "f.json"); }, {"f.json", "name"});
  expect_error([] { (void)parse_hw_config(R"({"base": 3})", "g.json"); }, {"g.json", "base"});
}

// An integer above UINT_MAX is an error naming file and key, not truncated (2^32 + 64 used to
// load as 64).
TEST(HwConfig, IntegerTooLargeForItsKeyIsAnError) {
  expect_error(
      [] { (void)parse_hw_config(R"({"primary_memif_latency": 4294967360})", "big.json"); },
      {"big.json", "primary_memif_latency"});
}

TEST(HwConfig, ImpossibleValuesAreRejected) {
  expect_error([] { (void)parse_hw_config(R"({"memory_atomic_size": 12})", "v.json"); },
               {"v.json", "memory_atomic_size"});
  expect_error([] { (void)parse_hw_config(R"({"memory_atomic_size": 0})", "v.json"); },
               {"memory_atomic_size"});
  expect_error([] { (void)parse_hw_config(R"({"mac_atomic_k": 24})", "v.json"); },
               {"mac_atomic_k"});
  expect_error([] { (void)parse_hw_config(R"({"primary_memif_width": 60})", "v.json"); },
               {"primary_memif_width"});
  expect_error([] { (void)parse_hw_config(R"({"primary_memif_width": 0})", "v.json"); },
               {"primary_memif_width"});
  expect_error([] { (void)parse_hw_config(R"({"mem_address_width": 8})", "v.json"); },
               {"mem_address_width"});
  expect_error([] { (void)parse_hw_config(R"({"mem_address_width": 65})", "v.json"); },
               {"mem_address_width"});
  expect_error([] { (void)parse_hw_config(R"({"primary_memif_max_burst": 0})", "v.json"); },
               {"primary_memif_max_burst"});
  expect_error(
      [] { (void)parse_hw_config(R"({"sdp_ew": true, "sdp_ew_throughput": 0})", "v.json"); },
      {"sdp_ew"});
  // Boundaries that are valid.
  EXPECT_EQ(parse_hw_config(R"({"mem_address_width": 16})", "v.json").dla.mem_address_width, 16u);
  EXPECT_EQ(parse_hw_config(R"({"mem_address_width": 64})", "v.json").dla.mem_address_width, 64u);
}

TEST(HwConfig, UnknownBaseAndBadJsonAreErrors) {
  expect_error([] { (void)parse_hw_config(R"({"base": "nv_tiny"})", "h.json"); },
               {"h.json", "nv_tiny"});
  expect_error([] { (void)parse_hw_config(R"({"base": "nv_small",)", "i.json"); },
               {"i.json", "JSON"});
  expect_error([] { (void)parse_hw_config("[1, 2]", "j.json"); }, {"j.json", "object"});
}

TEST(HwConfig, MissingFileNamesItAndListsBuiltins) {
  TempDir dir;
  const std::string path = (dir.path() / "absent.json").string();
  expect_error([&] { (void)load_hw_config(path); }, {path, "nv_small", "nv_full"});
}

}  // namespace
}  // namespace octasim
