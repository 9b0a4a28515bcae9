// Names in the trace syntax are case-insensitive (NVDLA's nv_large traces write
// intr_notify(cdma_dat_0, ...)): registers and their units, fields, interrupts, memories and
// mem_init patterns, in any mix of case, resolve to what their upper-case spelling names; errors
// show the name as written.
#include <gtest/gtest.h>

#include <string>

#include "sim/trace/command_table.hpp"
#include "sim/trace/trace.hpp"
#include "sim_test_util.hpp"

// A namespace of its own: the unity build compiles this file with its target's others.
namespace octasim::trace::trace_names_test {
namespace {

using test::TempDir;

Command parse_one(const TempDir& dir, const std::string& line) {
  const Trace t = parse_trace(line, (dir.path() / "t.cfg").string());
  if (t.commands.size() != 1) {
    ADD_FAILURE() << "expected one command from: " << line;
    return Command{};
  }
  return t.commands[0];
}

std::string error_of(const TempDir& dir, const std::string& text) {
  try {
    (void)parse_trace(text, (dir.path() / "t.cfg").string());
  } catch (const TraceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no TraceError for: " << text;
  return "";
}

TEST(TraceNames, RegistersAndUnitsInAnyCase) {
  TempDir dir;
  // NVDLA's opendla_small.h: NVDLA_SDP_D_OP_ENABLE_0 is CSB byte address 0x9038,
  // NVDLA_CDMA_S_CBUF_FLUSH_STATUS_0 is 0x300c.
  for (const char* name :
       {"NVDLA_SDP.D_OP_ENABLE_0", "nvdla_sdp.d_op_enable_0", "Nvdla_Sdp.D_Op_Enable_0"}) {
    const Command c = parse_one(dir, std::string("reg_write(") + name + ", 0x1);");
    ASSERT_NE(c.as<RegWrite>().reg, nullptr) << name;
    EXPECT_EQ(c.as<RegWrite>().reg->addr, 0x9038u) << name;
  }
  const Command poll = parse_one(dir, "poll_reg_equal(nvdla_cdma.s_cbuf_flush_status_0, 0x1);");
  EXPECT_EQ(poll.as<Poll>().reg->addr, 0x300cu);
  const Command check = parse_one(dir, "reg_read_check(nvdla_sdp.s_pointer, 0x0);");
  EXPECT_STREQ(check.as<RegReadCheck>().reg->name, "S_POINTER");
}

TEST(TraceNames, FieldsInAnyCase) {
  TempDir dir;
  for (const std::string& line :
       {std::string("poll_field_equal(nvdla_sdp.s_status_0.status_1, 0x2);"),
        std::string("poll_field_equal(NVDLA_SDP.S_STATUS_0, status_1, 0x2);"),
        std::string("poll_field_equal(csb, nvdla_sdp.S_STATUS_0, Status_1, 0x2);")}) {
    const Command c = parse_one(dir, line);
    ASSERT_NE(c.as<Poll>().field, nullptr) << line;
    EXPECT_STREQ(c.as<Poll>().field->name, "STATUS_1") << line;
    EXPECT_EQ(c.as<Poll>().field->field.lsb, 16) << line;  // S_STATUS: STATUS_1 is bits 17:16
  }
}

TEST(TraceNames, InterruptsInAnyCaseKeepTheirWrittenName) {
  TempDir dir;
  // GLB S_INTR_STATUS: CDP 2/3, CDMA_DAT 16/17, CACC 20/21; PPU channels from bit 24.
  const std::pair<const char*, unsigned> cases[] = {
      {"cdma_dat_0", 16}, {"Cdma_Dat_1", 17}, {"cdp_1", 3}, {"cacc_0", 20}, {"ppu_2", 26}};
  for (const auto& [name, bit] : cases) {
    const Command c = parse_one(dir, std::string("intr_notify(") + name + ", sync_0);");
    EXPECT_EQ(c.as<IntrNotify>().interrupt.status_bit, bit) << name;
    EXPECT_EQ(c.as<IntrNotify>().interrupt.name, name);
  }
}

TEST(TraceNames, MemoriesAndPatternsInAnyCase) {
  TempDir dir;
  Command c = parse_one(dir, "mem_init(PRI_MEM, 0x0, 0x10, all_one);");
  EXPECT_EQ(c.as<MemInit>().pattern, MemPattern::kAllOne);
  c = parse_one(dir, "mem_init(Pri_Mem, 0x0, 0x10, Random, 0x5);");
  EXPECT_EQ(c.as<MemInit>().pattern, MemPattern::kRandom);
  EXPECT_EQ(c.as<MemInit>().seed, 5u);
  c = parse_one(dir, "check_crc(s, PRI_MEM, 0x0, 0x10, 0x0);");
  EXPECT_EQ(c.op, Op::kCheckCrc);
}

TEST(TraceNames, ErrorsShowTheNameAsWritten) {
  TempDir dir;
  EXPECT_NE(error_of(dir, "reg_write(nvdla_sdp.d_no_such_0, 1);")
                .find("unknown register 'nvdla_sdp.d_no_such_0'"),
            std::string::npos);
  EXPECT_NE(
      error_of(dir, "reg_write(nvdla_sdp_d_op_enable_0, 1);").find("'nvdla_sdp_d_op_enable_0'"),
      std::string::npos);
  EXPECT_NE(error_of(dir, "poll_field_equal(nvdla_sdp.s_status_0, status_7, 0);")
                .find("no field 'status_7'"),
            std::string::npos);
  EXPECT_NE(error_of(dir, "intr_notify(sdp_2, s);").find("unknown interrupt 'sdp_2'"),
            std::string::npos);
  EXPECT_NE(error_of(dir, "mem_init(Pri_Memory, 0x0, 0x10, ALL_ZERO);").find("'Pri_Memory'"),
            std::string::npos);
  EXPECT_NE(error_of(dir, "mem_init(pri_mem, 0x0, 0x10, all_two);").find("'all_two'"),
            std::string::npos);
}

TEST(TraceNames, NameKeyIsTheUpperCaseSpelling) {
  EXPECT_EQ(name_key("cdma_dat_0"), "CDMA_DAT_0");
  EXPECT_EQ(name_key("Nvdla_Sdp.D_Op_Enable_0"), "NVDLA_SDP.D_OP_ENABLE_0");
  EXPECT_EQ(name_key(""), "");
}

}  // namespace
}  // namespace octasim::trace::trace_names_test
