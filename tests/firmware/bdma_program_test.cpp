// BDMA programming (firmware/dla/bdma) against a strict mock: NVDLA's own BDMA test
// (nvdlav1_traceplayer/sanity1/input.txn) copies one 8 x 256-byte surface from 0x80000000 to
// 0x81000000; the same copy in user terms must produce exactly the register values that test
// writes (in firmware's order), then CFG_OP.EN and CFG_LAUNCH0.
#include <gtest/gtest.h>

#include "firmware/dla/bdma.hpp"
#include "tests/firmware/strict_mmio.hpp"

namespace octasim::firmware {
namespace {

using testing::StrictMmio;

TEST(BdmaProgram, Sanity1CopyWritesNvdlasValues) {
  BdmaTransfer c;
  c.src = 0x80000000;
  c.dst = 0x81000000;
  c.line_bytes = 256;
  c.lines = 8;
  c.src_surface_stride = 0x800;
  c.dst_surface_stride = 0x800;
  StrictMmio m;
  m.write("BDMA.CFG_SRC_ADDR_HIGH", 0x0)
      .write("BDMA.CFG_SRC_ADDR_LOW", 0x80000000)
      .write("BDMA.CFG_DST_ADDR_HIGH", 0x0)
      .write("BDMA.CFG_DST_ADDR_LOW", 0x81000000)
      .write("BDMA.CFG_LINE", 0x7)
      .write("BDMA.CFG_CMD", 0x3)  // MC to MC
      .write("BDMA.CFG_LINE_REPEAT", 0x7)
      .write("BDMA.CFG_SRC_LINE", 0x100)
      .write("BDMA.CFG_DST_LINE", 0x100)
      .write("BDMA.CFG_SURF_REPEAT", 0x0)
      .write("BDMA.CFG_SRC_SURF", 0x800)
      .write("BDMA.CFG_DST_SURF", 0x800)
      .write("BDMA.CFG_OP", 0x1)
      .write("BDMA.CFG_LAUNCH0", 0x1);
  program_bdma(m, c);
  EXPECT_EQ(launch_bdma(m, 0), 6u);  // GLB S_INTR_STATUS BDMA_DONE_STATUS0
  m.verify();
}

TEST(BdmaProgram, CvSramAndGroupOne) {
  BdmaTransfer c;
  c.src = 0x1'2000'0040;  // above 4 GiB: CFG_SRC_ADDR_HIGH
  c.dst = 0x50000000;
  c.line_bytes = 64;
  c.lines = 2;
  c.surfaces = 3;
  c.dst_ram = BdmaRam::kCvSram;
  StrictMmio m;
  m.write("BDMA.CFG_SRC_ADDR_HIGH", 0x1)
      .write("BDMA.CFG_SRC_ADDR_LOW", 0x20000040)
      .write("BDMA.CFG_DST_ADDR_HIGH", 0x0)
      .write("BDMA.CFG_DST_ADDR_LOW", 0x50000000)
      .write("BDMA.CFG_LINE", 0x1)
      .write("BDMA.CFG_CMD", 0x1)  // SRC_RAM_TYPE MC (bit 0), DST_RAM_TYPE CVSRAM (bit 1 clear)
      .write("BDMA.CFG_LINE_REPEAT", 0x1)
      .write("BDMA.CFG_SRC_LINE", 0x40)  // packed: the line size
      .write("BDMA.CFG_DST_LINE", 0x40)
      .write("BDMA.CFG_SURF_REPEAT", 0x2)
      .write("BDMA.CFG_SRC_SURF", 0x80)  // packed: two lines
      .write("BDMA.CFG_DST_SURF", 0x80)
      .write("BDMA.CFG_OP", 0x1)
      .write("BDMA.CFG_LAUNCH1", 0x1);
  program_bdma(m, c);
  EXPECT_EQ(launch_bdma(m, 1), 7u);
  m.verify();
}

}  // namespace
}  // namespace octasim::firmware
