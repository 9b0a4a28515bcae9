// The trace commands: for each, how its arguments are read and checked (parse_*) and what the
// player does with it (play_*), joined into one row of kCommands at the end of this file.
// check_file, the largest, lives in check_file.cpp.
#include <algorithm>
#include <cstddef>
#include <random>
#include <stdexcept>
#include <vector>

#include <fmt/core.h>

#include "models/numerics/crc32.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/trace/command_table.hpp"

namespace octasim::trace {
namespace {

constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;

RegWrite parse_reg_write(const ArgReader& a) {
  a.expect_args(2, "reg_write(NVDLA_UNIT.REGISTER_0, value)");
  return {a.reg(a[0]), a.u32(a[1], "register value")};
}

void play_reg_write(Player& p, const Command& /*c*/, const RegWrite& a) {
  if (a.timed) {
    p.write_register(a.reg->addr, a.value);
  } else {
    p.device().csb_write(a.reg->addr, a.value);
  }
}

RegRead parse_reg_read(const ArgReader& a) {
  a.expect_args(2, "reg_read(NVDLA_UNIT.REGISTER_0, name)");
  return {a.reg(a[0]), a[1]};
}

void play_reg_read(Player& p, const Command& c, const RegRead& a) {
  p.report(fmt::format("READ line {}: NVDLA_{}.{}_0 = 0x{:08x}", c.line, a.reg->unit, a.reg->name,
                       p.device().csb_read(a.reg->addr)));
}

RegReadCheck parse_reg_read_check(const ArgReader& a) {
  a.expect_args(2, a.name() + "(NVDLA_UNIT.REGISTER_0, expected_value)");
  return {a.reg(a[0]), a.u32(a[1], "expected value")};
}

void play_reg_read_check(Player& p, const Command& c, const RegReadCheck& a) {
  const std::uint32_t got = p.device().csb_read(a.reg->addr) & a.mask;
  const std::string masked = a.mask == ~0u ? "" : fmt::format(" & 0x{:08x}", a.mask);
  p.check(c, fmt::format("reg_read_check NVDLA_{}.{}_0{}", a.reg->unit, a.reg->name, masked),
          got == a.value,
          got == a.value ? "" : fmt::format("got 0x{:08x}, want 0x{:08x}", got, a.value));
}

// poll_reg_<cmp>(REG, value) or, as in NVDLA's guide, (target, REG, value); poll_field_<cmp>
// (REG.FIELD, value), (REG, FIELD, value) or (target, REG, FIELD, value).
Poll parse_poll(const ArgReader& a) {
  Poll poll;
  const std::size_t n = a.size();
  if (a.name().rfind("poll_reg_", 0) == 0) {
    poll.compare = a.compare(a.name().substr(9));
    if (n != 2 && n != 3) {
      a.fail(fmt::format("{} takes (NVDLA_UNIT.REGISTER_0, value), got {} arguments", a.name(), n));
    }
    poll.reg = a.reg(a[n - 2]);
  } else {
    poll.compare = a.compare(a.name().substr(11));
    if (n == 2) {
      const auto dot = a[0].rfind('.');
      if (dot == std::string::npos || a[0].find('.') == dot) {
        a.fail(fmt::format("expected NVDLA_UNIT.REGISTER_0.FIELD, got '{}'", a[0]));
      }
      poll.reg = a.reg(a[0].substr(0, dot));
      poll.field = a.field(poll.reg, a[0].substr(dot + 1));
    } else if (n == 3 || n == 4) {
      poll.reg = a.reg(a[n - 3]);
      poll.field = a.field(poll.reg, a[n - 2]);
    } else {
      a.fail(fmt::format("{} takes (NVDLA_UNIT.REGISTER_0, FIELD, value), got {} arguments",
                         a.name(), n));
    }
  }
  poll.value = a.u32(a.back(), "expected value");
  return poll;
}

bool holds(Compare op, std::uint32_t got, std::uint32_t want) {
  switch (op) {
    case Compare::kEqual:
      return got == want;
    case Compare::kGreater:
      return got > want;
    case Compare::kLess:
      return got < want;
    case Compare::kNotEqual:
      return got != want;
    case Compare::kNotGreater:
      return got <= want;
    case Compare::kNotLess:
      return got >= want;
  }
  return false;
}

const char* compare_name(Compare op) {
  switch (op) {
    case Compare::kEqual:
      return "==";
    case Compare::kGreater:
      return ">";
    case Compare::kLess:
      return "<";
    case Compare::kNotEqual:
      return "!=";
    case Compare::kNotGreater:
      return "<=";
    case Compare::kNotLess:
      return ">=";
  }
  return "?";
}

// The GLB S_INTR_STATUS fields a mask covers ("BDMA_DONE_STATUS0"), for messages.
std::string fields_in(const regs::RegisterInfo& r, std::uint32_t mask) {
  std::string names;
  for (std::size_t i = 0; i < r.field_count; ++i) {
    if ((r.fields[i].field.mask() & mask) == 0) continue;
    names += fmt::format("{}{}", names.empty() ? "" : ", ", r.fields[i].name);
  }
  return names;
}

void play_poll(Player& p, const Command& c, const Poll& a) {
  Device& dev = p.device();
  const std::uint64_t timeout = p.options().timeout_cycles;
  const std::uint64_t start = dev.cycle();
  const std::uint64_t write_cycle = p.last_write_cycle();
  for (std::uint64_t reads = 1;; ++reads) {
    const std::uint32_t reg = dev.csb_read(a.reg->addr);
    const std::uint32_t got = (a.field != nullptr ? a.field->field.get(reg) : reg) & a.mask;
    if (holds(a.compare, got, a.value)) {
      if (a.interrupt_wait) {
        p.result().compute_start_cycle = write_cycle;
        p.result().end_cycle = dev.cycle();
      }
      return;
    }
    if (a.max_reads != 0 && reads >= a.max_reads) {
      const std::string masked =
          a.mask == ~0u ? "" : fmt::format(" & 0x{:08x} ({})", a.mask, fields_in(*a.reg, a.mask));
      p.fail(c, fmt::format("poll of NVDLA_{}.{}_0{} {} 0x{:x} still false after {} reads over {} "
                            "cycles (last value 0x{:08x})",
                            a.reg->unit, a.reg->name, masked, compare_name(a.compare), a.value,
                            reads, dev.cycle() - start, reg));
    }
    if (dev.cycle() - start > timeout) {
      p.fail(c,
             fmt::format("poll of NVDLA_{}.{}_0{}{} {} 0x{:x} still false after {} cycles "
                         "(last value 0x{:x})",
                         a.reg->unit, a.reg->name, a.field ? "." : "", a.field ? a.field->name : "",
                         compare_name(a.compare), a.value, timeout, got));
    }
    dev.wait_cycles(std::max<std::uint64_t>(p.options().poll_interval_cycles, 1));
  }
}

MemInit parse_mem_init(const ArgReader& a) {
  if (a.size() != 4 && a.size() != 5) {
    a.fail("mem_init takes (pri_mem, address, size, ALL_ZERO|ALL_ONE|RANDOM[, seed])");
  }
  MemInit m;
  m.space = a.memory(a[0]);
  m.addr = a.u64(a[1], "address");
  m.size = a.u64(a[2], "size");
  const std::string pattern = name_key(a[3]);
  if (pattern == "ALL_ZERO") {
    m.pattern = MemPattern::kAllZero;
  } else if (pattern == "ALL_ONE") {
    m.pattern = MemPattern::kAllOne;
  } else if (pattern == "RANDOM") {
    m.pattern = MemPattern::kRandom;
  } else {
    a.fail(
        fmt::format("unknown mem_init pattern '{}' (expected ALL_ZERO, ALL_ONE or RANDOM)", a[3]));
  }
  if (a.size() == 5) {
    if (m.pattern != MemPattern::kRandom) a.fail("only RANDOM takes a seed");
    m.seed = a.u32(a[4], "seed");
  }
  return m;
}

void play_mem_init(Player& p, const Command& /*c*/, const MemInit& a) {
  MemoryImage& mem = p.device().memory_of(a.space);
  check_region(mem, a.addr, a.size);
  switch (a.pattern) {
    case MemPattern::kAllZero:
      mem.fill(a.addr, a.size, 0x00);
      break;
    case MemPattern::kAllOne:
      mem.fill(a.addr, a.size, 0xff);
      break;
    case MemPattern::kRandom: {
      std::mt19937 rng(a.seed);
      std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::min(a.size, kChunk)));
      for (std::uint64_t done = 0; done < a.size;) {
        const std::size_t n = static_cast<std::size_t>(std::min(a.size - done, kChunk));
        for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(rng());
        mem.write(a.addr + done, bytes.data(), n);
        done += n;
      }
      break;
    }
  }
}

