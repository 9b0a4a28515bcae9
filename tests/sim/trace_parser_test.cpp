// NVDLA trace (.cfg) and memory packet (.dat) parsing: every command form of NVDLA's
// verification guide (v2_verif_guide.rst, "Configuration File Format", "Memory Surface File
// Format"), and malformed input, which must give a TraceError "file:line: what was expected".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/trace/command_table.hpp"
#include "sim/trace/trace.hpp"
#include "sim_test_util.hpp"

namespace octasim::trace {
namespace {

using test::TempDir;

// Parses `text` as <dir>/t.cfg and expects a TraceError at `line` whose message starts with
// "<path>:<line>: " and contains `fragment`.
void expect_trace_error(const TempDir& dir, const std::string& text, int line,
                        const std::string& fragment) {
  const std::string path = (dir.path() / "t.cfg").string();
  try {
    (void)parse_trace(text, path);
    ADD_FAILURE() << "no TraceError for:\n" << text;
  } catch (const TraceError& e) {
    const std::string msg = e.what();
    const std::string prefix = path + ":" + std::to_string(line) + ": ";
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "want prefix '" << prefix << "', got: " << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << "want '" << fragment << "' in: " << msg;
    EXPECT_EQ(e.line(), line);
    EXPECT_EQ(e.file(), path);
  }
}

Command parse_one(const TempDir& dir, const std::string& line) {
  const Trace t = parse_trace(line, (dir.path() / "t.cfg").string());
  if (t.commands.size() != 1) {
    ADD_FAILURE() << "expected one command from: " << line;
    return Command{};
  }
  return t.commands[0];
}

void expect_dat_error(const TempDir& dir, const std::string& text, int line,
                      const std::string& fragment) {
  const std::string path = dir.write("bad.dat", text);
  try {
    (void)read_dat_file(path);
    ADD_FAILURE() << "no TraceError for:\n" << text;
  } catch (const TraceError& e) {
    const std::string msg = e.what();
    const std::string prefix = path + ":" + std::to_string(line) + ": ";
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "want prefix '" << prefix << "', got: " << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << "want '" << fragment << "' in: " << msg;
  }
}

TEST(TraceParser, RegWriteHexAndDecimal) {
  TempDir dir;
  const Command c = parse_one(dir, "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x1f);");
  EXPECT_EQ(c.op, Op::kRegWrite);
  ASSERT_NE(c.as<RegWrite>().reg, nullptr);
  EXPECT_EQ(c.as<RegWrite>().reg->addr, 0x903cu);
  EXPECT_EQ(c.as<RegWrite>().value, 0x1fu);
  EXPECT_EQ(c.line, 1);
  EXPECT_EQ(parse_one(dir, "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 42);").as<RegWrite>().value,
            42u);
  EXPECT_EQ(parse_one(dir, "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0XFF);").as<RegWrite>().value,
            0xffu);
  EXPECT_EQ(parse_one(dir, "reg_write(NVDLA_SDP.D_DST_BASE_ADDR_LOW_0, 0xffffffff);")
                .as<RegWrite>()
                .value,
            0xffffffffu);
  EXPECT_EQ(parse_one(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE, 1);").as<RegWrite>().reg->addr,
            0x9038u)
      << "register name without _0";
}

// NVDLA traces write hex as 0x.. and everything else in decimal: a leading zero is not octal.
TEST(TraceParser, LeadingZeroIsDecimalNotOctal) {
  TempDir dir;
  EXPECT_EQ(parse_one(dir, "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 010);").as<RegWrite>().value,
            10u);
  EXPECT_EQ(parse_one(dir, "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 09);").as<RegWrite>().value,
            9u);
  EXPECT_EQ(parse_one(dir, "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0);").as<RegWrite>().value,
            0u);
  EXPECT_EQ(
      parse_one(dir, "mem_init(pri_mem, 0x0, 18446744073709551615, ALL_ZERO);").as<MemInit>().size,
      ~std::uint64_t{0});
}

TEST(TraceParser, WhitespaceVariantsCommentsAndLineNumbers) {
  TempDir dir;
  const std::string text =
      "// header comment\n"
      "\n"
      "  reg_write ( NVDLA_SDP.D_OP_ENABLE_0 ,\t0x1 ) ;   \n"
      "\treg_write(NVDLA_GLB.S_INTR_MASK_0,0x0);// trailing comment\n"
      "   // indented comment\r\n"
      "reg_write(NVDLA_CDP.S_POINTER_0, 0x1);\r\n"
      "\r\n"
      "   \t  \n"
      "check_nothing(sync_0);";
  const Trace t = parse_trace(text, (dir.path() / "t.cfg").string());
  ASSERT_EQ(t.commands.size(), 4u);
  EXPECT_EQ(t.commands[0].line, 3);
  EXPECT_EQ(t.commands[0].as<RegWrite>().reg->addr, 0x9038u);
  EXPECT_EQ(t.commands[0].as<RegWrite>().value, 1u);
  EXPECT_EQ(t.commands[1].line, 4);
  EXPECT_EQ(t.commands[1].as<RegWrite>().reg->addr, 0x1004u);
  EXPECT_EQ(t.commands[2].line, 6);
  EXPECT_EQ(t.commands[2].as<RegWrite>().reg->addr, 0xd004u);
  EXPECT_EQ(t.commands[3].line, 9);
  EXPECT_EQ(t.commands[3].op, Op::kCheckNothing);
  EXPECT_EQ(t.commands[3].as<CheckNothing>().sync_id, "sync_0");
}

TEST(TraceParser, EmptyTraceHasNoCommands) {
  TempDir dir;
  EXPECT_TRUE(parse_trace("", "e.cfg").commands.empty());
  EXPECT_TRUE(parse_trace("// only\n\n  \n", "e.cfg").commands.empty());
}

TEST(TraceParser, RegReadAndReadChecks) {
  TempDir dir;
  Command c = parse_one(dir, "reg_read(NVDLA_SDP.S_STATUS_0, status_value);");
  EXPECT_EQ(c.op, Op::kRegRead);
  EXPECT_EQ(c.as<RegRead>().reg->addr, 0x9000u);
  EXPECT_EQ(c.as<RegRead>().target, "status_value");
  c = parse_one(dir, "reg_read_check(NVDLA_SDP.S_POINTER_0, 0x10000);");
  EXPECT_EQ(c.op, Op::kRegReadCheck);
  EXPECT_EQ(c.as<RegReadCheck>().reg->addr, 0x9004u);
  EXPECT_EQ(c.as<RegReadCheck>().value, 0x10000u);
  c = parse_one(dir, "reg_read_expected(NVDLA_SDP.S_POINTER_0, 1);");
  EXPECT_EQ(c.op, Op::kRegReadCheck);
  EXPECT_EQ(c.as<RegReadCheck>().value, 1u);
}

TEST(TraceParser, PollRegFormsAndComparisons) {
  TempDir dir;
  Command c = parse_one(dir, "poll_reg_equal(NVDLA_GLB.S_INTR_STATUS_0, 0x1);");
  EXPECT_EQ(c.op, Op::kPoll);
  EXPECT_EQ(c.as<Poll>().compare, Compare::kEqual);
  EXPECT_EQ(c.as<Poll>().reg->addr, 0x100cu);
  EXPECT_EQ(c.as<Poll>().field, nullptr);
  EXPECT_EQ(c.as<Poll>().value, 1u);
  // The guide's form with a target resource first.
  c = parse_one(dir, "poll_reg_equal(csb, NVDLA_GLB.S_INTR_STATUS_0, 0x2);");
  EXPECT_EQ(c.as<Poll>().reg->addr, 0x100cu);
  EXPECT_EQ(c.as<Poll>().value, 2u);

  const std::vector<std::pair<std::string, Compare>> forms = {{"equal", Compare::kEqual},
                                                              {"greater", Compare::kGreater},
                                                              {"less", Compare::kLess},
                                                              {"not_equal", Compare::kNotEqual},
                                                              {"not_greater", Compare::kNotGreater},
                                                              {"nt_greater", Compare::kNotGreater},
                                                              {"not_less", Compare::kNotLess}};
  for (const auto& [suffix, cmp] : forms) {
    EXPECT_EQ(
        parse_one(dir, "poll_reg_" + suffix + "(NVDLA_SDP.S_STATUS_0, 0);").as<Poll>().compare, cmp)
        << suffix;
    EXPECT_EQ(parse_one(dir, "poll_field_" + suffix + "(NVDLA_SDP.S_STATUS_0, STATUS_1, 0);")
                  .as<Poll>()
                  .compare,
              cmp)
        << suffix;
  }
}

TEST(TraceParser, PollFieldForms) {
  TempDir dir;
  for (const std::string& line :
       {std::string("poll_field_equal(NVDLA_SDP.S_STATUS_0.STATUS_1, 0x2);"),
        std::string("poll_field_equal(NVDLA_SDP.S_STATUS_0, STATUS_1, 0x2);"),
        std::string("poll_field_equal(csb, NVDLA_SDP.S_STATUS_0, STATUS_1, 0x2);")}) {
    const Command c = parse_one(dir, line);
    EXPECT_EQ(c.op, Op::kPoll) << line;
    ASSERT_NE(c.as<Poll>().reg, nullptr) << line;
    EXPECT_EQ(c.as<Poll>().reg->addr, 0x9000u) << line;
    ASSERT_NE(c.as<Poll>().field, nullptr) << line;
    EXPECT_STREQ(c.as<Poll>().field->name, "STATUS_1");
    EXPECT_EQ(c.as<Poll>().field->field.lsb, 16);
    EXPECT_EQ(c.as<Poll>().field->field.width, 2);
    EXPECT_EQ(c.as<Poll>().value, 2u) << line;
  }
}

TEST(TraceParser, MemInitForms) {
  TempDir dir;
  Command c = parse_one(dir, "mem_init(pri_mem, 0x80000c00, 0x800, ALL_ZERO);");
  EXPECT_EQ(c.op, Op::kMemInit);
  EXPECT_EQ(c.as<MemInit>().addr, 0x80000c00u);
  EXPECT_EQ(c.as<MemInit>().size, 0x800u);
  EXPECT_EQ(c.as<MemInit>().pattern, MemPattern::kAllZero);
  c = parse_one(dir, "mem_init(1, 16, 32, ALL_ONE);");
  EXPECT_EQ(c.as<MemInit>().addr, 16u);
  EXPECT_EQ(c.as<MemInit>().size, 32u);
  EXPECT_EQ(c.as<MemInit>().pattern, MemPattern::kAllOne);
  c = parse_one(dir, "mem_init(pri_mem, 0x0, 0x10, RANDOM);");
  EXPECT_EQ(c.as<MemInit>().pattern, MemPattern::kRandom);
  c = parse_one(dir, "mem_init(pri_mem, 0x0, 0x10, RANDOM, 0x1234);");
  EXPECT_EQ(c.as<MemInit>().pattern, MemPattern::kRandom);
  EXPECT_EQ(c.as<MemInit>().seed, 0x1234u);
  c = parse_one(dir, "mem_init(pri_mem, 0x100000000, 0x10, ALL_ZERO);");
  EXPECT_EQ(c.as<MemInit>().addr, 0x100000000u)
      << "64-bit addresses parse; range is checked when played";
}

TEST(TraceParser, MemLoadResolvesQuotedPathAgainstTraceDirectory) {
  TempDir dir;
  dir.write("in.dat", "{offset:0x0, size:1, payload:0x01}\n");
  dir.write("sub/b, c.dat", "{offset:0x0, size:1, payload:0x02}\n");
  const std::string trace_path = dir.write("t.cfg",
                                           "mem_load(pri_mem, 0x80000000, \"in.dat\");\n"
                                           "mem_load(1, 0x10, \"sub/b, c.dat\");\n" +
                                               std::string("mem_load(pri_mem, 0x0, \"") +
                                               (dir.path() / "in.dat").string() + "\");\n");
  const Trace t = parse_trace_file(trace_path);
  ASSERT_EQ(t.commands.size(), 3u);
  EXPECT_EQ(t.path, trace_path);
  EXPECT_EQ(t.commands[0].op, Op::kMemLoad);
  EXPECT_EQ(t.commands[0].as<MemLoad>().addr, 0x80000000u);
  EXPECT_TRUE(std::filesystem::equivalent(t.commands[0].as<MemLoad>().path, dir.path() / "in.dat"))
      << t.commands[0].as<MemLoad>().path;
  EXPECT_TRUE(std::filesystem::equivalent(t.commands[1].as<MemLoad>().path,
                                          dir.path() / "sub" / "b, c.dat"))
      << t.commands[1].as<MemLoad>().path;
  EXPECT_TRUE(std::filesystem::equivalent(t.commands[2].as<MemLoad>().path, dir.path() / "in.dat"));
}

TEST(TraceParser, InterruptNamesMapToGlbStatusBits) {
  TempDir dir;
  // GLB S_INTR_STATUS: SDP 0/1, CDP 2/3, PDP 4/5, BDMA 6/7, RUBIK 8/9, CDMA_DAT 16/17,
  // CDMA_WT 18/19, CACC 20/21.
  const std::vector<std::pair<std::string, unsigned>> names = {
      {"SDP_0", 0},      {"SDP_1", 1},      {"CDP_0", 2},       {"CDP_1", 3},
      {"PDP_0", 4},      {"PDP_1", 5},      {"BDMA_0", 6},      {"BDMA_1", 7},
      {"RUBIK_0", 8},    {"RUBIK_1", 9},    {"CDMA_DAT_0", 16}, {"CDMA_DAT_1", 17},
      {"CDMA_WT_0", 18}, {"CDMA_WT_1", 19}, {"CACC_0", 20},     {"CACC_1", 21}};
  for (const auto& [name, bit] : names) {
    const Command c = parse_one(dir, "intr_notify(" + name + ", sync_id_0);");
    EXPECT_EQ(c.op, Op::kIntrNotify);
    EXPECT_EQ(c.as<IntrNotify>().interrupt.name, name);
    EXPECT_EQ(c.as<IntrNotify>().interrupt.status_bit, bit) << name;
    EXPECT_EQ(c.as<IntrNotify>().sync_id, "sync_id_0");
  }
}

TEST(TraceParser, PpuInterruptsAreGlbBits24To27) {
  TempDir dir;
  for (unsigned ch = 0; ch < 4; ++ch) {
    const std::string name = "PPU_" + std::to_string(ch);
    const Command c = parse_one(dir, "intr_notify(" + name + ", s);");
    EXPECT_EQ(c.as<IntrNotify>().interrupt.status_bit, 24 + ch) << name;
  }
  expect_trace_error(dir, "intr_notify(PPU_4, s);", 1, "unknown interrupt 'PPU_4'");
  expect_trace_error(dir, "intr_notify(SDP_2, s);", 1, "unknown interrupt 'SDP_2'");
}

TEST(TraceParser, PpuSubmitForm) {
  TempDir dir;
  dir.write("pb.dat", "{offset:0x0, size:4, payload:0x00 0x00 0x00 0x07}\n");
  const Command c = parse_one(dir, "ppu_submit(1, pri_mem, 0x80001000, \"pb.dat\");");
  EXPECT_EQ(c.op, Op::kPpuSubmit);
  EXPECT_EQ(c.as<PpuSubmit>().channel, 1u);
  EXPECT_EQ(c.as<PpuSubmit>().addr, 0x80001000u);
  EXPECT_EQ(c.as<PpuSubmit>().path, (dir.path() / "pb.dat").string());
  expect_trace_error(dir, "ppu_submit(4, pri_mem, 0x1000, \"pb.dat\");", 1,
                     "PPU channel 4 does not exist");
  expect_trace_error(dir, "ppu_submit(0, pri_mem, 0x1002, \"pb.dat\");", 1, "not 4-byte aligned");
  expect_trace_error(dir, "ppu_submit(0, pri_mem, 0x1000);", 1, "ppu_submit expects 4 arguments");
  expect_trace_error(dir, "ppu_submit(0, pri_mem, 0x1000, \"none.dat\");", 1, "not found");
}

TEST(TraceParser, CheckFileToleranceRules) {
  TempDir dir;
  dir.write("g.dat", "{offset:0x0, size:4, payload:0x00 0x00 0x80 0x3f}\n");
  const Command c =
      parse_one(dir, "check_file(s, pri_mem, 0x1000, 8, \"g.dat\", FP32_TOL, 1e-6, 0.001);");
  EXPECT_EQ(c.as<CheckFile>().file_compare, FileCompare::kFp32Tol);
  EXPECT_DOUBLE_EQ(c.as<CheckFile>().abs_tol, 1e-6);
  EXPECT_DOUBLE_EQ(c.as<CheckFile>().rel_tol, 0.001);
  const Command h = parse_one(dir, "check_file(s, pri_mem, 0x1000, 2, \"g.dat\", FP16_TOL, 0, 0);");
  EXPECT_EQ(h.as<CheckFile>().file_compare, FileCompare::kFp16Tol);
  expect_trace_error(dir, "check_file(s, pri_mem, 0x1000, 6, \"g.dat\", FP32_TOL, 0, 0);", 1,
                     "multiples of 4");
  expect_trace_error(dir, "check_file(s, pri_mem, 0x1000, 8, \"g.dat\", FP32_TOL, -1, 0);", 1,
                     "expected abs_tol (a non-negative number)");
  expect_trace_error(dir, "check_file(s, pri_mem, 0x1000, 8, \"g.dat\", FP32_TOL, 0);", 1,
                     "expects 5, 6, 8 or 9 arguments");
  expect_trace_error(dir, "check_file(s, pri_mem, 0x1000, 8, \"g.dat\", FP64_TOL, 0, 0);", 1,
                     "unknown check_file comparison 'FP64_TOL'");
}

TEST(TraceParser, SyncAndChecks) {
  TempDir dir;
  dir.write("golden.dat", "{offset:0x0, size:1, payload:0x01}\n");
  const Trace t = parse_trace(
      "sync_notify(CACC, s1);\n"
      "sync_wait(CMAC_A, s1);\n"
      "check_crc(sync_id_0, 1, 0x80000020, 0x800, 0xf1e8ba9e);\n"
      "check_file(sync_id_0, pri_mem, 0x80000020, 0x10, \"golden.dat\");\n"
      "check_nothing(sync_id_0);\n",
      (dir.path() / "t.cfg").string());
  ASSERT_EQ(t.commands.size(), 5u);
  EXPECT_EQ(t.commands[0].op, Op::kSyncNotify);
  EXPECT_EQ(t.commands[0].as<SyncNotify>().target, "CACC");
  EXPECT_EQ(t.commands[0].as<SyncNotify>().sync_id, "s1");
  EXPECT_EQ(t.commands[1].op, Op::kSyncWait);
  EXPECT_EQ(t.commands[1].as<SyncWait>().target, "CMAC_A");
  const Command& crc = t.commands[2];
  EXPECT_EQ(crc.op, Op::kCheckCrc);
  EXPECT_EQ(crc.as<CheckCrc>().sync_id, "sync_id_0");
  EXPECT_EQ(crc.as<CheckCrc>().addr, 0x80000020u);
  EXPECT_EQ(crc.as<CheckCrc>().size, 0x800u);
  EXPECT_EQ(crc.as<CheckCrc>().crc, 0xf1e8ba9eu);
  EXPECT_EQ(t.commands[3].op, Op::kCheckFile);
  EXPECT_EQ(t.commands[3].as<CheckFile>().size, 0x10u);
  EXPECT_TRUE(
      std::filesystem::equivalent(t.commands[3].as<CheckFile>().path, dir.path() / "golden.dat"));
  EXPECT_EQ(t.commands[4].op, Op::kCheckNothing);
}

// `line` without its last argument: "f(a, b);" -> "f(a);", "f(a);" -> "f();".
std::string without_last_argument(const std::string& line) {
  const auto open = line.find('(');
  const auto close = line.rfind(')');
  std::size_t cut = open + 1;
  bool quoted = false;
  for (std::size_t i = open + 1; i < close; ++i) {
    if (line[i] == '"') quoted = !quoted;
    if (line[i] == ',' && !quoted) cut = i;
  }
  return line.substr(0, cut) + line.substr(close);
}

// Every row of the command table: each spelling's example parses into that row's command, and
// without its last argument is rejected with an error naming the command. A new row is covered
// as soon as it is added.
TEST(CommandTable, EveryCommandParsesItsExampleAndRejectsAMissingArgument) {
  TempDir dir;
  dir.write("data.dat", "{offset:0x0, size:4, payload:0x00 0x00 0x00 0x00}\n");
  const std::string path = (dir.path() / "t.cfg").string();
  for (std::size_t row = 0; row < kCommands.size(); ++row) {
    const CommandSpec& spec = kCommands[row];
    EXPECT_EQ(static_cast<std::size_t>(spec.op), row) << spec.name;
    EXPECT_STREQ(op_name(spec.op), spec.name);
    ASSERT_FALSE(spec.spellings[0].empty()) << spec.name << " has no spelling";
    for (std::size_t k = 0; k < spec.spellings.size(); ++k) {
      const std::string spelling(spec.spellings[k]);
      const std::string example(spec.examples[k]);
      if (spelling.empty()) {
        EXPECT_TRUE(example.empty()) << spec.name << ": an example without a spelling";
        continue;
      }
      ASSERT_FALSE(example.empty()) << spelling << " has no example";
      const std::string name = example.substr(0, example.find('('));
      EXPECT_EQ(find_command(name), &spec) << example;
      if (spelling.back() == '*') {
        EXPECT_EQ(name.rfind(spelling.substr(0, spelling.size() - 1), 0), 0u) << example;
      } else {
        EXPECT_EQ(name, spelling) << example;
      }
      try {
        const Trace t = parse_trace(example, path);
        ASSERT_EQ(t.commands.size(), 1u) << example;
        EXPECT_EQ(t.commands[0].op, spec.op) << example;
        EXPECT_EQ(t.commands[0].args.index(), row) << example;
        EXPECT_EQ(t.commands[0].line, 1) << example;
      } catch (const TraceError& e) {
        ADD_FAILURE() << example << ": " << e.what();
      }
      const std::string broken = without_last_argument(example);
      ASSERT_NE(broken, example);
      expect_trace_error(dir, broken, 1, name);
    }
  }
}

TEST(CommandTable, UnknownCommandNameIsRejectedAsBefore) {
  TempDir dir;
  const std::string path = (dir.path() / "t.cfg").string();
  EXPECT_EQ(find_command("frobnicate"), nullptr);
  EXPECT_EQ(find_command("poll"), nullptr);
  EXPECT_EQ(find_command(""), nullptr);
  try {
    (void)parse_trace("reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1);\nfrobnicate(1, 2);\n", path);
    ADD_FAILURE() << "no TraceError";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":2: unknown command 'frobnicate'");
  }
  expect_trace_error(dir, "poll(NVDLA_SDP.S_STATUS_0, 0);", 1, "unknown command 'poll'");
}

TEST(TraceParser, MalformedLineStructure) {
  TempDir dir;
  expect_trace_error(dir, "reg_write NVDLA_SDP.D_OP_ENABLE_0, 1;", 1, "command(arguments)");
  expect_trace_error(dir, "// c\nreg_write(NVDLA_SDP.D_OP_ENABLE_0, 1;", 2, "command(arguments)");
  expect_trace_error(dir, "reg_write)NVDLA_SDP.D_OP_ENABLE_0, 1(;", 1, "command(arguments)");
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1); extra", 1, "extra");
  expect_trace_error(dir, "garbage", 1, "command(arguments)");
  expect_trace_error(dir, "(1, 2);", 1, "unknown command");
}

