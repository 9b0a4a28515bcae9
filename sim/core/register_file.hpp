// The DLA's CSB register space: every NVDLA register from the generated register map, with
// NVDLA's behaviour — two register groups per unit for D_ registers (ping-pong, selected by
// S_POINTER.PRODUCER for software and by the hardware consumer pointer for execution),
// D_OP_ENABLE that the hardware clears when the group completes, S_STATUS composed from the
// group states, read-only and write-one-to-clear registers, the GLB interrupt registers, and the
// SDP/CDP LUT access ports, and BDMA's command queue (below). Plain C++: both the functional
// and the SystemC device use it.
//
// BDMA (v1_ias_programming_guide.rst, "BDMA programming") has no ping-pong D_ registers: each
// write of CFG_OP.EN=1 caches the CFG_ registers below CFG_OP (one copy operation) in one of
// 20 slots; a write of CFG_LAUNCH<n>=1 launches the operations cached since the previous launch
// as group n. The hardware executes launched operations in order, reading the CFG_ registers
// from the slot at the head of the queue (value(); CFG_LAUNCH<n> reads 1 there for the head's
// group n); a group's interrupt comes when its last
// operation is done (op_done() returns true). STATUS reads FREE_SLOT, IDLE and GRP<n>_BUSY.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "firmware/regmap/regmap.hpp"
#include "sim/core/lut_tables.hpp"

namespace octasim {

// A CSB access to an address where no register lives.
class CsbError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RegisterFile {
 public:
  enum class GroupState : std::uint8_t { kIdle = 0, kRunning = 1, kPending = 2 };

  RegisterFile();

  // Software (CSB) side.
  void csb_write(std::uint32_t addr, std::uint32_t value);
  [[nodiscard]] std::uint32_t csb_read(std::uint32_t addr);
  // Whether `addr` is some unit's D_OP_ENABLE or BDMA's CFG_LAUNCH0/1 (the only software writes
  // that can let an operation start).
  [[nodiscard]] bool is_op_enable(std::uint32_t addr) const;

  // Hardware side.
  // The value the hardware executing `group` sees (D_: that group's copy; S_: the only copy).
  [[nodiscard]] std::uint32_t value(std::uint32_t addr, unsigned group) const;
  // Hardware-owned status/statistics registers (bypasses read-only protection).
  void set_value(std::uint32_t addr, unsigned group, std::uint32_t value);
  [[nodiscard]] bool op_enabled(std::string_view unit, unsigned group) const;

  // The group every unit's hardware executes next (indexed by unit), taken when an operation
  // that spans several units starts (CDMA..CACC and SDP may sit in different groups), so the
  // operation reads its registers and writes its status in the groups it ran.
  using Groups = std::vector<std::uint8_t>;
  [[nodiscard]] Groups consumers() const;
  [[nodiscard]] std::uint32_t value(std::uint32_t addr, const Groups& groups) const;
  void set_value(std::uint32_t addr, const Groups& groups, std::uint32_t value);
  [[nodiscard]] unsigned group_of(std::string_view unit, const Groups& groups) const;
  // The group the unit's hardware executes next (S_POINTER.CONSUMER).
  [[nodiscard]] unsigned consumer(std::string_view unit) const;
  void set_running(std::string_view unit, unsigned group);
  // The unit finished `group`: clears its D_OP_ENABLE, marks it idle, flips the consumer.
  // BDMA: the operation at the head of the queue is done. Returns whether the group is complete
  // (always, but for a BDMA group with operations left): its interrupt is due.
  bool op_done(std::string_view unit, unsigned group);
  // Also counts the raise in the bit's syncpoint (PPU S_SYNCPT<bit>, bits below kSyncpoints), as
  // a write of S_INTR_SET does for each bit it sets: how often a completion has happened, which
  // a level interrupt bit cannot tell (a PPU channel's SYNCPT_WAIT waits on it).
  void raise_interrupt(unsigned status_bit);
  static constexpr unsigned kSyncpoints = 28;
  [[nodiscard]] std::uint32_t interrupt_status() const { return intr_status_; }
  // The LUT of `unit` (SDP or CDP, the units with an S_LUT_ACCESS port); CsbError for another.
  [[nodiscard]] const LutTables& lut(std::string_view unit) const;

  // Called after software sets D_OP_ENABLE of `unit` for `group`.
  std::function<void(std::string_view unit, unsigned group)> on_op_enable;

 private:
  // A register address no register has (CSB addresses are word-aligned and below 2^18):
  // marks a unit without S_POINTER, D_OP_ENABLE or S_STATUS. Not 0, which is
  // CFGROM_HW_VERSION's address.
  static constexpr std::uint32_t kNone = 0xffffffffu;

  struct Unit {
    std::string name;
    std::uint32_t pointer_addr = kNone;    // S_POINTER
    std::uint32_t op_enable_addr = kNone;  // D_OP_ENABLE
    std::uint32_t status_addr = kNone;     // S_STATUS
    unsigned producer = 0;
    unsigned consumer = 0;
    std::array<GroupState, 2> state{GroupState::kIdle, GroupState::kIdle};
  };
  // BDMA's operation slots (see the top of this file).
  struct CommandQueue {
    static constexpr std::size_t kSlots = 20;
    std::int16_t unit = -1;         // index into units_; -1: no such unit in the map
    std::uint32_t first_addr = 0;   // the cached registers: [first_addr, op_addr)
    std::uint32_t op_addr = kNone;  // CFG_OP
    std::array<std::uint32_t, 2> launch_addr{kNone, kNone};
    std::uint32_t status_addr = kNone;  // STATUS
    struct Op {
      unsigned group;
      std::vector<std::uint32_t> regs;
    };
    std::vector<std::vector<std::uint32_t>> cached;  // programmed, not launched yet
    std::vector<Op> launched;                        // in launch order; the head runs
    std::array<std::size_t, 2> outstanding{};        // launched and not done, per group
  };
  struct LutPort {
    std::uint32_t cfg_addr;
    std::uint32_t data_addr;
    LutTables tables;
  };

  [[nodiscard]] const regs::RegisterInfo& info(std::uint32_t addr) const;
  [[nodiscard]] Unit& unit_of(std::string_view unit);
  [[nodiscard]] const Unit& unit_of(std::string_view unit) const;
  [[nodiscard]] std::size_t slot(std::uint32_t addr, unsigned group) const;
  [[nodiscard]] unsigned group_at(std::uint32_t addr, const Groups& groups) const;
  [[nodiscard]] bool group_enabled(const Unit& u, unsigned group) const;
  std::uint16_t* lut_entry(LutPort& port);
  void command_queue_write(std::uint32_t addr, std::uint32_t value);
  [[nodiscard]] std::uint32_t command_queue_status() const;

  std::vector<std::uint32_t> storage_;  // [group][addr / 4]
  std::size_t words_ = 0;
  std::vector<Unit> units_;
  std::vector<std::int16_t> unit_index_;  // addr / 4 -> index into units_, -1 for none
  std::vector<LutPort> luts_;
  CommandQueue bdma_;
  std::uint32_t intr_mask_ = 0;
  std::uint32_t intr_status_ = 0;
  void count_syncpoint(unsigned status_bit);
};

}  // namespace octasim
