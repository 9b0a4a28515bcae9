// The trace writer: exact trace text for a known sequence, the .dat packet format, the round
// trip through sim/trace's parser, and its one-line errors.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/driver/trace_writer.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/trace/trace.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace octasim::firmware {
namespace {

using octasim::test::TempDir;

namespace R = octasim::regs;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TraceWriter, WritesNvdlaTraceSyntaxWithRegisterNames) {
  TraceWriter t;
  t.comment("layer 1\nSDP");
  t.mem_init_zero(0x80020000, 0x400);
  t.mem_load(0x80000000, "in.dat", {1, 2, 3});
  t.write32(R::SDP::S_POINTER::kAddr, 0);
  t.write32(R::SDP::D_CVT_SCALE::kAddr, 141);
  t.write32(R::SDP_RDMA::D_SRC_BASE_ADDR_LOW::kAddr, 0x80000000u);
  t.write32(R::SDP_RDMA::D_OP_ENABLE::kAddr, 1);
  t.wait_interrupt(0);  // SDP_DONE_STATUS0
  t.check_crc(0x80020000, 0x400, 0xabcd);
  t.check_register(R::SDP::D_PERF_OUT_SATURATION::kAddr, 3);
  t.wait_interrupt(5);  // PDP_DONE_STATUS1
  t.wait_interrupt(2);  // CDP_DONE_STATUS0
  t.check_crc(0x80040000, 0x100, 0xdeadbeef);
  EXPECT_EQ(t.read32(R::GLB::S_INTR_STATUS::kAddr), 0u);

  const std::string want =
      "// layer 1 SDP\n"
      "mem_init(pri_mem, 0x80020000, 0x400, ALL_ZERO);\n"
      "mem_load(pri_mem, 0x80000000, \"in.dat\");\n"
      "reg_write(NVDLA_SDP.S_POINTER_0, 0x0);\n"
      "reg_write(NVDLA_SDP.D_CVT_SCALE_0, 0x8d);\n"
      "reg_write(NVDLA_SDP_RDMA.D_SRC_BASE_ADDR_LOW_0, 0x80000000);\n"
      "reg_write(NVDLA_SDP_RDMA.D_OP_ENABLE_0, 0x1);\n"
      "intr_notify(SDP_0, sync_id_0);\n"
      "check_crc(sync_id_0, pri_mem, 0x80020000, 0x400, 0x0000abcd);\n"
      "reg_read_check(NVDLA_SDP.D_PERF_OUT_SATURATION_0, 0x3);\n"
      "intr_notify(PDP_1, sync_id_1);\n"
      "intr_notify(CDP_0, sync_id_2);\n"
      "check_crc(sync_id_2, pri_mem, 0x80040000, 0x100, 0xdeadbeef);\n"
      "reg_read(NVDLA_GLB.S_INTR_STATUS_0, read_0);\n";
  EXPECT_EQ(t.text(), want);
  ASSERT_EQ(t.data_files().size(), 1u);
  EXPECT_EQ(t.data_files()[0].name, "in.dat");
  EXPECT_EQ(t.data_files()[0].bytes, (std::vector<std::uint8_t>{1, 2, 3}));
}

TEST(TraceWriter, DatPacketsHoldAtMost32Bytes) {
  std::vector<std::uint8_t> bytes(35);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 8);
  const std::string want =
      "{\n"
      "{offset:0x0, size:32, payload:0x00 0x08 0x10 0x18 0x20 0x28 0x30 0x38 0x40 0x48 0x50 0x58 "
      "0x60 0x68 0x70 0x78 0x80 0x88 0x90 0x98 0xa0 0xa8 0xb0 0xb8 0xc0 0xc8 0xd0 0xd8 0xe0 0xe8 "
      "0xf0 0xf8} ,\n"
      "{offset:0x20, size:3, payload:0x00 0x08 0x10} ,\n"
      "}\n";
  EXPECT_EQ(format_dat(bytes), want);
  EXPECT_EQ(format_dat({}), "{\n}\n");
}