TEST(TraceParser, UnknownCommand) {
  TempDir dir;
  expect_trace_error(dir, "\n\nreg_writ(NVDLA_SDP.D_OP_ENABLE_0, 1);", 3, "reg_writ");
  expect_trace_error(dir, "REG_WRITE(NVDLA_SDP.D_OP_ENABLE_0, 1);", 1, "unknown command");
}

TEST(TraceParser, WrongArgumentCounts) {
  TempDir dir;
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE_0);", 1, "expects 2 arguments");
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1, 2);", 1, "expects 2 arguments");
  expect_trace_error(dir, "reg_read_check(NVDLA_SDP.D_OP_ENABLE_0);", 1, "expects 2");
  expect_trace_error(dir, "poll_reg_equal(NVDLA_SDP.S_STATUS_0);", 1, "1 arguments");
  expect_trace_error(dir, "poll_field_equal(a, b, NVDLA_SDP.S_STATUS_0, STATUS_0, 0);", 1,
                     "5 arguments");
  expect_trace_error(dir, "mem_init(pri_mem, 0x0, 0x10);", 1, "mem_init takes");
  expect_trace_error(dir, "mem_load(pri_mem, 0x0);", 1, "expects 3");
  expect_trace_error(dir, "intr_notify(SDP_0);", 1, "expects 2");
  expect_trace_error(dir, "check_crc(s, 1, 0x0, 0x10);", 1, "expects 5");
  expect_trace_error(dir, "check_nothing();", 1, "expects 1");
  expect_trace_error(dir, "sync_wait(s);", 1, "expects 2");
}

