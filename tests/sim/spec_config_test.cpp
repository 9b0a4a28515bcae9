// NVDLA spec files (spec/defs/*.spec) as configurations: every shipped file against the numbers
// its text says (copied by hand from ../shared/conformance/nvdla/spec, not from the code), the
// defines with no octasim key, the base a spec starts from, a JSON file with a .spec base, and
// malformed spec text, which must give one error naming file and line.
#include "sim/core/spec_config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "sim_test_util.hpp"

namespace octasim {
namespace {

using nlohmann::json;
using test::TempDir;

const std::string kSpecDir = OCTASIM_NVDLA_SPEC_DIR;

#define REQUIRE_SPECS()                                                     \
  if (!std::filesystem::exists(kSpecDir + "/projects.spec")) {              \
    GTEST_SKIP() << kSpecDir << " not found: NVDLA spec files not checked"; \
  }

// What each shipped spec file says, read off its text by hand: the keys it sets, and the
// secondary interface's latency / burst / width (no octasim key yet; 0 = "_x").
struct Expected {
  json keys;
  unsigned secondary[3];
};

json switches(bool compression, bool winograd, bool batch, bool secondary, bool lut, bool ew,
              bool bdma, bool rubik) {
  return {{"weight_compression", compression},
          {"winograd", winograd},
          {"batch", batch},
          {"secondary_memif", secondary},
          {"sdp_lut", lut},
          {"sdp_bs", true},
          {"sdp_bn", true},
          {"sdp_ew", ew},
          {"bdma", bdma},
          {"rubik", rubik},
          {"pdp", true},
          {"cdp", true}};
}

json merged(json a, const json& b) {
  a.update(b);
  return a;
}

const json kInt8Only = {{"feature_int8", true}, {"feature_int16", false}, {"feature_fp16", false}};

std::map<std::string, Expected> shipped() {
  std::map<std::string, Expected> e;
  // nv_small.spec: 8x8 MACs, 8-byte atoms, 32 banks of 8 B x 512, 64-bit interface, latency 64.
  e["nv_small"] = {
      merged(merged(kInt8Only, switches(false, false, false, false, false, false, false, false)),
             {{"mac_atomic_c", 8},
              {"mac_atomic_k", 8},
              {"memory_atomic_size", 8},
              {"cbuf_bank_number", 32},
              {"cbuf_bank_width", 8},
              {"cbuf_bank_depth", 512},
              {"sdp_bs_throughput", 1},
              {"sdp_bn_throughput", 1},
              {"pdp_throughput", 1},
              {"cdp_throughput", 1},
              {"primary_memif_latency", 64},
              {"primary_memif_max_burst", 1},
              {"primary_memif_width", 64},
              {"mem_address_width", 32}}),
      {0, 0, 0}};
  e["nv_small_256"] = {
      merged(merged(kInt8Only, switches(false, false, false, false, false, false, false, false)),
             {{"mac_atomic_c", 32},
              {"mac_atomic_k", 8},
              {"memory_atomic_size", 8},
              {"cbuf_bank_number", 32},
              {"cbuf_bank_width", 32},
              {"cbuf_bank_depth", 128},
              {"sdp_bs_throughput", 1},
              {"sdp_bn_throughput", 1},
              {"pdp_throughput", 1},
              {"cdp_throughput", 1},
              {"primary_memif_latency", 64},
              {"primary_memif_max_burst", 1},
              {"primary_memif_width", 64},
              {"mem_address_width", 32}}),
      {0, 0, 0}};
  e["nv_small_256_full"] = {
      merged(merged(kInt8Only, switches(false, false, false, true, true, true, false, false)),
             {{"mac_atomic_c", 32},
              {"mac_atomic_k", 8},
              {"memory_atomic_size", 8},
              {"cbuf_bank_number", 32},
              {"cbuf_bank_width", 32},
              {"cbuf_bank_depth", 128},
              {"sdp_bs_throughput", 2},
              {"sdp_bn_throughput", 2},
              {"sdp_ew_throughput", 1},
              {"pdp_throughput", 1},
              {"cdp_throughput", 1},
              {"primary_memif_latency", 64},
              {"primary_memif_max_burst", 4},
              {"primary_memif_width", 64},
              {"mem_address_width", 32}}),
      {64, 4, 64}};
  e["nv_medium_512"] = {
      merged(merged(kInt8Only, switches(false, false, false, false, false, false, false, false)),
             {{"mac_atomic_c", 32},
              {"mac_atomic_k", 16},
              {"memory_atomic_size", 16},
              {"cbuf_bank_number", 32},
              {"cbuf_bank_width", 32},
              {"cbuf_bank_depth", 512},
              {"sdp_bs_throughput", 4},
              {"sdp_bn_throughput", 4},
              {"pdp_throughput", 2},
              {"cdp_throughput", 2},
              {"primary_memif_latency", 256},
              {"primary_memif_max_burst", 4},
              {"primary_memif_width", 128},
              {"mem_address_width", 64}}),
      {0, 0, 0}};
  e["nv_medium_1024_full"] = {
      merged(merged(kInt8Only, switches(false, false, false, true, true, true, false, false)),
             {{"mac_atomic_c", 32},
              {"mac_atomic_k", 32},
              {"memory_atomic_size", 32},
              {"cbuf_bank_number", 32},
              {"cbuf_bank_width", 32},
              {"cbuf_bank_depth", 512},
              {"sdp_bs_throughput", 8},
              {"sdp_bn_throughput", 8},
              {"sdp_ew_throughput", 2},
              {"pdp_throughput", 4},
              {"cdp_throughput", 4},
              {"primary_memif_latency", 1024},
              {"primary_memif_max_burst", 4},
              {"primary_memif_width", 256},
              {"mem_address_width", 64}}),
      {1024, 4, 256}};
  e["nv_large"] = {
      merged(merged(kInt8Only, switches(false, false, false, true, true, true, false, false)),
             {{"mac_atomic_c", 64},
              {"mac_atomic_k", 32},
              {"memory_atomic_size", 32},
              {"cbuf_bank_number", 16},
              {"cbuf_bank_width", 64},
              {"cbuf_bank_depth", 512},
              {"sdp_bs_throughput", 16},
              {"sdp_bn_throughput", 16},
              {"sdp_ew_throughput", 4},
              {"pdp_throughput", 8},
              {"cdp_throughput", 8},
              {"primary_memif_latency", 1024},
              {"primary_memif_max_burst", 1},
              {"primary_memif_width", 256},
              {"mem_address_width", 64}}),
      {1024, 1, 256}};
  // nv_full.spec (nvdlav1): no data-type or address-width defines; 512-bit interface, 1200.
  e["nv_full"] = {merged(switches(true, true, true, true, true, true, true, true),
                         json{{"mac_atomic_c", 64},
                              {"mac_atomic_k", 32},
                              {"memory_atomic_size", 32},
                              {"cbuf_bank_number", 16},
                              {"cbuf_bank_width", 64},
                              {"cbuf_bank_depth", 512},
                              {"sdp_bs_throughput", 16},
                              {"sdp_bn_throughput", 16},
                              {"sdp_ew_throughput", 4},
                              {"pdp_throughput", 8},
                              {"cdp_throughput", 8},
                              {"primary_memif_latency", 1200},
                              {"primary_memif_max_burst", 1},
                              {"primary_memif_width", 512}}),
                  {128, 4, 512}};
  return e;
}

std::set<std::string> names(const std::vector<SpecDefine>& defines) {
  std::set<std::string> out;
  for (const SpecDefine& d : defines) out.insert(d.name);
  return out;
}

TEST(SpecConfig, EveryShippedSpecGivesTheValuesItsTextSays) {
  REQUIRE_SPECS();
  const char* secondary_keys[] = {"secondary_memif_latency", "secondary_memif_max_burst",
                                  "secondary_memif_width"};
  for (auto& [project, want] : shipped()) {
    SCOPED_TRACE(project);
    const std::string path = kSpecDir + "/" + project + ".spec";
    const SpecTranslation t = translate_spec_file(path);
    EXPECT_EQ(t.project, project);
    json expected = want.keys;
    // The secondary interface's keys are being added; until then its defines are unmapped.
    for (int i = 0; i < 3; ++i) {
      if (is_hw_config_key(secondary_keys[i]) && want.secondary[i] != 0)
        expected[secondary_keys[i]] = want.secondary[i];
    }
    EXPECT_EQ(t.keys, expected) << "got " << t.keys.dump() << "\nwant " << expected.dump();
    const HwConfig c = load_hw_config(path);
    EXPECT_EQ(c.name, project);
  }
}

TEST(SpecConfig, DefinesWithoutAKeyAreListedWithTheirLines) {
  REQUIRE_SPECS();
  const SpecTranslation t = translate_spec_file(kSpecDir + "/nv_small.spec");
  std::set<std::string> want = {"WEIGHT_DATA_TYPE_INT8",  "RUBIK_CONTRACT_DISABLE",
                                "RUBIK_RESHAPE_DISABLE",  "RETIMING_DISABLE",
                                "MAX_BATCH_SIZE_x",       "NUM_DMA_READ_CLIENTS_7",
                                "NUM_DMA_WRITE_CLIENTS_3"};
  if (!is_hw_config_key("secondary_memif_latency")) {
    want.insert({"SECONDARY_MEMIF_LATENCY_x", "SECONDARY_MEMIF_MAX_BURST_LENGTH_x",
                 "SECONDARY_MEMIF_WIDTH_x"});
  }
  EXPECT_EQ(names(t.unmapped), want);
  EXPECT_TRUE(t.failed_checks.empty()) << t.failed_checks.front().value;
  // nv_small.spec line 18 is `#define RETIMING_DISABLE`.
  const std::vector<std::string> notes = spec_notes(t);
  bool found = false;
  for (const std::string& n : notes) {
    found = found || n == kSpecDir +
                              "/nv_small.spec:18: RETIMING_DISABLE has no octasim "
                              "configuration key (ignored)";
  }
  EXPECT_TRUE(found);
  std::vector<std::string> from_load;
  (void)load_hw_config(kSpecDir + "/nv_small.spec", &from_load);
  EXPECT_EQ(from_load, notes);
}

TEST(SpecConfig, NvFullFailsMastersProjectsChecksAsNotesNotErrors) {
  REQUIRE_SPECS();
  // nv_full.spec comes from nvdlav1; master's projects.spec knows no 512-bit interface and wants
  // FEATURE_DATA_TYPE_INT8, RETIMING_* and MEM_ADDRESS_WIDTH_*, which nv_full.spec lacks.
  const SpecTranslation t = translate_spec_file(kSpecDir + "/nv_full.spec");
  std::string all;
  for (const SpecDefine& d : t.failed_checks) all += d.value + "\n";
  EXPECT_NE(all.find("NVDLA_FEATURE_DATA_TYPE_INT8 must be set"), std::string::npos) << all;
  EXPECT_NE(all.find("NVDLA_PRIMARY_MEMIF_WIDTH_{256,128,64}"), std::string::npos) << all;
  EXPECT_EQ(t.failed_checks.front().file, kSpecDir + "/projects.spec");
  // Which built-in the keys a spec leaves out come from: its namesake (data types of nv_full).
  EXPECT_EQ(spec_config_json(t)["base"], "nv_full");
}

TEST(SpecConfig, BaseIsTheNamesakeBuiltinElseNvSmall) {
  REQUIRE_SPECS();
  const json large = spec_config_json(translate_spec_file(kSpecDir + "/nv_large.spec"));
  EXPECT_EQ(large["base"], "nv_large");
  EXPECT_EQ(large["name"], "nv_large");
  const json medium = spec_config_json(translate_spec_file(kSpecDir + "/nv_medium_512.spec"));
  EXPECT_EQ(medium["base"], "nv_small");
  EXPECT_EQ(medium["name"], "nv_medium_512");
  EXPECT_EQ(medium["mac_atomic_k"], 16);
}

// The built-ins that NVDLA has a spec for agree with it on every key the spec sets.
TEST(SpecConfig, BuiltinJsonAgreesWithNvdlaSpecFiles) {
  REQUIRE_SPECS();
  for (const char* project :
       {"nv_small", "nv_small_256", "nv_small_256_full", "nv_large", "nv_full"}) {
    SCOPED_TRACE(project);
    std::ifstream in(std::string(OCTASIM_SOURCE_DIR) + "/sim/configs/" + project + ".json");
    ASSERT_TRUE(in);
    const json builtin = json::parse(in);
    const SpecTranslation t = translate_spec_file(kSpecDir + "/" + project + ".spec");
    for (const auto& [key, value] : t.keys.items()) {
      EXPECT_EQ(builtin.value(key, json()), value) << key;
    }
  }
}

TEST(SpecConfig, JsonFileMayStartFromASpecFileBesideIt) {
  REQUIRE_SPECS();
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "specs");
  for (const char* f : {"nv_medium_512.spec", "projects.spec"}) {
    std::filesystem::copy_file(kSpecDir + "/" + f, dir.path() / "specs" / f);
  }
  const std::string cfg = dir.write(
      "cfgs/mine.json",
      R"({"base": "../specs/nv_medium_512.spec", "name": "mine", "primary_memif_latency": 300})");
  std::vector<std::string> notes;
  const HwConfig c = load_hw_config(cfg, &notes);
  EXPECT_EQ(c.name, "mine");
  EXPECT_EQ(c.dla.primary_memif_latency, 300u);  // the JSON's own key over the spec's 256
  EXPECT_EQ(c.dla.mac_atomic_k, 16u);            // from the spec
  EXPECT_EQ(c.dla.memory_atomic_size, 16u);
  EXPECT_EQ(c.mem.dram_write_latency, load_hw_config("nv_small").mem.dram_write_latency);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.front().find("specs/nv_medium_512.spec:2: WEIGHT_DATA_TYPE_INT8"),
            std::string::npos)
      << notes.front();
  // Keys the JSON sets are still checked by the JSON path.
  const std::string bad =
      dir.write("cfgs/bad.json", R"({"base": "../specs/nv_medium_512.spec", "mac_atomic_c": 12})");
  try {
    (void)load_hw_config(bad);
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("powers of two"), std::string::npos) << e.what();
  }
}