MemLoad parse_mem_load(const ArgReader& a) {
  a.expect_args(3, "mem_load(pri_mem|sec_mem, address, \"file.dat\")");
  MemLoad load;
  load.space = a.memory(a[0]);
  load.addr = a.u64(a[1], "address");
  load.path = a.data_file(a[2]);
  return load;
}

// Writes the packets of the data file `path` at `addr` of `space` (mem_load, ppu_submit).
void load_dat(Player& p, const Command& c, MemorySpace space, std::uint64_t addr,
              const std::string& path) {
  const auto* load = std::get_if<MemLoad>(&c.args);
  if (load != nullptr) {
    space = access_space(p.device(), space, load->space_by_address, addr, load->size);
  }
  MemoryImage& mem = p.device().memory_of(space);
  for (const DatPacket& packet :
       load != nullptr ? read_data_file(path, load->format, load->size) : read_dat_file(path)) {
    if (packet.offset > ~std::uint64_t{0} - addr) {
      p.fail(c, fmt::format("mem_load address 0x{:x} + packet offset 0x{:x} is past 2^64, "
                            "outside the address space [0, 0x{:x})",
                            addr, packet.offset, mem.address_space_size()));
    }
    mem.write(addr + packet.offset, packet.payload.data(), packet.payload.size());
  }
}

