// Register-map types shared by the generated NVDLA register header (build/generated/octasim/
// regs/nvdla.hpp, from firmware/regmap/nvdla.json) and everything that reads or writes
// registers: the simulator's CSB register files, the firmware driver and the trace player.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace octasim::regs {

enum class Access : std::uint8_t {
  kRw,   // read/write
  kRo,   // read-only: writes are ignored
  kWo,   // write-only: reads return 0
  kW1c,  // write one to clear
};

// A bit field of a 32-bit register.
struct Field {
  std::uint8_t lsb;
  std::uint8_t width;

  [[nodiscard]] constexpr std::uint32_t mask() const {
    return (width >= 32 ? ~0u : ((1u << width) - 1u)) << lsb;
  }
  [[nodiscard]] constexpr std::uint32_t get(std::uint32_t reg) const {
    return (reg & mask()) >> lsb;
  }
  [[nodiscard]] constexpr std::uint32_t set(std::uint32_t reg, std::uint32_t value) const {
    return (reg & ~mask()) | ((value << lsb) & mask());
  }
};

struct FieldInfo {
  const char* name;
  Field field;
  Access access;
};

struct RegisterInfo {
  const char* unit;    // NVDLA unit name as traces spell it after "NVDLA_": SDP, SDP_RDMA, GLB...
  const char* name;    // register name without NVDLA's "_0" suffix: D_CVT_SCALE
  std::uint32_t addr;  // CSB byte address
  Access access;
  const FieldInfo* fields;
  std::size_t field_count;

  // NVDLA's D_ registers exist once per register group (ping-pong); S_ registers once.
  [[nodiscard]] bool is_dual() const { return name[0] == 'D' && name[1] == '_'; }
  // Bits a CSB write may change (read-only fields and registers excluded).
  [[nodiscard]] std::uint32_t writable_mask() const;
  // Bits that hold a field at all.
  [[nodiscard]] std::uint32_t defined_mask() const;
};

struct RegisterTable {
  const RegisterInfo* begin_;
  const RegisterInfo* end_;
  [[nodiscard]] const RegisterInfo* begin() const { return begin_; }
  [[nodiscard]] const RegisterInfo* end() const { return end_; }
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(end_ - begin_); }
};

// Every NVDLA register (generated table, sorted by address).
[[nodiscard]] RegisterTable nvdla_registers();
// Looks a register up by unit and name; `name` may carry NVDLA's "_0" suffix
// (trace spelling D_CVT_SCALE_0). nullptr when there is no such register.
[[nodiscard]] const RegisterInfo* find_register(std::string_view unit, std::string_view name);
// Looks a register up by CSB byte address; nullptr when no register lives there.
[[nodiscard]] const RegisterInfo* find_register(std::uint32_t addr);

}  // namespace octasim::regs