// Expects translate + load of `text` (as <dir>/x.spec) to throw one error containing each
// fragment.
void expect_spec_error(const TempDir& dir, const std::string& text,
                       std::initializer_list<std::string> fragments) {
  const std::string path = dir.write("x.spec", text);
  try {
    (void)load_hw_config(path);
    ADD_FAILURE() << "expected an error for:\n" << text;
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const std::string& f : fragments) {
      EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
    }
  }
}

TEST(SpecConfig, MalformedSpecLinesAreOneErrorWithFileAndLine) {
  TempDir dir;
  const std::string x = (dir.path() / "x.spec").string();
  expect_spec_error(dir, "#define PDP_ENABLE\n#define MAC_ATOMIC_C_SIZE_abc\n",
                    {x + ":2:", "MAC_ATOMIC_C_SIZE_abc", "MAC_ATOMIC_C_SIZE_<number>"});
  expect_spec_error(dir, "#define PRIMARY_MEMIF_LATENCY fast\n",
                    {x + ":1:", "PRIMARY_MEMIF_LATENCY", "expected a number", "'fast'"});
  expect_spec_error(dir, "#define PRIMARY_MEMIF_LATENCY\n", {x + ":1:", "expected a number"});
  expect_spec_error(dir, "#define CBUF_BANK_DEPTH_99999999999\n", {x + ":1:", "CBUF_BANK_DEPTH"});
  expect_spec_error(dir, "\n#include \"nope.spec\"\n", {x + ":2:", "nope.spec", "no such file"});
  expect_spec_error(dir, "#include <projects.spec>\n", {x + ":1:", "#include \"FILE\""});
  expect_spec_error(
      dir, "#define MAC_ATOMIC_C_SIZE_8\n#define MAC_ATOMIC_C_SIZE_32\n",
      {x + ":2:", "MAC_ATOMIC_C_SIZE_32 conflicts with MAC_ATOMIC_C_SIZE_8", x + ":1"});
  expect_spec_error(dir, "#define SDP_EW_ENABLE\n#define SDP_EW_DISABLE\n",
                    {x + ":2:", "SDP_EW_DISABLE conflicts with SDP_EW_ENABLE"});
  expect_spec_error(dir, "#define A 1\n#define A 2\n", {x + ":2:", "redefines"});
  expect_spec_error(dir, "MAC_ATOMIC_C_SIZE_8\n", {x + ":1:", "expected a #define"});
  expect_spec_error(dir, "#pragma once\n", {x + ":1:", "unsupported directive '#pragma'"});
  expect_spec_error(dir, "#define F(x) x\n", {x + ":1:", "macros with arguments"});
  expect_spec_error(dir, "#if defined(A)\n#define B\n", {x + ":1:", "#if without a matching"});
  expect_spec_error(dir, "#endif\n", {x + ":1:", "#endif without #if"});
  expect_spec_error(dir, "#if A + 1\n#endif\n", {x + ":1:", "#if expression 'A + 1'"});
  expect_spec_error(dir, "/* a\n comment */ #define MAC_ATOMIC_C_SIZE_x1\n",
                    {x + ":2:", "MAC_ATOMIC_C_SIZE_x1"});
}