TEST(TraceParser, UnknownRegisterFieldInterruptComparison) {
  TempDir dir;
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_NO_SUCH_0, 1);", 1, "NVDLA_SDP.D_NO_SUCH_0");
  expect_trace_error(dir, "reg_write(NVDLA_XYZ.D_OP_ENABLE_0, 1);", 1, "unknown register");
  expect_trace_error(dir, "reg_write(SDP.D_OP_ENABLE_0, 1);", 1, "NVDLA_UNIT.REGISTER_0");
  expect_trace_error(dir, "reg_write(NVDLA_SDP_D_OP_ENABLE_0, 1);", 1, "NVDLA_UNIT.REGISTER_0");
  expect_trace_error(dir, "reg_write(, 1);", 1, "NVDLA_UNIT.REGISTER_0");
  expect_trace_error(dir, "poll_field_equal(NVDLA_SDP.S_STATUS_0, STATUS_7, 0);", 1, "STATUS_7");
  expect_trace_error(dir, "poll_field_equal(NVDLA_SDP.S_STATUS_0, 0);", 1, "FIELD");
  expect_trace_error(dir, "poll_reg_bigger(NVDLA_SDP.S_STATUS_0, 0);", 1, "poll_reg_bigger");
  expect_trace_error(dir, "intr_notify(SDP_2, s);", 1, "SDP_2");
  expect_trace_error(dir, "intr_notify(FOO_0, s);", 1, "unknown interrupt");
  expect_trace_error(dir, "intr_notify(SDP, s);", 1, "unknown interrupt");
  expect_trace_error(dir, "intr_notify(_0, s);", 1, "unknown interrupt");
}

