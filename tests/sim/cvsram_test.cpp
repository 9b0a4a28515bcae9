// The CV-SRAM (NVDLA's secondary memory behind SRAMIF): its configuration keys against NVDLA's
// .spec files (parsed here, not copied from the JSON), its own address space on the functional
// device, `sec_mem` in traces, and the clear refusals (no secondary interface; an address
// outside the CV-SRAM).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/device_memory.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "sim_test_util.hpp"

namespace octasim {
namespace {

using test::TempDir;

// The value of `#define <NAME>_<value>` in NVDLA's spec file of `config`; -1 when absent.
long spec_value(const std::string& config, const std::string& name) {
  std::ifstream in(std::string(OCTASIM_SOURCE_DIR) + "/../shared/conformance/nvdla/spec/" + config +
                   ".spec");
  if (!in) return -2;
  const std::regex define("#define " + name + "_([0-9]+)\\s*$");
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, define)) return std::stol(m[1]);
  }
  return -1;
}

TEST(CvSramConfig, SecondaryInterfaceMatchesNvdlaSpec) {
  for (const std::string config : {"nv_large", "nv_full", "nv_small_256_full"}) {
    SCOPED_TRACE(config);
    if (spec_value(config, "SECONDARY_MEMIF_LATENCY") == -2) GTEST_SKIP() << "no NVDLA spec files";
    const HwConfig hw = load_hw_config(config);
    EXPECT_TRUE(hw.dla.secondary_memif);
    EXPECT_EQ(long{hw.dla.secondary_memif_latency}, spec_value(config, "SECONDARY_MEMIF_LATENCY"));
    EXPECT_EQ(long{hw.dla.secondary_memif_width}, spec_value(config, "SECONDARY_MEMIF_WIDTH"));
    EXPECT_EQ(long{hw.dla.secondary_memif_max_burst},
              spec_value(config, "SECONDARY_MEMIF_MAX_BURST_LENGTH"));
    EXPECT_GT(hw.mem.cvsram_bytes, 0u);
  }
  EXPECT_FALSE(load_hw_config("nv_small").dla.secondary_memif);
}

TEST(CvSramConfig, RefusesAnInconsistentSecondaryInterface) {
  const auto message = [](const std::string& text) -> std::string {
    try {
      (void)parse_hw_config(text, "x.json");
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message(R"({"base": "nv_large", "cvsram_bytes": 0})").find("cvsram_bytes"),
            std::string::npos);
  EXPECT_NE(
      message(R"({"base": "nv_large", "secondary_memif_width": 12})").find("secondary_memif_width"),
      std::string::npos);
  EXPECT_NE(message(R"({"base": "nv_large", "secondary_memif_max_burst": 0})")
                .find("secondary_memif_max_burst"),
            std::string::npos);
  EXPECT_NE(message(R"({"base": "nv_small_256_full", "mem_address_width": 32,
                        "cvsram_base": 4294967040, "cvsram_bytes": 4096})")
                .find("32-bit"),
            std::string::npos);
}

// Bandwidth: one shared path (cvsram_bytes_per_cycle) or separate read and write paths
// (cvsram_read_/write_bytes_per_cycle), 0 meaning the interface width / 8 (nv_full: 512 bits, 64).
TEST(CvSramConfig, SharedOrSeparateReadAndWriteRates) {
  const HwConfig full = load_hw_config("nv_full");
  EXPECT_FALSE(full.mem.cvsram_split_paths());
  EXPECT_EQ(full.cvsram_read_bandwidth(), 64u);
  EXPECT_EQ(full.cvsram_write_bandwidth(), 64u);

  const HwConfig shared =
      parse_hw_config(R"({"base": "nv_full", "cvsram_bytes_per_cycle": 16})", "shared.json");
  EXPECT_FALSE(shared.mem.cvsram_split_paths());
  EXPECT_EQ(shared.cvsram_read_bandwidth(), 16u);
  EXPECT_EQ(shared.cvsram_write_bandwidth(), 16u);

  // NVIDIA's performance sheet: 25 GB/s of reads and 25 GB/s of writes at 1 GHz.
  const HwConfig sheet = parse_hw_config(
      R"({"base": "nv_full", "cvsram_read_bytes_per_cycle": 25,
          "cvsram_write_bytes_per_cycle": 25})",
      "sheet.json");
  EXPECT_TRUE(sheet.mem.cvsram_split_paths());
  EXPECT_EQ(sheet.cvsram_read_bandwidth(), 25u);
  EXPECT_EQ(sheet.cvsram_write_bandwidth(), 25u);

  // One of them set: the paths are separate, the other at the interface's width.
  const HwConfig reads =
      parse_hw_config(R"({"base": "nv_full", "cvsram_read_bytes_per_cycle": 10})", "reads.json");
  EXPECT_TRUE(reads.mem.cvsram_split_paths());
  EXPECT_EQ(reads.cvsram_read_bandwidth(), 10u);
  EXPECT_EQ(reads.cvsram_write_bandwidth(), 64u);
}

