// NVDLA's first-release trace-player format (input.txn, nvdla/hw branch nvdlav1): one command
// per line — load_mem, write_reg, read_reg, wait, dump_mem — read into the same commands as a
// .cfg trace (sim/trace/trace.hpp), so that both formats play through one player.
//
//   load_mem ADDR SIZE FILE        MemLoad of the first SIZE bytes of a v1 surface file
//   write_reg ADDR DATA #comment   RegWrite; ADDR is the CSB word address with the v1 bus's
//                                  0xffff prefix (0xffff2803: word 0x2803, v1 byte 0xa00c)
//   read_reg ADDR MASK DATA #...   GLB S_INTR_STATUS: a Poll of (value & MASK) == DATA, at most
//                                  +read_reg_poll_retries reads; any other register: a
//                                  RegReadCheck of (value & MASK) == DATA (a check)
//   wait                           the testbench's wait for the interrupt line: a Poll until
//                                  GLB S_INTR_STATUS != 0
//   dump_mem ADDR SIZE FILE        a CheckFile of [ADDR, ADDR+SIZE) against FILE, the golden
//                                  dump (its header must name the same region)
//
// The v1 address map places the units at other CSB addresses than octasim's register map
// (opendla_small's, GLB at 0x1000): a v1 address is decoded to its unit and offset with the
// nvdlav1 unit bases (opendla_initial.h), and the register is the one at that offset of the
// same unit in octasim's map.
#pragma once

#include <cstdint>
#include <string>

#include "sim/trace/trace.hpp"

namespace octasim::trace {

struct TxnOptions {
  std::uint64_t poll_reads = 100000;  // +read_reg_poll_retries=N
};

// True when `path` names a .txn trace.
[[nodiscard]] bool is_txn_path(const std::string& path);

// Reads plusargs.txt (+read_reg_poll_retries=N, +continue_on_fail); throws TraceError on an
// unknown or malformed plusarg.
[[nodiscard]] TxnOptions parse_plusargs(const std::string& text, const std::string& path);

// Parses .txn text; `path` names it in errors and resolves data-file names. A data file is
// read and checked here (a malformed or truncated file is an error before anything runs).
[[nodiscard]] Trace parse_txn(const std::string& text, const std::string& path,
                              const TxnOptions& options);
// Parses a .txn file with the plusargs.txt beside it (when there is one); when the directory
// holds an output_feature_map.dat that no dump_mem names, a check against it ends the trace.
[[nodiscard]] Trace parse_txn_file(const std::string& path);

// Either format, by the file's extension: .txn, otherwise NVDLA's .cfg syntax.
[[nodiscard]] Trace read_trace_file(const std::string& path);

// The register at CSB byte address `v1_addr` of the nvdlav1 address map, in octasim's map;
// nullptr when no register lives there.
[[nodiscard]] const regs::RegisterInfo* v1_register(std::uint32_t v1_addr);

}  // namespace octasim::trace