TEST(TraceParser, BadNumbers) {
  TempDir dir;
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x100000000);", 1, "32 bits");
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 4294967296);", 1, "32 bits");
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE_0, -1);", 1, "'-1'");
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1g);", 1, "'0x1g'");
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE_0, one);", 1, "a number");
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE_0, );", 1, "a number");
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x);", 1, "a number");
  expect_trace_error(dir, "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1 2);", 1, "a number");
  expect_trace_error(dir, "mem_init(pri_mem, -0x10, 0x10, ALL_ZERO);", 1, "address");
  expect_trace_error(dir, "mem_init(pri_mem, 0x0, 0x1ffffffffffffffff, ALL_ZERO);", 1, "size");
  expect_trace_error(dir, "check_crc(s, 1, 0x0, 0x10, 0x1ffffffff);", 1, "32 bits");
  expect_trace_error(dir, "mem_init(pri_mem, 0x0, 0x10, RANDOM, -3);", 1, "seed");
  expect_trace_error(dir, "mem_init(pri_mem, 0x0, 18446744073709551616, ALL_ZERO);", 1, "size");
  expect_trace_error(dir, "mem_init(pri_mem, 0x-10, 0x10, ALL_ZERO);", 1, "address");
  expect_trace_error(dir, "mem_init(pri_mem, +16, 0x10, ALL_ZERO);", 1, "address");
}