// A shared rate and a separate one at once is a contradiction: one error naming the file, both
// kinds of key and the way out.
TEST(CvSramConfig, SharedAndSeparateRatesTogetherAreOneClearError) {
  for (const char* text :
       {R"({"base": "nv_full", "cvsram_bytes_per_cycle": 32, "cvsram_read_bytes_per_cycle": 25})",
        R"({"base": "nv_full", "cvsram_bytes_per_cycle": 32, "cvsram_write_bytes_per_cycle": 8})",
        // Also where the configuration has no secondary interface: the keys still contradict.
        R"({"cvsram_bytes_per_cycle": 4, "cvsram_read_bytes_per_cycle": 4,
            "cvsram_write_bytes_per_cycle": 4})"}) {
    try {
      (void)parse_hw_config(text, "both.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("both.json: ", 0), 0u) << msg;
      EXPECT_NE(msg.find("cvsram_bytes_per_cycle"), std::string::npos) << msg;
      EXPECT_NE(msg.find("cvsram_read_bytes_per_cycle"), std::string::npos) << msg;
      EXPECT_NE(msg.find("cvsram_write_bytes_per_cycle"), std::string::npos) << msg;
      EXPECT_NE(msg.find("give one or the other"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;  // one line
    }
  }
  // A base with a shared rate of 0 (nv_full's "cvsram_bytes_per_cycle": 0) is no contradiction.
  EXPECT_NO_THROW((void)parse_hw_config(
      R"({"base": "nv_full", "cvsram_bytes_per_cycle": 0, "cvsram_read_bytes_per_cycle": 25})",
      "ok.json"));
}

TEST(CvSramMemory, SameAddressHoldsSeparateDataInDramAndCvSram) {
  dla::FunctionalDevice dev(load_hw_config("nv_large"));
  const std::uint64_t addr = dev.memory_of(MemorySpace::kCvSram).base() + 0x100;
  const std::vector<std::uint8_t> dram_bytes = {1, 2, 3, 4};
  const std::vector<std::uint8_t> sram_bytes = {0xa, 0xb, 0xc, 0xd};
  dev.memory_of(MemorySpace::kDram).write(addr, dram_bytes.data(), 4);
  dev.memory_of(MemorySpace::kCvSram).write(addr, sram_bytes.data(), 4);
  std::vector<std::uint8_t> got(4);
  dev.memory().read(addr, got.data(), 4);
  EXPECT_EQ(got, dram_bytes);
  dev.memory_of(MemorySpace::kCvSram).read(addr, got.data(), 4);
  EXPECT_EQ(got, sram_bytes);

  // The same through DMA addresses, as a DMA (BDMA, the engines) reaches them.
  MemoryImage dram(64);
  MemoryImage sram(0x50000000, 0x1000, "the CV-SRAM");
  DeviceMemory mem(dram, &sram, "test");
  mem.write(dma_address(MemorySpace::kDram, 0x50000010), dram_bytes.data(), 4);
  mem.write(dma_address(MemorySpace::kCvSram, 0x50000010), sram_bytes.data(), 4);
  dram.read(0x50000010, got.data(), 4);
  EXPECT_EQ(got, dram_bytes);
  sram.read(0x50000010, got.data(), 4);
  EXPECT_EQ(got, sram_bytes);
  EXPECT_EQ(split_dma_address(dma_address(MemorySpace::kCvSram, 0x1234)).space,
            MemorySpace::kCvSram);
  EXPECT_EQ(split_dma_address(dma_address(MemorySpace::kCvSram, 0x1234)).addr, 0x1234u);
  EXPECT_EQ(ram_type_space(0), MemorySpace::kCvSram);  // NVDLA: CV = 0
  EXPECT_EQ(ram_type_space(1), MemorySpace::kDram);    // MC = 1
  EXPECT_THROW((void)dma_address(MemorySpace::kDram, kCvSramTag | 4), std::invalid_argument);
}

TEST(CvSramMemory, AccessOutsideTheCvSramIsAClearError) {
  const HwConfig hw = load_hw_config("nv_large");
  dla::FunctionalDevice dev(hw);
  MemoryImage& sram = dev.memory_of(MemorySpace::kCvSram);
  const std::uint64_t end = std::uint64_t{hw.mem.cvsram_base} + hw.mem.cvsram_bytes;
  std::vector<std::uint8_t> bytes(8);
  try {
    sram.write(end - 4, bytes.data(), 8);
    ADD_FAILURE() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("CV-SRAM"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sram.read(hw.mem.cvsram_base - 4, bytes.data(), 4), std::out_of_range);
  EXPECT_NO_THROW(sram.read(end - 8, bytes.data(), 8));

  // In a trace: the line of the command that leaves the CV-SRAM.
  TempDir dir;
  const std::string text =
      "mem_init(sec_mem, " + std::to_string(end - 0x10) + ", 0x20, ALL_ZERO);\n";
  try {
    (void)trace::play(trace::parse_trace(text, (dir.path() / "t.cfg").string()), dev, {});
    ADD_FAILURE() << "expected a TraceError";
  } catch (const trace::TraceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("t.cfg:1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CV-SRAM"), std::string::npos) << msg;
  }
}

TEST(CvSramMemory, SecMemIsRefusedWithoutASecondaryInterface) {
  dla::FunctionalDevice dev(load_hw_config("nv_small"));
  TempDir dir;
  try {
    (void)trace::play(trace::parse_trace("mem_init(pri_mem, 0x0, 0x10, ALL_ZERO);\n"
                                         "mem_init(sec_mem, 0x50000000, 0x10, ALL_ZERO);\n",
                                         (dir.path() / "t.cfg").string()),
                      dev, {});
    ADD_FAILURE() << "expected a TraceError";
  } catch (const trace::TraceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("t.cfg:2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nv_small"), std::string::npos) << msg;
    EXPECT_NE(msg.find("secondary_memif"), std::string::npos) << msg;
  }
}

TEST(CvSramMemory, SecMemTraceCommandsReachTheCvSram) {
  dla::FunctionalDevice dev(load_hw_config("nv_large"));
  TempDir dir;
  dir.write("d.dat", "{offset:0x0, size:4, payload:0x11 0x22 0x33 0x44}\n");
  const std::vector<std::uint8_t> want = {0x11, 0x22, 0x33, 0x44};
  const std::uint32_t crc = test::reference_crc32(want);
  const std::string text =
      "mem_init(pri_mem, 0x50000000, 0x4, ALL_ONE);\n"
      "mem_load(sec_mem, 0x50000000, \"d.dat\");\n"
      "sync_notify(X, s0);\n"
      "check_crc(s0, sec_mem, 0x50000000, 0x4, " +
      std::to_string(crc) +
      ");\n"
      "check_file(s0, sec_mem, 0x50000000, 0x4, \"d.dat\");\n";
  const trace::PlayResult r =
      trace::play(trace::parse_trace(text, (dir.path() / "t.cfg").string()), dev, {});
  ASSERT_EQ(r.checks.size(), 2u);
  EXPECT_TRUE(r.all_passed());
  std::vector<std::uint8_t> dram(4);
  dev.memory().read(0x50000000, dram.data(), 4);
  EXPECT_EQ(dram, (std::vector<std::uint8_t>{0xff, 0xff, 0xff, 0xff}));
}

}  // namespace
}  // namespace octasim