void play_mem_load(Player& p, const Command& c, const MemLoad& a) {
  load_dat(p, c, a.space, a.addr, a.path);
}

IntrNotify parse_intr_notify(const ArgReader& a) {
  a.expect_args(2, "intr_notify(INTERRUPT, sync_id)");
  Interrupt interrupt = a.interrupt(a[0]);
  return {std::move(interrupt), a.identifier(a[1], "sync id")};
}

void play_intr_notify(Player& p, const Command& c, const IntrNotify& a) {
  PlayResult& result = p.result();
  result.compute_start_cycle = p.last_write_cycle();
  const std::uint64_t timeout = p.options().timeout_cycles;
  if (!p.device().wait_interrupt(a.interrupt.status_bit, timeout)) {
    p.fail(c,
           fmt::format("interrupt {} did not arrive within {} cycles", a.interrupt.name, timeout));
  }
  result.end_cycle = p.device().cycle();
  p.device().csb_write(regs::GLB::S_INTR_STATUS::kAddr, 1u << a.interrupt.status_bit);
  p.notify(a.sync_id);
}

template <class Sync>
Sync parse_sync(const ArgReader& a) {
  a.expect_args(2, a.name() + "(target, sync_id)");
  std::string target = a.identifier(a[0], "target");
  return {std::move(target), a.identifier(a[1], "sync id")};
}

void play_sync_notify(Player& p, const Command& /*c*/, const SyncNotify& a) {
  p.notify(a.sync_id);
}