TEST(TraceParser, BadMemoryPatternAndIdentifiers) {
  TempDir dir;
  // sec_mem (the CV-SRAM) parses; whether the configuration has one is checked when it plays.
  expect_trace_error(dir, "mem_init(sram, 0x0, 0x10, ALL_ZERO);", 1, "unknown memory 'sram'");
  expect_trace_error(dir, "ppu_submit(0, sec_mem, 0x0, \"x.dat\");", 1, "DRAM (pri_mem)");
  expect_trace_error(dir, "mem_init(pri_mem, 0x0, 0x10, ALL_TWO);", 1, "ALL_TWO");
  expect_trace_error(dir, "mem_init(pri_mem, 0x0, 0x10, ALL_ZERO, 5);", 1, "RANDOM");
  expect_trace_error(dir, "check_nothing(sync-0);", 1, "sync-0");
  expect_trace_error(dir, "sync_notify(, s);", 1, "target");
  expect_trace_error(dir, "check_crc(s, 2, 0x0, 0x10, 0x0);", 1, "unknown memory");
}

TEST(TraceParser, DataFileMustBeQuotedAndExist) {
  TempDir dir;
  expect_trace_error(dir, "mem_load(pri_mem, 0x0, in.dat);", 1, "quoted");
  expect_trace_error(dir, "mem_load(pri_mem, 0x0, \"in.dat);", 1, "quoted");
  expect_trace_error(dir, "\nmem_load(pri_mem, 0x0, \"missing.dat\");", 2, "missing.dat");
  expect_trace_error(dir, "check_file(s, 1, 0x0, 0x10, \"golden.dat\");", 1, "not found");
}

