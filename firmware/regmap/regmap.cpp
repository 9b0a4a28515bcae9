#include "firmware/regmap/regmap.hpp"

#include <algorithm>
#include <string_view>

namespace octasim::regs {

std::uint32_t RegisterInfo::writable_mask() const {
  if (access == Access::kRo) return 0;
  std::uint32_t m = 0;
  for (std::size_t i = 0; i < field_count; ++i) {
    if (fields[i].access != Access::kRo) m |= fields[i].field.mask();
  }
  return m;
}

std::uint32_t RegisterInfo::defined_mask() const {
  std::uint32_t m = 0;
  for (std::size_t i = 0; i < field_count; ++i) m |= fields[i].field.mask();
  return m;
}

namespace {

const RegisterInfo* find_exact(std::string_view unit, std::string_view name) {
  for (const RegisterInfo& r : nvdla_registers()) {
    if (unit == r.unit && name == r.name) return &r;
  }
  return nullptr;
}

}  // namespace

const RegisterInfo* find_register(std::string_view unit, std::string_view name) {
  // The exact name first (D_CVT_SCALE, or D_DATAIN_SIZE_0, whose own name ends in "_0"), then
  // the trace spelling without its "_0" suffix (D_CVT_SCALE_0, D_DATAIN_SIZE_0_0). No unit has
  // both X and X_0, so the order never picks between two registers.
  if (const RegisterInfo* r = find_exact(unit, name)) return r;
  if (name.size() > 2 && name.substr(name.size() - 2) == "_0") {
    return find_exact(unit, name.substr(0, name.size() - 2));
  }
  return nullptr;
}

const RegisterInfo* find_register(std::uint32_t addr) {
  const RegisterTable t = nvdla_registers();
  const RegisterInfo* it = std::lower_bound(
      t.begin(), t.end(), addr, [](const RegisterInfo& r, std::uint32_t a) { return r.addr < a; });
  return it != t.end() && it->addr == addr ? it : nullptr;
}

}  // namespace octasim::regs