void play_sync_wait(Player& p, const Command& c, const SyncWait& a) {
  p.require_notified(c, a.sync_id);
}

CheckCrc parse_check_crc(const ArgReader& a) {
  a.expect_args(5, "check_crc(sync_id, pri_mem, address, size, crc)");
  CheckCrc check;
  check.sync_id = a.identifier(a[0], "sync id");
  check.space = a.memory(a[1]);
  check.addr = a.u64(a[2], "address");
  check.size = a.u64(a[3], "size");
  check.crc = a.u32(a[4], "crc");
  return check;
}

void play_check_crc(Player& p, const Command& c, const CheckCrc& a) {
  p.require_notified(c, a.sync_id);
  const MemoryImage& mem = p.device().memory_of(a.space);
  check_region(mem, a.addr, a.size);
  // Streams through memory: a large region costs time, not a buffer of its size.
  models::Crc32 crc;
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::min(a.size, kChunk)));
  for (std::uint64_t done = 0; done < a.size;) {
    const std::size_t n = static_cast<std::size_t>(std::min(a.size - done, kChunk));
    mem.read(a.addr + done, bytes.data(), n);
    crc.update(bytes.data(), n);
    done += n;
  }
  const std::uint32_t got = crc.value();
  p.check(c, fmt::format("check_crc 0x{:x}+0x{:x}", a.addr, a.size), got == a.crc,
          got == a.crc ? "" : fmt::format("crc 0x{:08x}, want 0x{:08x}", got, a.crc));
}

CheckNothing parse_check_nothing(const ArgReader& a) {
  a.expect_args(1, "check_nothing(sync_id)");
  return {a.identifier(a[0], "sync id")};
}

void play_check_nothing(Player& p, const Command& c, const CheckNothing& a) {
  p.require_notified(c, a.sync_id);
}

PpuSubmit parse_ppu_submit(const ArgReader& a) {
  a.expect_args(4, "ppu_submit(channel, pri_mem, address, \"pushbuffer.dat\")");
  PpuSubmit submit;
  submit.channel = a.u32(a[0], "channel");
  if (submit.channel >= ppu_format::kChannels) {
    a.fail(fmt::format("PPU channel {} does not exist (channels 0 to {})", submit.channel,
                       ppu_format::kChannels - 1));
  }
  if (a.memory(a[1]) != MemorySpace::kDram) {
    a.fail("ppu_submit: the PPU reads push buffers from DRAM (pri_mem), not the CV-SRAM");
  }
  submit.addr = a.u64(a[2], "address");
  if (submit.addr % 4 != 0) {
    a.fail(fmt::format("push buffer address 0x{:x} is not 4-byte aligned", submit.addr));
  }
  submit.path = a.data_file(a[3]);
  return submit;
}

// Loads the push buffer, points the channel at it and rings its doorbell (PUT = its size).
void play_ppu_submit(Player& p, const Command& c, const PpuSubmit& a) {
  std::uint64_t size = 0;
  for (const DatPacket& packet : read_dat_file(a.path)) {
    size = std::max<std::uint64_t>(size, packet.offset + packet.payload.size());
  }
  if (size % 4 != 0 || size > 0xffffffffu) {
    p.fail(c, fmt::format("push buffer {} is {} bytes: expected whole 32-bit words, below 4 GiB",
                          a.path, size));
  }
  load_dat(p, c, MemorySpace::kDram, a.addr, a.path);
  const std::uint32_t base = ppu_format::kCsbBase + ppu_format::kChannelStride * a.channel;
  p.write_register(base + ppu_format::kPbBaseLow, static_cast<std::uint32_t>(a.addr));
  p.write_register(base + ppu_format::kPbBaseHigh, static_cast<std::uint32_t>(a.addr >> 32));
  p.write_register(base + ppu_format::kPbSize, static_cast<std::uint32_t>(size));
  p.write_register(base + ppu_format::kPut, static_cast<std::uint32_t>(size));
}

}  // namespace