// "//" inside a quoted file name (a valid POSIX path) does not start a comment.
TEST(TraceParser, DoubleSlashInsideQuotedPathIsNotAComment) {
  TempDir dir;
  dir.write("sub/in.dat", "{offset:0x0, size:1, payload:0x01}\n");
  const Command c = parse_one(dir, "mem_load(pri_mem, 0x0, \"sub//in.dat\");");
  EXPECT_TRUE(std::filesystem::equivalent(c.as<MemLoad>().path, dir.path() / "sub" / "in.dat"));
  const Command d =
      parse_one(dir, "mem_load(pri_mem, 0x0, \"sub//in.dat\"); // load \"in.dat\" // twice");
  EXPECT_TRUE(std::filesystem::equivalent(d.as<MemLoad>().path, dir.path() / "sub" / "in.dat"));
}

TEST(TraceParser, FirstErrorWins) {
  TempDir dir;
  expect_trace_error(dir,
                     "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1);\n"
                     "reg_write(NVDLA_SDP.D_NOPE_0, 1);\n"
                     "bogus;\n",
                     2, "D_NOPE_0");
}

TEST(TraceParser, MissingTraceFileNamesIt) {
  TempDir dir;
  const std::string path = (dir.path() / "absent.cfg").string();
  try {
    (void)parse_trace_file(path);
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(DatFile, PacketsAsInTheVerificationGuide) {
  TempDir dir;
  const std::string path = dir.write("in.dat",
                                     "{\n"
                                     "\n"
                                     "{offset:0x20, size:4, payload:0x00 0x10 0x20 0x30} ,\n"
                                     "// a comment line\n"
                                     "  {offset:0x60, size:2, payload:0xFF 0X7f}\n"
                                     ",\n"
                                     "{offset:96, size:0, payload:}\n"
                                     "}\n");
  const std::vector<DatPacket> p = read_dat_file(path);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].offset, 0x20u);
  EXPECT_EQ(p[0].payload, (std::vector<std::uint8_t>{0x00, 0x10, 0x20, 0x30}));
  EXPECT_EQ(p[1].offset, 0x60u);
  EXPECT_EQ(p[1].payload, (std::vector<std::uint8_t>{0xff, 0x7f}));
  EXPECT_EQ(p[2].offset, 96u);
  EXPECT_TRUE(p[2].payload.empty());
}

