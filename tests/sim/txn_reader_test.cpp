// NVDLA's first-release trace-player format (input.txn): the reader's commands, the v1 address
// map (expected registers from NVDLA's opendla_initial.h and the traces' own comments), the v1
// data files, malformed input (one TraceError "file:line: what was expected") and playing on
// the functional device (nv_full).
#include "sim/trace/txn_reader.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/txn_data.hpp"
#include "sim_test_util.hpp"

// A namespace of its own: the unity build compiles this file with its target's others.
namespace octasim::trace::txn_reader_test {
namespace {

using test::TempDir;

std::string name_of(const regs::RegisterInfo* r) {
  return r == nullptr ? "(none)" : std::string(r->unit) + "." + r->name;
}

// Expects `fn` to throw a TraceError whose message starts with `prefix` and contains `fragment`.
template <class Fn>
void expect_error(Fn fn, const std::string& prefix, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "no TraceError (want '" << prefix << "... " << fragment << "')";
  } catch (const TraceError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "want prefix '" << prefix << "', got: " << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << "want '" << fragment << "' in: " << msg;
  }
}

// Parses `text` as <dir>/t.txn and expects an error at `line`.
void expect_txn_error(const TempDir& dir, const std::string& text, int line,
                      const std::string& fragment, TxnOptions options = {}) {
  const std::string path = (dir.path() / "t.txn").string();
  expect_error([&] { (void)parse_txn(text, path, options); },
               path + ":" + std::to_string(line) + ": ", fragment);
}

std::string hex_byte(unsigned v) {
  static const char* const kDigits = "0123456789abcdef";
  return std::string("0x") + kDigits[(v >> 4) & 0xf] + kDigits[v & 0xf];
}

// Bytes 0x00, 0x01, ... as lines of 16.
std::string byte_lines(unsigned bytes, unsigned first = 0) {
  std::string s;
  for (unsigned i = 0; i < bytes; ++i) s += hex_byte(first + i) + (i % 16 == 15 ? "\n" : " ");
  return s + "\n";
}

// A v1 surface file: header lines, then `bytes` bytes.
std::string surface_text(unsigned bytes, const std::string& data_size = "0x20") {
  return "# dumped @ 2017\nW = 8\nData_size = " + data_size +
         " #bytes\nPrecision=INT16\n#2D data dump\n" + byte_lines(bytes);
}

// A v1 dump of `bytes` bytes at `start`, starting at value `first`.
std::string dump_text(const std::string& start, const std::string& size, unsigned bytes,
                      unsigned first = 0) {
  return "dumped memory,start_address=" + start + " size=" + size +
         "\nmemory type:dram\n==============================\n\n " + byte_lines(bytes, first) +
         "\n====================\ndump done\n";
}

TEST(TxnAddressMap, V1UnitsMapToOctasimsRegisters) {
  // The README's example and NVDLA's opendla_initial.h (BASE_ADDRESS_NVDLA_GLB 0x0, BDMA 0x4000,
  // CDMA 0x5000, PDP 0xd000 ...), each register at the same offset of its unit.
  EXPECT_EQ(name_of(v1_register(0xa00c)), "SDP_RDMA.D_DATA_CUBE_WIDTH");
  EXPECT_EQ(name_of(v1_register(0x000c)), "GLB.S_INTR_STATUS");
  EXPECT_EQ(name_of(v1_register(0x4000)), "BDMA.CFG_SRC_ADDR_LOW");
  EXPECT_EQ(name_of(v1_register(0x402c)), "BDMA.CFG_DST_SURF");
  EXPECT_EQ(name_of(v1_register(0x5014)), "CDMA.D_MISC_CFG");
  EXPECT_EQ(name_of(v1_register(0xd084)), "PDP.D_DATA_FORMAT");
  EXPECT_EQ(name_of(v1_register(0xc018)), "PDP_RDMA.D_FLYING_MODE");
  EXPECT_EQ(name_of(v1_register(0xb038)), "SDP.D_OP_ENABLE");
  // No v1 unit at 0x1000; no register at the end of a unit's window.
  EXPECT_EQ(v1_register(0x1000), nullptr);
  EXPECT_EQ(v1_register(0xaffc), nullptr);
  EXPECT_EQ(v1_register(0x20000), nullptr);
}

TEST(TxnReader, CommandsOfEachLine) {
  TempDir dir;
  dir.write("in.dat", surface_text(0x30));
  dir.write("out.dat", dump_text("0x80000000", "0x10", 0x10));
  TxnOptions o;
  o.poll_reads = 77;
  const Trace t = parse_txn(
      "# load_mem(addr, offset, file)\n"
      "load_mem 0x80000000 0x20 in.dat #comment\n"
      "write_reg 0xffff2803 0x7 #NVDLA_SDP_RDMA.D_DATA_CUBE_WIDTH_0\n"
      "read_reg 0xffff2803 0x00001fff 0x00000007 #NVDLA_SDP_RDMA.D_DATA_CUBE_WIDTH_0\n"
      "wait\n"
      "read_reg 0xffff0003 0x00000001 0x00000001 #GLB.S_INTR_STATUS_0.SDP_DONE_STATUS0\n"
      "write_reg 0xffff0003 0xffffffff #clear\n"
      "read_reg 0xffff0003 0x00000001 0x00000000 #cleared\n"
      "\n"
      "dump_mem 0x80000000 0x10 out.dat\n",
      (dir.path() / "t.txn").string(), o);
  ASSERT_EQ(t.commands.size(), 8u);
  const auto& load = t.commands[0].as<MemLoad>();
  EXPECT_EQ(t.commands[0].line, 2);
  EXPECT_EQ(load.addr, 0x80000000u);
  EXPECT_EQ(load.size, 0x20u);
  EXPECT_EQ(load.format, DataFormat::kV1Surface);
  const auto& write = t.commands[1].as<RegWrite>();
  EXPECT_EQ(name_of(write.reg), "SDP_RDMA.D_DATA_CUBE_WIDTH");
  EXPECT_EQ(write.value, 7u);
  EXPECT_TRUE(write.timed);
  const auto& check = t.commands[2].as<RegReadCheck>();
  EXPECT_EQ(check.mask, 0x1fffu);
  EXPECT_EQ(check.value, 7u);
  const auto& wait = t.commands[3].as<Poll>();
  EXPECT_EQ(name_of(wait.reg), "GLB.S_INTR_STATUS");
  EXPECT_EQ(wait.compare, Compare::kNotEqual);
  EXPECT_EQ(wait.value, 0u);
  EXPECT_TRUE(wait.interrupt_wait);
  EXPECT_EQ(wait.max_reads, 77u);
  const auto& poll = t.commands[4].as<Poll>();
  EXPECT_EQ(poll.compare, Compare::kEqual);
  EXPECT_EQ(poll.mask, 1u);
  EXPECT_EQ(poll.value, 1u);
  EXPECT_TRUE(poll.interrupt_wait);
  EXPECT_EQ(poll.max_reads, 77u);
  EXPECT_FALSE(t.commands[5].as<RegWrite>().timed);  // an interrupt clear
  EXPECT_FALSE(t.commands[6].as<Poll>().interrupt_wait);
  const auto& dump = t.commands[7].as<CheckFile>();
  EXPECT_EQ(t.commands[7].line, 10);
  EXPECT_EQ(dump.format, DataFormat::kV1Dump);
  EXPECT_EQ(dump.addr, 0x80000000u);
  EXPECT_EQ(dump.size, 0x10u);
  EXPECT_TRUE(dump.sync_id.empty());
}

TEST(TxnReader, MalformedLinesAreErrorsWithFileAndLine) {
  TempDir dir;
  expect_txn_error(dir, "write_reg 0xffff2803 0x7\nwrite_reg 0xffff2803\n", 2,
                   "write_reg expects 2 arguments: write_reg ADDR DATA; got 1");
  expect_txn_error(dir, "read_reg 0xffff2803 0x1fff\n", 1, "read_reg expects 3 arguments");
  expect_txn_error(dir, "write_reg 0xffff2803 0xzz\n", 1, "bad register value '0xzz'");
  expect_txn_error(dir, "write_reg 0xffff2803 -1\n", 1, "bad register value '-1'");
  expect_txn_error(dir, "write_reg 0xffff2803 0x100000000\n", 1, "does not fit in 32 bits");
  expect_txn_error(dir, "poke 0xffff2803 0x1\n", 1, "unknown command 'poke'");
  expect_txn_error(dir, "wait 5\n", 1, "wait expects 0 arguments");
  expect_txn_error(dir, "read_reg 0xffff2803 0x1 0x3\n", 1,
                   "expected value 0x00000003 has bits outside the mask 0x00000001");
  expect_txn_error(dir, "load_mem 0x80000000 0x20\n", 1, "load_mem expects 3 arguments");
  expect_txn_error(dir, "dump_mem 0x80000000 0x20 out.dat extra\n", 1,
                   "dump_mem expects 3 arguments");
}

TEST(TxnReader, AddressWithoutTheV1PrefixOrRegisterIsAnError) {
  TempDir dir;
  // The byte address, the word address without the prefix, another prefix.
  for (const char* addr : {"0xa00c", "0x2803", "0xfffe2803", "0x1ffff2803"}) {
    expect_txn_error(dir, std::string("write_reg ") + addr + " 0x1\n", 1,
                     "expected a CSB word address with the v1 bus's 0xffff prefix");
  }
  expect_txn_error(
      dir, "write_reg 0xffff0400 0x1\n", 1,
      "no NVDLA register at '0xffff0400' (CSB byte address 0x1000 of the nvdlav1 map)");
}

TEST(TxnReader, MissingAndTruncatedDataFilesAreErrors) {
  TempDir dir;
  const std::string dat = dir.write("short.dat", surface_text(0x18, "0x18"));
  expect_txn_error(dir, "\nload_mem 0x80000000 0x20 none.dat\n", 2,
                   "data file 'none.dat' not found");
  // load_mem asks for more than the file holds: the trace line and the file's last line.
  expect_txn_error(dir, "load_mem 0x80000000 0x20 short.dat\n", 1,
                   "load_mem: " + dat +
                       ":7: truncated: load_mem asks for 0x20 bytes but the "
                       "file holds 0x18");
  // The file holds fewer bytes than its own Data_size.
  dir.write("lies.dat", surface_text(0x18, "0x20"));
  expect_txn_error(dir, "load_mem 0x80000000 0x10 lies.dat\n", 1,
                   "truncated: Data_size = 0x20 but the file holds 0x18 bytes");
  const std::string bad = dir.write("bad.dat", "Data_size = 0x4\n0x01 0x02 0x123 0x04\n");
  expect_txn_error(dir, "load_mem 0x80000000 0x4 bad.dat\n", 1,
                   bad + ":2: expected a byte 0x00..0xff, got '0x123'");
  const std::string late = dir.write("late.dat", "0x01 0x02\nW = 8\n");
  expect_txn_error(dir, "load_mem 0x80000000 0x2 late.dat\n", 1,
                   late + ":2: expected a 'Key = value' header line (only before the bytes)");
}

TEST(TxnReader, DumpMustMatchItsLineAndHoldItsSize) {
  TempDir dir;
  dir.write("out.dat", dump_text("0x80000000", "0x10", 0x10));
  expect_txn_error(dir, "dump_mem 0x80000010 0x10 out.dat\n", 1,
                   "dump_mem 0x80000010+0x10 does not match the golden");
  expect_txn_error(dir, "dump_mem 0x80000000 0x10 gone.dat\n", 1, "data file 'gone.dat' not found");
  const std::string short_dump = dir.write("short.dat", dump_text("0x80000000", "0x20", 0x10));
  expect_txn_error(dir, "dump_mem 0x80000000 0x20 short.dat\n", 1,
                   "the dump says size=0x20 but holds 0x10 bytes");
  const std::string no_header = dir.write("nohdr.dat", "0x01 0x02\n");
  expect_error([&] { (void)read_v1_dump(no_header); },
               no_header + ":1: ", "expected 'dumped memory,start_address=0x.. size=0x..'");
}

TEST(TxnReader, PlusargsSetThePollBound) {
  TempDir dir;
  EXPECT_EQ(parse_plusargs("+read_reg_poll_retries=10 +continue_on_fail\n", "p").poll_reads, 10u);
  EXPECT_EQ(parse_plusargs("", "p").poll_reads, 100000u);
  expect_error([] { (void)parse_plusargs("+continue_on_fail +verbose\n", "p"); },
               "p:1: ", "unknown plusarg '+verbose'");
  expect_error([] { (void)parse_plusargs("+read_reg_poll_retries=many", "p"); },
               "p:1: ", "bad read_reg_poll_retries 'many'");
  expect_error([] { (void)parse_plusargs("+read_reg_poll_retries=0", "p"); },
               "p:1: ", "at least 1");
  // parse_txn_file reads the plusargs.txt beside the trace.
  dir.write("plusargs.txt", "+read_reg_poll_retries=3\n");
  const std::string path = dir.write("input.txn", "read_reg 0xffff0003 0x40 0x40\n");
  EXPECT_EQ(parse_txn_file(path).commands.at(0).as<Poll>().max_reads, 3u);
}

TEST(TxnReader, ReadTraceFilePicksTheFormatByExtension) {
  TempDir dir;
  const std::string txn = dir.write("a.txn", "write_reg 0xffff2803 0x7\n");
  const std::string cfg =
      dir.write("a.cfg", "reg_write(NVDLA_SDP_RDMA.D_DATA_CUBE_WIDTH_0, 0x7);\n");
  const Trace a = read_trace_file(txn);
  const Trace b = read_trace_file(cfg);
  ASSERT_EQ(a.commands.size(), 1u);
  ASSERT_EQ(b.commands.size(), 1u);
  EXPECT_EQ(a.commands[0].as<RegWrite>().reg, b.commands[0].as<RegWrite>().reg);
  expect_error([&] { (void)read_trace_file((dir.path() / "none.txn").string()); },
               (dir.path() / "none.txn").string() + ": ", "cannot open trace file");
}

struct Played {
  PlayResult result;
  dla::FunctionalDevice device{load_hw_config("nv_full")};
};

void play_file(const std::string& path, Played& p) {
  p.result = play(parse_txn_file(path), p.device, {});
}

TEST(TxnPlay, ReadBacksAreMaskedChecksThatDoNotStopTheRun) {
  TempDir dir;
  const std::string path =
      dir.write("input.txn",
                "read_reg 0xffff100b 0xffffffe0 0x00000000 #NVDLA_BDMA.CFG_DST_SURF_0\n"
                "write_reg 0xffff100b 0xf0a5a51f #NVDLA_BDMA.CFG_DST_SURF_0\n"
                "read_reg 0xffff100b 0xffffffe0 0xf0a5a500 #the low bits are masked off\n"
                "read_reg 0xffff100b 0xffffffe0 0xf0a5a520 #wrong\n"
                "read_reg 0xffff100b 0x000000e0 0x00000000\n");
  Played p;
  play_file(path, p);
  ASSERT_EQ(p.result.checks.size(), 4u);
  EXPECT_TRUE(p.result.checks[0].pass);
  EXPECT_TRUE(p.result.checks[1].pass);
  EXPECT_FALSE(p.result.checks[2].pass);
  EXPECT_EQ(p.result.checks[2].line, 4);
  EXPECT_EQ(p.result.checks[2].detail, "got 0xf0a5a500, want 0xf0a5a520");
  EXPECT_TRUE(p.result.checks[3].pass);
  EXPECT_FALSE(p.result.all_passed());
}

TEST(TxnPlay, PollThatNeverMatchesIsAClearBoundedError) {
  TempDir dir;
  dir.write("plusargs.txt", "+read_reg_poll_retries=5\n");
  const std::string path =
      dir.write("input.txn",
                "write_reg 0xffff100b 0x800 #NVDLA_BDMA.CFG_DST_SURF_0 (nothing launched)\n"
                "read_reg 0xffff0003 0x00000040 0x00000040 #BDMA_DONE_STATUS0\n");
  Played p;
  expect_error([&] { play_file(path, p); }, path + ":2: ",
               "poll of NVDLA_GLB.S_INTR_STATUS_0 & 0x00000040 (BDMA_DONE_STATUS0) == 0x40 still "
               "false after 5 reads");
  expect_error([&] { play_file(path, p); }, path + ":2: ", "(last value 0x00000000)");
  // Simulated time passed while polling.
  EXPECT_GT(p.device.cycle(), 0u);
  const std::string wait = dir.write("wait.txn", "wait\n");
  expect_error([&] { play_file(wait, p); },
               wait + ":1: ", "poll of NVDLA_GLB.S_INTR_STATUS_0 != 0x0 still false after 5 reads");
}

TEST(TxnPlay, LoadsTheFirstSizeBytesAndComparesTheGoldenDump) {
  TempDir dir;
  dir.write("in.dat", surface_text(0x30));  // holds more than load_mem asks for
  const std::string trace = "load_mem 0x80000000 0x20 in.dat\n";
  {
    // The golden: the loaded bytes 0x00..0x1f, then the 0x10 bytes past them, never loaded (0).
    std::string zeros;
    for (int i = 0; i < 16; ++i) zeros += "0x00 ";
    dir.write("output_feature_map.dat", "dumped memory,start_address=0x80000000 size=0x30\n" +
                                            byte_lines(0x20) + zeros + "\ndump done\n");
    Played p;
    play_file(dir.write("input.txn", trace), p);
    ASSERT_EQ(p.result.checks.size(), 1u);  // output_feature_map.dat, named by no dump_mem
    EXPECT_TRUE(p.result.checks[0].pass) << p.result.checks[0].detail;
    EXPECT_EQ(p.result.checks[0].line, 2);
  }
  {
    // One byte differs: the first differing address, expected and actual bytes.
    std::string text = dump_text("0x80000000", "0x20", 0x20);
    text.replace(text.find("0x11"), 4, "0x99");
    dir.write("output_feature_map.dat", text);
    Played p;
    play_file(dir.write("input.txn", trace), p);
    ASSERT_EQ(p.result.checks.size(), 1u);
    EXPECT_FALSE(p.result.checks[0].pass);
    EXPECT_EQ(p.result.checks[0].detail,
              "first mismatch at 0x80000011 (offset 0x11): got 0x11, want 0x99");
  }
}

}  // namespace
}  // namespace octasim::trace::txn_reader_test
