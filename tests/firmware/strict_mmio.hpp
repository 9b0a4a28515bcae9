// A strict, sequenced mock of the firmware's Mmio (after OpenTitan's mock_mmio): a test lists
// the register accesses it expects, in order, by NVDLA register name; the first access that
// differs in kind, register or value fails the test with what was expected and what came, and
// verify() fails if expected accesses never came.
#pragma once

#include <cstdint>
#include <deque>
#include <sstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "firmware/driver/mmio.hpp"
#include "firmware/regmap/regmap.hpp"

namespace octasim::firmware::testing {

class StrictMmio final : public Mmio {
 public:
  // `reg` is "UNIT.NAME" as NVDLA's traces spell it without the NVDLA_ prefix and _0 suffix,
  // e.g. "SDP_RDMA.D_BRDMA_CFG".
  StrictMmio& write(std::string_view reg, std::uint32_t value) {
    expected_.push_back({Kind::kWrite, address(reg), value});
    return *this;
  }
  StrictMmio& read(std::string_view reg, std::uint32_t returns) {
    expected_.push_back({Kind::kRead, address(reg), returns});
    return *this;
  }
  StrictMmio& interrupt(unsigned status_bit) {
    expected_.push_back({Kind::kInterrupt, 0, status_bit});
    return *this;
  }

  void write32(std::uint32_t addr, std::uint32_t value) override {
    take({Kind::kWrite, addr, value});
  }
  std::uint32_t read32(std::uint32_t addr) override {
    const Access* e = take({Kind::kRead, addr, 0});
    return e != nullptr ? e->value : 0;
  }
  void wait_interrupt(unsigned status_bit) override { take({Kind::kInterrupt, 0, status_bit}); }

  // Fails the current test if an expected access never happened.
  void verify() {
    if (!failed_ && !expected_.empty()) {
      ADD_FAILURE() << "after " << count_ << " accesses, still expected "
                    << describe(expected_.front()) << " (and " << expected_.size() - 1 << " more)";
      failed_ = true;
    }
  }
  ~StrictMmio() override { verify(); }

  [[nodiscard]] std::size_t accesses() const { return count_; }

 private:
  enum class Kind { kWrite, kRead, kInterrupt };
  struct Access {
    Kind kind;
    std::uint32_t addr;
    std::uint32_t value;  // written value, value a read returns, or interrupt status bit
  };

  static std::uint32_t address(std::string_view reg) {
    const auto dot = reg.find('.');
    const regs::RegisterInfo* r =
        dot == std::string_view::npos
            ? nullptr
            : regs::find_register(reg.substr(0, dot), reg.substr(dot + 1));
    if (r == nullptr) {
      ADD_FAILURE() << "test expects an access to unknown register '" << reg << "'";
      return 0xffffffffu;
    }
    return r->addr;
  }

  static std::string reg_name(std::uint32_t addr) {
    std::ostringstream s;
    const regs::RegisterInfo* r = regs::find_register(addr);
    if (r != nullptr) s << "NVDLA_" << r->unit << "." << r->name << "_0";
    s << " (0x" << std::hex << addr << ")";
    return s.str();
  }

  static std::string describe(const Access& a) {
    std::ostringstream s;
    switch (a.kind) {
      case Kind::kWrite:
        s << "write32(" << reg_name(a.addr) << ", 0x" << std::hex << a.value << ")";
        break;
      case Kind::kRead:
        s << "read32(" << reg_name(a.addr) << ")";
        break;
      case Kind::kInterrupt:
        s << "wait_interrupt(" << a.value << ")";
        break;
    }
    return s.str();
  }

  const Access* take(const Access& got) {
    const std::size_t n = count_++;
    if (failed_) return nullptr;
    if (expected_.empty()) {
      ADD_FAILURE() << "access #" << n << ": got " << describe(got)
                    << ", expected no more accesses";
      failed_ = true;
      return nullptr;
    }
    const Access& want = expected_.front();
    const bool same = want.kind == got.kind && want.addr == got.addr &&
                      (want.kind == Kind::kRead || want.value == got.value);
    if (!same) {
      ADD_FAILURE() << "access #" << n << ": got " << describe(got) << ", expected "
                    << describe(want);
      failed_ = true;
      return nullptr;
    }
    last_ = want;
    expected_.pop_front();
    return &last_;
  }

  std::deque<Access> expected_;
  Access last_{};
  std::size_t count_ = 0;
  bool failed_ = false;
};

}  // namespace octasim::firmware::testing