TEST(DatFile, MalformedPackets) {
  TempDir dir;
  expect_dat_error(dir, "{\n{offset:0x0, size:4, payload:0x01 0x02 0x03}\n}\n", 2, "size:4");
  expect_dat_error(dir, "{offset:0x0, size:1, payload:0x01 0x02}\n", 1, "carries 2");
  expect_dat_error(dir, "{offset:0x0, size:2, payload:0x01 0x1g}\n", 1, "'0x1g'");
  expect_dat_error(dir, "{offset:0x0, size:1, payload:0x100}\n", 1, "'0x100'");
  expect_dat_error(dir, "{offset:0x0, size:1, payload:ff}\n", 1, "'ff'");
  expect_dat_error(dir, "{offset:0x0, size:1, payload:0x}\n", 1, "'0x'");
  expect_dat_error(dir, "{offset:0x0, size:1, payload:-0x1}\n", 1, "payload byte");
  expect_dat_error(dir, "{size:1, payload:0x01}\n", 1, "offset");
  expect_dat_error(dir, "{offset:0x0, payload:0x01}\n", 1, "expected {offset");
  expect_dat_error(dir, "{offset:0x0, size:1}\n", 1, "expected {offset");
  expect_dat_error(dir, "{offset:0x0, size:1, payload:0x01\n", 1, "expected {offset");
  expect_dat_error(dir, "{offset:zz, size:1, payload:0x01}\n", 1, "bad offset");
  expect_dat_error(dir, "{offset:0x0, size:, payload:0x01}\n", 1, "bad size");
  expect_dat_error(dir, "offset 0 size 1\n", 1, "expected {offset");
}

