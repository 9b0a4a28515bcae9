#include "sim/core/register_file.hpp"

#include <algorithm>

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"

namespace octasim {

RegisterFile::RegisterFile() {
  std::uint32_t max_addr = 0;
  for (const auto& r : regs::nvdla_registers()) max_addr = std::max(max_addr, r.addr);
  words_ = max_addr / 4 + 1;
  storage_.assign(2 * words_, 0);
  unit_index_.assign(words_, -1);
  for (const auto& r : regs::nvdla_registers()) {
    const std::string_view unit = r.unit;
    std::size_t idx = 0;
    while (idx < units_.size() && units_[idx].name != unit) ++idx;
    if (idx == units_.size()) units_.push_back(Unit{std::string(unit)});
    unit_index_[r.addr / 4] = static_cast<std::int16_t>(idx);
    const std::string_view name = r.name;
    if (name == "S_POINTER") units_[idx].pointer_addr = r.addr;
    if (name == "D_OP_ENABLE") units_[idx].op_enable_addr = r.addr;
    if (name == "S_STATUS") units_[idx].status_addr = r.addr;
  }
  // The convolution buffer is flushed (initialised) at reset; octasim models it as done by the
  // time software can read the status.
  storage_[slot(regs::CDMA::S_CBUF_FLUSH_STATUS::kAddr, 0)] =
      regs::CDMA::S_CBUF_FLUSH_STATUS::FLUSH_DONE.set(0, 1);
  luts_.push_back({regs::SDP::S_LUT_ACCESS_CFG::kAddr, regs::SDP::S_LUT_ACCESS_DATA::kAddr, {}});
  luts_.push_back({regs::CDP::S_LUT_ACCESS_CFG::kAddr, regs::CDP::S_LUT_ACCESS_DATA::kAddr, {}});
  namespace B = regs::BDMA;
  bdma_.unit = unit_index_[B::CFG_OP::kAddr / 4];
  bdma_.first_addr = B::CFG_SRC_ADDR_LOW::kAddr;
  bdma_.op_addr = B::CFG_OP::kAddr;
  bdma_.launch_addr = {B::CFG_LAUNCH0::kAddr, B::CFG_LAUNCH1::kAddr};
  bdma_.status_addr = B::STATUS::kAddr;
}

void RegisterFile::command_queue_write(std::uint32_t addr, std::uint32_t value) {
  namespace B = regs::BDMA;
  CommandQueue& q = bdma_;
  if ((value & 1u) == 0) return;
  if (addr == q.op_addr) {
    // v1_ias_programming_guide.rst: no command while both groups are busy; software polls
    // STATUS.FREE_SLOT before programming the next operation.
    if (q.outstanding[0] > 0 && q.outstanding[1] > 0) {
      throw CsbError(
          "BDMA: CFG_OP.EN written while both groups are busy (wait for a BDMA_DONE "
          "interrupt first)");
    }
    if (q.cached.size() + q.launched.size() >= CommandQueue::kSlots) {
      throw CsbError(
          fmt::format("BDMA: CFG_OP.EN written with no free slot (all {} hold "
                      "operations; poll STATUS.FREE_SLOT)",
                      CommandQueue::kSlots));
    }
    std::vector<std::uint32_t> op;
    for (std::uint32_t a = q.first_addr; a < q.op_addr; a += 4) op.push_back(storage_[slot(a, 0)]);
    q.cached.push_back(std::move(op));
    return;
  }
  const unsigned group = addr == q.launch_addr[0] ? 0u : 1u;
  if (q.cached.empty()) {
    throw CsbError(
        fmt::format("BDMA: CFG_LAUNCH{} with no operation cached (program the copy, "
                    "then set CFG_OP.EN, before launching)",
                    group));
  }
  if (q.outstanding[group] > 0) {
    throw CsbError(fmt::format("BDMA: CFG_LAUNCH{} while group {} is still busy", group, group));
  }
  Unit& u = units_[static_cast<std::size_t>(q.unit)];
  if (q.launched.empty()) u.consumer = group;
  for (auto& op : q.cached) q.launched.push_back({group, std::move(op)});
  q.outstanding[group] = q.cached.size();
  q.cached.clear();
  u.state[group] = GroupState::kPending;
  // The group's stall counters count its own operations.
  const std::uint32_t read_stall =
      group == 0 ? B::STATUS_GRP0_READ_STALL::kAddr : B::STATUS_GRP1_READ_STALL::kAddr;
  const std::uint32_t write_stall =
      group == 0 ? B::STATUS_GRP0_WRITE_STALL::kAddr : B::STATUS_GRP1_WRITE_STALL::kAddr;
  storage_[slot(read_stall, 0)] = 0;
  storage_[slot(write_stall, 0)] = 0;
}

std::uint32_t RegisterFile::command_queue_status() const {
  using S = regs::BDMA::STATUS;
  const CommandQueue& q = bdma_;
  std::uint32_t v = S::FREE_SLOT.set(
      0, static_cast<std::uint32_t>(CommandQueue::kSlots - q.cached.size() - q.launched.size()));
  v = S::IDLE.set(v, q.launched.empty() ? 1u : 0u);
  v = S::GRP0_BUSY.set(v, q.outstanding[0] > 0 ? 1u : 0u);
  return S::GRP1_BUSY.set(v, q.outstanding[1] > 0 ? 1u : 0u);
}

const regs::RegisterInfo& RegisterFile::info(std::uint32_t addr) const {
  const regs::RegisterInfo* r = regs::find_register(addr);
  if (r == nullptr) throw CsbError(fmt::format("no register at CSB address 0x{:05x}", addr));
  return *r;
}

RegisterFile::Unit& RegisterFile::unit_of(std::string_view unit) {
  for (auto& u : units_) {
    if (u.name == unit) return u;
  }
  throw CsbError(fmt::format("no unit named {}", unit));
}

const RegisterFile::Unit& RegisterFile::unit_of(std::string_view unit) const {
  return const_cast<RegisterFile*>(this)->unit_of(unit);
}

std::size_t RegisterFile::slot(std::uint32_t addr, unsigned group) const {
  return (group & 1u) * words_ + addr / 4;
}

std::uint16_t* RegisterFile::lut_entry(LutPort& port) {
  const std::uint32_t cfg = storage_[slot(port.cfg_addr, 0)];
  const regs::Field addr_field = regs::SDP::S_LUT_ACCESS_CFG::LUT_ADDR;
  const std::uint32_t index = addr_field.get(cfg);
  const bool lo = regs::SDP::S_LUT_ACCESS_CFG::LUT_TABLE_ID.get(cfg) != 0;
  // The access port auto-increments its address after every data access.
  storage_[slot(port.cfg_addr, 0)] = addr_field.set(cfg, index + 1);
  if (lo) return index < port.tables.lo.size() ? &port.tables.lo[index] : nullptr;
  return index < port.tables.le.size() ? &port.tables.le[index] : nullptr;
}

void RegisterFile::csb_write(std::uint32_t addr, std::uint32_t value) {
  const regs::RegisterInfo& r = info(addr);
  Unit& u = units_[static_cast<std::size_t>(unit_index_[addr / 4])];
  if (addr == regs::GLB::S_INTR_MASK::kAddr) {
    intr_mask_ = value & r.writable_mask();
    return;
  }
  if (addr == regs::GLB::S_INTR_SET::kAddr) {
    const std::uint32_t set = value & r.defined_mask();
    for (unsigned b = 0; b < 32; ++b) {
      if ((set >> b & 1u) != 0) count_syncpoint(b);
    }
    intr_status_ |= set;
    return;
  }
  if (addr == regs::GLB::S_INTR_STATUS::kAddr) {
    intr_status_ &= ~value;  // write one to clear
    return;
  }
  for (auto& port : luts_) {
    if (addr == port.data_addr) {
      const std::uint32_t cfg = storage_[slot(port.cfg_addr, 0)];
      const bool write_access = regs::SDP::S_LUT_ACCESS_CFG::LUT_ACCESS_TYPE.get(cfg) != 0;
      std::uint16_t* entry = lut_entry(port);
      if (write_access && entry != nullptr) *entry = static_cast<std::uint16_t>(value);
      return;
    }
  }
  if (addr == u.pointer_addr) {
    u.producer = regs::SDP::S_POINTER::PRODUCER.get(value);
    return;
  }
  if (r.access == regs::Access::kRo) return;  // NVDLA ignores writes to read-only registers
  const unsigned group = r.is_dual() ? u.producer : 0;
  // hwarch.rst, ping-pong synchronization: once a group's enable bit is set, writes to that
  // group are dropped silently until the hardware completes it — D_OP_ENABLE included (the
  // CPU cannot clear it). The other group, S_ registers and the LUT port stay writable.
  if (r.is_dual() && group_enabled(u, group)) return;
  std::uint32_t& stored = storage_[slot(addr, group)];
  const std::uint32_t mask = r.writable_mask();
  stored = (stored & ~mask) | (value & mask);
  if (addr == bdma_.op_addr || addr == bdma_.launch_addr[0] || addr == bdma_.launch_addr[1]) {
    command_queue_write(addr, value);
  }
  if (addr == u.op_enable_addr && (value & 1u) != 0) {
    u.state[group] = (u.state[group ^ 1u] == GroupState::kRunning || group != u.consumer)
                         ? GroupState::kPending
                         : GroupState::kRunning;
    if (on_op_enable) on_op_enable(u.name, group);
  }
}

std::uint32_t RegisterFile::csb_read(std::uint32_t addr) {
  const regs::RegisterInfo& r = info(addr);
  const Unit& u = units_[static_cast<std::size_t>(unit_index_[addr / 4])];
  if (addr == regs::GLB::S_INTR_MASK::kAddr) return intr_mask_;
  if (addr == regs::GLB::S_INTR_STATUS::kAddr) return intr_status_;
  if (r.access == regs::Access::kWo) return 0;
  for (auto& port : luts_) {
    if (addr == port.data_addr) {
      const std::uint16_t* entry = lut_entry(port);
      return entry != nullptr ? *entry : 0;
    }
  }
  if (addr == u.pointer_addr) {
    return regs::SDP::S_POINTER::CONSUMER.set(regs::SDP::S_POINTER::PRODUCER.set(0, u.producer),
                                              u.consumer);
  }
  if (addr == bdma_.status_addr) return command_queue_status();
  if (addr == u.status_addr) {
    return regs::SDP::S_STATUS::STATUS_1.set(
        regs::SDP::S_STATUS::STATUS_0.set(0, static_cast<std::uint32_t>(u.state[0])),
        static_cast<std::uint32_t>(u.state[1]));
  }
  return storage_[slot(addr, r.is_dual() ? u.producer : 0)];
}

std::uint32_t RegisterFile::value(std::uint32_t addr, unsigned group) const {
  const regs::RegisterInfo& r = info(addr);
  // BDMA's hardware reads the operation at the head of its queue.
  if (!bdma_.launched.empty() && addr >= bdma_.first_addr && addr < bdma_.op_addr) {
    return bdma_.launched.front().regs[(addr - bdma_.first_addr) / 4];
  }
  // ... and sees CFG_LAUNCH<n> set for the group that operation belongs to.
  if (!bdma_.launched.empty() && (addr == bdma_.launch_addr[0] || addr == bdma_.launch_addr[1])) {
    return addr == bdma_.launch_addr[bdma_.launched.front().group] ? 1u : 0u;
  }
  return storage_[slot(addr, r.is_dual() ? group : 0)];
}

void RegisterFile::set_value(std::uint32_t addr, unsigned group, std::uint32_t value) {
  const regs::RegisterInfo& r = info(addr);
  storage_[slot(addr, r.is_dual() ? group : 0)] = value;
}

bool RegisterFile::is_op_enable(std::uint32_t addr) const {
  const std::size_t word = addr / 4;
  if (word >= unit_index_.size() || unit_index_[word] < 0) return false;
  if (addr == bdma_.launch_addr[0] || addr == bdma_.launch_addr[1]) return true;
  return units_[static_cast<std::size_t>(unit_index_[word])].op_enable_addr == addr;
}

RegisterFile::Groups RegisterFile::consumers() const {
  Groups g(units_.size());
  for (std::size_t i = 0; i < units_.size(); ++i)
    g[i] = static_cast<std::uint8_t>(units_[i].consumer);
  return g;
}

unsigned RegisterFile::group_at(std::uint32_t addr, const Groups& groups) const {
  const std::size_t word = addr / 4;
  if (word >= unit_index_.size() || unit_index_[word] < 0) return 0;
  return groups[static_cast<std::size_t>(unit_index_[word])];
}

std::uint32_t RegisterFile::value(std::uint32_t addr, const Groups& groups) const {
  return value(addr, group_at(addr, groups));
}

void RegisterFile::set_value(std::uint32_t addr, const Groups& groups, std::uint32_t value) {
  set_value(addr, group_at(addr, groups), value);
}

unsigned RegisterFile::group_of(std::string_view unit, const Groups& groups) const {
  const Unit& u = unit_of(unit);
  return groups[static_cast<std::size_t>(&u - units_.data())];
}

bool RegisterFile::group_enabled(const Unit& u, unsigned group) const {
  return u.op_enable_addr != kNone && (storage_[slot(u.op_enable_addr, group)] & 1u) != 0;
}

bool RegisterFile::op_enabled(std::string_view unit, unsigned group) const {
  const Unit& u = unit_of(unit);
  if (bdma_.unit >= 0 && &u == &units_[static_cast<std::size_t>(bdma_.unit)]) {
    return !bdma_.launched.empty() && bdma_.launched.front().group == group;
  }
  return group_enabled(u, group);
}

unsigned RegisterFile::consumer(std::string_view unit) const {
  return unit_of(unit).consumer;
}

void RegisterFile::set_running(std::string_view unit, unsigned group) {
  unit_of(unit).state[group & 1u] = GroupState::kRunning;
}

bool RegisterFile::op_done(std::string_view unit, unsigned group) {
  Unit& u = unit_of(unit);
  if (bdma_.unit >= 0 && &u == &units_[static_cast<std::size_t>(bdma_.unit)]) {
    CommandQueue& q = bdma_;
    if (q.launched.empty() || q.launched.front().group != group) {
      throw std::logic_error("BDMA: an operation completed that was not running");
    }
    q.launched.erase(q.launched.begin());
    const bool group_done = --q.outstanding[group] == 0;
    if (group_done) u.state[group & 1u] = GroupState::kIdle;
    if (!q.launched.empty()) u.consumer = q.launched.front().group;
    return group_done;
  }
  if (u.op_enable_addr != kNone) storage_[slot(u.op_enable_addr, group)] &= ~1u;
  u.state[group & 1u] = GroupState::kIdle;
  u.consumer = (group & 1u) ^ 1u;
  return true;
}

void RegisterFile::raise_interrupt(unsigned status_bit) {
  count_syncpoint(status_bit);
  intr_status_ |= 1u << status_bit;
}

void RegisterFile::count_syncpoint(unsigned status_bit) {
  if (status_bit >= kSyncpoints) return;
  const std::uint32_t addr = regs::PPU::S_SYNCPT0::kAddr + 4 * status_bit;
  set_value(addr, 0, value(addr, 0) + 1);  // wraps at 2^32
}

const LutTables& RegisterFile::lut(std::string_view unit) const {
  for (const LutPort& port : luts_) {
    if (std::string_view(info(port.cfg_addr).unit) == unit) return port.tables;
  }
  throw CsbError(fmt::format("unit {} has no LUT", unit));
}

}  // namespace octasim