TEST(SpecConfig, IncludeCyclesAreRefused) {
  TempDir dir;
  dir.write("a.spec", "#define PDP_ENABLE\n#include \"b.spec\"\n");
  const std::string b = dir.write("b.spec", "\n\n#include \"a.spec\"\n");
  try {
    (void)translate_spec_file((dir.path() / "a.spec").string());
    ADD_FAILURE() << "expected an include cycle";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(b + ":3: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("include cycle"), std::string::npos) << msg;
  }
  expect_spec_error(dir, "#include \"x.spec\"\n", {"x.spec:1:", "include cycle"});
  // Including one file twice (not a cycle) is fine, as in C.
  dir.write("c.spec", "#define CDP_ENABLE\n");
  const std::string twice = dir.write("twice.spec", "#include \"c.spec\"\n#include \"c.spec\"\n");
  EXPECT_EQ(translate_spec_file(twice).keys, (json{{"cdp", true}}));
}

TEST(SpecConfig, ValidationErrorsNameTheDefineBehindTheKey) {
  TempDir dir;
  const std::string x = (dir.path() / "x.spec").string();
  expect_spec_error(dir, "// a comment\n#define MAC_ATOMIC_C_SIZE_12\n",
                    {x + ":", "powers of two", "MAC_ATOMIC_C_SIZE_12 at " + x + ":2"});
  expect_spec_error(dir, "#define SDP_EW_ENABLE\n#define SDP_EW_THROUGHPUT_x\n",
                    {"sdp_ew needs sdp_ew_throughput", "SDP_EW_ENABLE at " + x + ":1"});
  try {
    (void)load_hw_config((dir.path() / "missing.spec").string());
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.spec: cannot open spec file"), std::string::npos)
        << e.what();
  }
}

TEST(SpecConfig, FormsOfDefines) {
  TempDir dir;
  const std::string path = dir.write("f.spec",
                                     "#define MAC_ATOMIC_C_SIZE 32   // C style: NAME VALUE\n"
                                     "#define PDP_THROUGHPUT_4 1\n"
                                     "#define SDP_EW_THROUGHPUT_x\n"
                                     "#define FEATURE_DATA_TYPE_INT16\n"
                                     "#define SOMETHING_NEW 7\n"
                                     "#ifdef SOMETHING_NEW\n"
                                     "#define CDP_DISABLE\n"
                                     "#elif defined(X)\n"
                                     "#define CDP_ENABLE\n"
                                     "#endif\n"
                                     "#if !defined(SOMETHING_NEW) || 0\n"
                                     "#error \"not reached\"\n"
                                     "#else\n"
                                     "%define DERIVED log2(SOMETHING)\n"
                                     "#endif\n"
                                     "#if defined(MAC_ATOMIC_C_SIZE) && !defined(Y)\n"
                                     "#error \"reached\"\n"
                                     "#endif\n");
  const SpecTranslation t = translate_spec_file(path);
  // _x: the setting does not apply; the key keeps the base's value. The data types a spec names
  // are the complete set.
  EXPECT_EQ(t.keys, (json{{"mac_atomic_c", 32},
                          {"pdp_throughput", 4},
                          {"feature_int16", true},
                          {"feature_int8", false},
                          {"feature_fp16", false},
                          {"cdp", false}}));
  EXPECT_EQ(names(t.unmapped), (std::set<std::string>{"SOMETHING_NEW"}));
  ASSERT_EQ(t.failed_checks.size(), 1u);
  EXPECT_EQ(t.failed_checks[0].value, "reached");
  EXPECT_EQ(t.failed_checks[0].line, 17);
  EXPECT_TRUE(is_spec_path("a/b.spec"));
  EXPECT_FALSE(is_spec_path("nv_small"));
  EXPECT_FALSE(is_spec_path("a.spec.json"));
}

}  // namespace
}  // namespace octasim