// A negative offset is an error, not a wrap to 2^64 - 16 (strtoull accepted the minus sign).
TEST(DatFile, NegativeOffsetIsAnError) {
  TempDir dir;
  expect_dat_error(dir, "{offset:-0x10, size:1, payload:0x01}\n", 1, "offset");
  expect_dat_error(dir, "{offset:0x0, size:-1, payload:0x01}\n", 1, "size");
  expect_dat_error(dir, "{offset:0x10000000000000000, size:1, payload:0x01}\n", 1, "offset");
  expect_dat_error(dir, "{offset:0x0 0x8, size:1, payload:0x01}\n", 1, "offset");
}

// Every packet of a line is read (NVDLA's guide only keeps one packet from spanning lines); a
// second packet on the line is not silently dropped.
TEST(DatFile, SecondPacketOnALineIsNotDropped) {
  TempDir dir;
  const std::string path = dir.write(
      "two.dat", "{offset:0x0, size:1, payload:0x01}, {offset:0x8, size:1, payload:0x02}\n");
  try {
    const auto p = read_dat_file(path);
    EXPECT_EQ(p.size(), 2u) << "second packet dropped without an error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":1:"), std::string::npos) << e.what();
  }
}

TEST(DatFile, SeveralPacketsBracesAndCommentsOnOneLine) {
  TempDir dir;
  const std::string path = dir.write(
      "many.dat",
      "{ {offset:0x0, size:1, payload:0x01},{offset:010, size:2, payload:0x02 0x03} // c {x}\n"
      "{offset:0x20, size:1, payload:0xaa} }\n");
  const std::vector<DatPacket> p = read_dat_file(path);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].offset, 0x0u);
  EXPECT_EQ(p[1].offset, 10u) << "decimal, not octal";
  EXPECT_EQ(p[1].payload, (std::vector<std::uint8_t>{0x02, 0x03}));
  EXPECT_EQ(p[2].offset, 0x20u);
  expect_dat_error(dir, "{offset:0x0, size:1, payload:0x01} junk\n", 1, "'junk'");
  expect_dat_error(dir, "{\n{offset:0x0, size:1, payload:0x01} {offset:0x1, size:1}\n", 2,
                   "expected {offset");
}

TEST(DatFile, MissingFileNamesIt) {
  TempDir dir;
  const std::string path = (dir.path() / "absent.dat").string();
  try {
    (void)read_dat_file(path);
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace octasim::trace