TEST(TraceWriter, DatFilesRoundTripThroughTheTraceReader) {
  TempDir dir;
  std::vector<std::uint8_t> bytes(100);
  std::uint32_t x = 12345;
  for (auto& b : bytes) {
    x = x * 1103515245u + 12345u;
    b = static_cast<std::uint8_t>(x >> 24);
  }
  TraceWriter t;
  t.mem_load(0x80000000, "data.dat", bytes);
  t.save(dir.str(), "t.cfg");

  const std::vector<trace::DatPacket> packets = trace::read_dat_file(dir.str() + "/data.dat");
  ASSERT_EQ(packets.size(), 4u);
  std::vector<std::uint8_t> joined;
  for (std::size_t i = 0; i < packets.size(); ++i) {
    EXPECT_EQ(packets[i].offset, 32u * i);
    EXPECT_EQ(packets[i].payload.size(), i < 3 ? 32u : 4u);
    joined.insert(joined.end(), packets[i].payload.begin(), packets[i].payload.end());
  }
  EXPECT_EQ(joined, bytes);
}

TEST(TraceWriter, SavedTraceParsesWithTheSameCommands) {
  TempDir dir;
  TraceWriter t;
  t.mem_load(0x80000000, "in.dat", {9, 8, 7, 6});
  t.write32(R::PDP::D_RECIP_KERNEL_WIDTH::kAddr, 0x5555);
  t.wait_interrupt(4);
  t.check_crc(0x80000000, 4, 0x12345678);
  const std::string path = t.save(dir.str(), "demo.cfg");
  EXPECT_EQ(path, dir.str() + "/demo.cfg");
  EXPECT_EQ(read_file(path), t.text());

  const trace::Trace parsed = trace::parse_trace_file(path);
  ASSERT_EQ(parsed.commands.size(), 4u);
  EXPECT_EQ(parsed.commands[0].op, trace::Op::kMemLoad);
  EXPECT_EQ(parsed.commands[0].as<trace::MemLoad>().addr, 0x80000000u);
  EXPECT_EQ(parsed.commands[1].op, trace::Op::kRegWrite);
  EXPECT_EQ(parsed.commands[1].as<trace::RegWrite>().reg->addr,
            R::PDP::D_RECIP_KERNEL_WIDTH::kAddr);
  EXPECT_EQ(parsed.commands[1].as<trace::RegWrite>().value, 0x5555u);
  EXPECT_EQ(parsed.commands[2].op, trace::Op::kIntrNotify);
  EXPECT_EQ(parsed.commands[2].as<trace::IntrNotify>().interrupt.status_bit, 4u);
  EXPECT_EQ(parsed.commands[3].op, trace::Op::kCheckCrc);
  EXPECT_EQ(parsed.commands[3].as<trace::CheckCrc>().sync_id,
            parsed.commands[2].as<trace::IntrNotify>().sync_id);
  EXPECT_EQ(parsed.commands[3].as<trace::CheckCrc>().crc, 0x12345678u);
}

TEST(TraceWriter, NamesInterruptsAsTracesDo) {
  EXPECT_EQ(trace_interrupt_name(0), "SDP_0");
  EXPECT_EQ(trace_interrupt_name(1), "SDP_1");
  EXPECT_EQ(trace_interrupt_name(3), "CDP_1");
  EXPECT_EQ(trace_interrupt_name(4), "PDP_0");
  EXPECT_EQ(trace_interrupt_name(21), "CACC_1");
  EXPECT_THROW((void)trace_interrupt_name(12), FirmwareError);
}

TEST(TraceWriter, RejectsWhatATraceCannotSay) {
  TraceWriter t;
  EXPECT_THROW(t.write32(0x3, 1), FirmwareError);     // no register there
  EXPECT_THROW(t.check_crc(0, 4, 0), FirmwareError);  // no sync point yet
  EXPECT_THROW(t.mem_load(0, "../up.dat", {}), FirmwareError);
  EXPECT_THROW(t.mem_load(0, "data.bin", {}), FirmwareError);
  t.mem_load(0, "a.dat", {});
  EXPECT_THROW(t.mem_load(8, "a.dat", {}), FirmwareError);
  try {
    (void)trace_register_name(0x3);
    FAIL() << "expected FirmwareError";
  } catch (const FirmwareError& e) {
    EXPECT_STREQ(e.what(), "no NVDLA register at CSB address 0x00003");
  }
}

TEST(TraceWriter, UnwritableDirectoryIsOneLineError) {
  TraceWriter t;
  t.write32(R::SDP::D_OP_ENABLE::kAddr, 1);
  try {
    t.save("/nonexistent-octasim-dir/sub", "x.cfg");
    FAIL() << "expected FirmwareError";
  } catch (const FirmwareError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("cannot write '/nonexistent-octasim-dir/sub/x.cfg': ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace octasim::firmware