// The command table, in Op order: name, spellings, one example per spelling, parse, play.
constexpr std::array<CommandSpec, std::variant_size_v<Args>> kCommands = {
    command<parse_reg_write, play_reg_write>("reg_write", {"reg_write"},
                                             {"reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);"}),
    command<parse_reg_read, play_reg_read>("reg_read", {"reg_read"},
                                           {"reg_read(NVDLA_SDP.S_STATUS_0, status);"}),
    command<parse_reg_read_check, play_reg_read_check>(
        "reg_read_check", {"reg_read_check", "reg_read_expected"},
        {"reg_read_check(NVDLA_SDP.S_POINTER_0, 0x0);",
         "reg_read_expected(NVDLA_SDP.S_POINTER_0, 0x0);"}),
    command<parse_poll, play_poll>("poll", {"poll_reg_*", "poll_field_*"},
                                   {"poll_reg_equal(NVDLA_GLB.S_INTR_STATUS_0, 0x0);",
                                    "poll_field_not_less(NVDLA_SDP.S_STATUS_0.STATUS_1, 0x0);"}),
    command<parse_mem_init, play_mem_init>("mem_init", {"mem_init"},
                                           {"mem_init(pri_mem, 0x80000000, 0x100, ALL_ZERO);"}),
    command<parse_mem_load, play_mem_load>("mem_load", {"mem_load"},
                                           {"mem_load(pri_mem, 0x80000000, \"data.dat\");"}),
    command<parse_intr_notify, play_intr_notify>("intr_notify", {"intr_notify"},
                                                 {"intr_notify(SDP_0, sync_0);"}),
    command<parse_sync<SyncNotify>, play_sync_notify>("sync_notify", {"sync_notify"},
                                                      {"sync_notify(CACC, sync_0);"}),
    command<parse_sync<SyncWait>, play_sync_wait>("sync_wait", {"sync_wait"},
                                                  {"sync_wait(CMAC_A, sync_0);"}),
    command<parse_check_crc, play_check_crc>("check_crc", {"check_crc"},
                                             {"check_crc(sync_0, pri_mem, 0x80000000, 0x4, 0x0);"}),
    command<parse_check_file, play_check_file>(
        "check_file", {"check_file"}, {"check_file(sync_0, 1, 0x80000000, 0x4, \"data.dat\");"}),
    command<parse_check_nothing, play_check_nothing>("check_nothing", {"check_nothing"},
                                                     {"check_nothing(sync_0);"}),
    command<parse_ppu_submit, play_ppu_submit>(
        "ppu_submit", {"ppu_submit"}, {"ppu_submit(0, pri_mem, 0x80000000, \"data.dat\");"}),
};

namespace {
constexpr bool rows_in_op_order() {
  for (std::size_t i = 0; i < kCommands.size(); ++i) {
    if (static_cast<std::size_t>(kCommands[i].op) != i) return false;
  }
  return true;
}
static_assert(rows_in_op_order(),
              "kCommands: row i must be the command whose arguments are Args #i");
}  // namespace

void check_region(const MemoryImage& mem, std::uint64_t addr, std::uint64_t size) {
  mem.check_range(addr, size);
  if (size > kMaxRegionBytes) {
    throw std::length_error(
        fmt::format("size 0x{:x} is beyond octasim's limit of 0x{:x} bytes (1 GiB) per command",
                    size, kMaxRegionBytes));
  }
}

MemorySpace memory_space_at(Device& device, std::uint64_t addr, std::uint64_t size) {
  try {
    if (device.memory_of(MemorySpace::kCvSram).contains(addr, std::max<std::uint64_t>(size, 1))) {
      return MemorySpace::kCvSram;
    }
  } catch (const std::out_of_range&) {
    // No CV-SRAM in this configuration: everything is DRAM.
  }
  return MemorySpace::kDram;
}

}  // namespace octasim::trace
