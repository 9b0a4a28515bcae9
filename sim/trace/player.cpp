#include "sim/trace/player.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <fmt/core.h>

#include "models/numerics/crc32.hpp"
#include "models/numerics/float_format.hpp"
#include "models/precision/thresholds.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::trace {

bool PlayResult::all_passed() const {
  return std::all_of(checks.begin(), checks.end(), [](const CheckOutcome& c) { return c.pass; });
}

namespace {

bool compare(Compare op, std::uint32_t got, std::uint32_t want) {
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

// The elements of a region that fail a per-element rule: how many, and the worst one (the
// largest excess over its bound; a NaN or infinity mismatch counts as infinite).
struct Failures {
  std::uint64_t count = 0;
  std::uint64_t worst = 0;
  double worst_excess = -1.0;
  // Records failing element `i`; true when it is the worst so far.
  bool record(std::uint64_t i, double excess) {
    ++count;
    if (excess <= worst_excess) return false;
    worst_excess = excess;
    worst = i;
    return true;
  }
};

class Run {
 public:
  Run(const Trace& t, Device& d, const PlayerOptions& o) : trace_(t), dev_(d), opt_(o) {}

  PlayResult go() {
    for (const Command& c : trace_.commands) {
      try {
        step(c);
      } catch (const TraceError&) {
        throw;
      } catch (const std::exception& e) {
        throw TraceError(trace_.path, c.line, fmt::format("{}: {}", op_name(c.op), e.what()));
      }
    }
    return result_;
  }

 private:
  [[noreturn]] void fail(const Command& c, const std::string& msg) const {
    throw TraceError(trace_.path, c.line, msg);
  }

  void report(const std::string& line) const {
    if (opt_.report) opt_.report(line);
  }

  void check(const Command& c, std::string description, bool pass, std::string detail) {
    report(fmt::format("{} line {}: {}{}{}", pass ? "PASS" : "FAIL", c.line, description,
                       detail.empty() ? "" : ": ", detail));
    result_.checks.push_back({c.line, std::move(description), pass, std::move(detail)});
  }

  void require_notified(const Command& c) const {
    if (notified_.count(c.sync_id) == 0) {
      fail(c, fmt::format("{} waits for '{}', which no earlier intr_notify or sync_notify raised",
                          op_name(c.op), c.sync_id));
    }
  }

  void step(const Command& c) {
    switch (c.op) {
      case Op::kRegWrite:
        if (!wrote_) result_.first_write_cycle = dev_.cycle();
        wrote_ = true;
        dev_.csb_write(c.reg->addr, c.value);
        last_write_cycle_ = dev_.cycle();
        break;
      case Op::kRegRead:
        report(fmt::format("READ line {}: NVDLA_{}.{}_0 = 0x{:08x}", c.line, c.reg->unit,
                           c.reg->name, dev_.csb_read(c.reg->addr)));
        break;
      case Op::kRegReadCheck: {
        const std::uint32_t got = dev_.csb_read(c.reg->addr);
        check(c, fmt::format("reg_read_check NVDLA_{}.{}_0", c.reg->unit, c.reg->name),
              got == c.value,
              got == c.value ? "" : fmt::format("got 0x{:08x}, want 0x{:08x}", got, c.value));
        break;
      }
      case Op::kPoll:
        poll(c);
        break;
      case Op::kMemInit:
        mem_init(c);
        break;
      case Op::kMemLoad:
        mem_load(c);
        break;
      case Op::kIntrNotify: {
        result_.compute_start_cycle = last_write_cycle_;
        if (!dev_.wait_interrupt(c.interrupt.status_bit, opt_.timeout_cycles)) {
          fail(c, fmt::format("interrupt {} did not arrive within {} cycles", c.interrupt.name,
                              opt_.timeout_cycles));
        }
        result_.end_cycle = dev_.cycle();
        dev_.csb_write(regs::GLB::S_INTR_STATUS::kAddr, 1u << c.interrupt.status_bit);
        notified_.insert(c.sync_id);
        break;
      }
      case Op::kSyncNotify:
        notified_.insert(c.sync_id);
        break;
      case Op::kSyncWait:
        require_notified(c);
        break;
      case Op::kCheckCrc:
        check_crc(c);
        break;
      case Op::kCheckFile:
        check_file(c);
        break;
      case Op::kCheckNothing:
        require_notified(c);
        break;
      case Op::kPpuSubmit:
        ppu_submit(c);
        break;
    }
  }

  // Loads the push buffer, points the channel at it and rings its doorbell (PUT = its size).
  void ppu_submit(const Command& c) {
    std::uint64_t size = 0;
    for (const DatPacket& p : read_dat_file(c.path)) {
      size = std::max<std::uint64_t>(size, p.offset + p.payload.size());
    }
    if (size % 4 != 0 || size > 0xffffffffu) {
      fail(c, fmt::format("push buffer {} is {} bytes: expected whole 32-bit words, below 4 GiB",
                          c.path, size));
    }
    mem_load(c);
    const std::uint32_t base = ppu_format::kCsbBase + ppu_format::kChannelStride * c.channel;
    if (!wrote_) result_.first_write_cycle = dev_.cycle();
    wrote_ = true;
    dev_.csb_write(base + ppu_format::kPbBaseLow, static_cast<std::uint32_t>(c.addr));
    dev_.csb_write(base + ppu_format::kPbBaseHigh, static_cast<std::uint32_t>(c.addr >> 32));
    dev_.csb_write(base + ppu_format::kPbSize, static_cast<std::uint32_t>(size));
    dev_.csb_write(base + ppu_format::kPut, static_cast<std::uint32_t>(size));
    last_write_cycle_ = dev_.cycle();
  }

  void poll(const Command& c) {
    const std::uint64_t start = dev_.cycle();
    for (;;) {
      const std::uint32_t reg = dev_.csb_read(c.reg->addr);
      const std::uint32_t got = c.field != nullptr ? c.field->field.get(reg) : reg;
      if (compare(c.compare, got, c.value)) return;
      if (dev_.cycle() - start > opt_.timeout_cycles) {
        fail(c,
             fmt::format("poll of NVDLA_{}.{}_0{}{} {} 0x{:x} still false after {} cycles "
                         "(last value 0x{:x})",
                         c.reg->unit, c.reg->name, c.field ? "." : "", c.field ? c.field->name : "",
                         compare_name(c.compare), c.value, opt_.timeout_cycles, got));
      }
      dev_.wait_cycles(std::max<std::uint64_t>(opt_.poll_interval_cycles, 1));
    }
  }

  void mem_init(const Command& c) {
    MemoryImage& mem = dev_.memory();
    mem.check_range(c.addr, c.size);
    switch (c.pattern) {
      case MemPattern::kAllZero:
        mem.fill(c.addr, c.size, 0x00);
        break;
      case MemPattern::kAllOne:
        mem.fill(c.addr, c.size, 0xff);
        break;
      case MemPattern::kRandom: {
        std::mt19937 rng(c.seed);
        std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::min(c.size, kChunk)));
        for (std::uint64_t done = 0; done < c.size;) {
          const std::size_t n = static_cast<std::size_t>(std::min(c.size - done, kChunk));
          for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(rng());
          mem.write(c.addr + done, bytes.data(), n);
          done += n;
        }
        break;
      }
    }
  }

  void mem_load(const Command& c) {
    MemoryImage& mem = dev_.memory();
    for (const DatPacket& p : read_dat_file(c.path)) {
      if (p.offset > ~std::uint64_t{0} - c.addr) {
        fail(c, fmt::format("mem_load address 0x{:x} + packet offset 0x{:x} is past 2^64, outside "
                            "the address space [0, 0x{:x})",
                            c.addr, p.offset, mem.address_space_size()));
      }
      mem.write(c.addr + p.offset, p.payload.data(), p.payload.size());
    }
  }

  void check_crc(const Command& c) {
    require_notified(c);
    const MemoryImage& mem = dev_.memory();
    mem.check_range(c.addr, c.size);
    // Streams through memory: a large region costs time, not a buffer of its size.
    models::Crc32 crc;
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::min(c.size, kChunk)));
    for (std::uint64_t done = 0; done < c.size;) {
      const std::size_t n = static_cast<std::size_t>(std::min(c.size - done, kChunk));
      mem.read(c.addr + done, bytes.data(), n);
      crc.update(bytes.data(), n);
      done += n;
    }
    const std::uint32_t got = crc.value();
    check(c, fmt::format("check_crc 0x{:x}+0x{:x}", c.addr, c.size), got == c.crc,
          got == c.crc ? "" : fmt::format("crc 0x{:08x}, want 0x{:08x}", got, c.crc));
  }

  // The golden image is zero where no packet lies; a later packet overwrites an earlier one.
  // Compared chunk by chunk, so a large region needs no buffer of its size.
  void check_file(const Command& c) {
    if (c.file_compare == FileCompare::kFp32Tol || c.file_compare == FileCompare::kFp16Tol) {
      check_file_tolerance(c);
      return;
    }
    if (c.file_compare != FileCompare::kBytes) {
      check_file_fp16(c);
      return;
    }
    require_notified(c);
    const MemoryImage& mem = dev_.memory();
    mem.check_range(c.addr, c.size);
    const std::vector<DatPacket> packets = read_dat_file(c.path);
    // Chunk index -> the packets overlapping that chunk, in file order.
    std::map<std::uint64_t, std::vector<std::size_t>> by_chunk;
    for (std::size_t i = 0; i < packets.size(); ++i) {
      const DatPacket& p = packets[i];
      if (p.offset > c.size || p.payload.size() > c.size - p.offset) {
        fail(c, fmt::format("golden packet at offset 0x{:x} lies outside the checked size 0x{:x}",
                            p.offset, c.size));
      }
      if (p.payload.empty()) continue;
      const std::uint64_t last = p.offset + p.payload.size() - 1;
      for (std::uint64_t k = p.offset / kChunk; k <= last / kChunk; ++k) by_chunk[k].push_back(i);
    }
    const std::size_t buffer = static_cast<std::size_t>(std::min(c.size, kChunk));
    std::vector<std::uint8_t> got(buffer), want(buffer);
    std::string detail;
    for (std::uint64_t lo = 0; lo < c.size && detail.empty(); lo += kChunk) {
      const std::size_t n = static_cast<std::size_t>(std::min(c.size - lo, kChunk));
      std::fill_n(want.begin(), n, std::uint8_t{0});
      if (const auto it = by_chunk.find(lo / kChunk); it != by_chunk.end()) {
        for (const std::size_t i : it->second) {
          const DatPacket& p = packets[i];
          const std::uint64_t from = std::max(p.offset, lo);
          const std::uint64_t to = std::min(p.offset + p.payload.size(), lo + n);
          std::copy(p.payload.begin() + static_cast<std::ptrdiff_t>(from - p.offset),
                    p.payload.begin() + static_cast<std::ptrdiff_t>(to - p.offset),
                    want.begin() + static_cast<std::ptrdiff_t>(from - lo));
        }
      }
      mem.read(c.addr + lo, got.data(), n);
      const auto end = got.begin() + static_cast<std::ptrdiff_t>(n);
      const auto mismatch = std::mismatch(got.begin(), end, want.begin());
      if (mismatch.first != end) {
        const std::uint64_t off = lo + static_cast<std::uint64_t>(mismatch.first - got.begin());
        detail =
            fmt::format("first mismatch at 0x{:x} (offset 0x{:x}): got 0x{:02x}, want 0x{:02x}",
                        c.addr + off, off, *mismatch.first, *mismatch.second);
      }
    }
    check(c, fmt::format("check_file 0x{:x}+0x{:x}", c.addr, c.size), detail.empty(), detail);
  }

  // A .dat file as the bytes of [0, size): zero where no packet lies, later packets win.
  std::vector<std::uint8_t> dat_image(const Command& c, const std::string& path,
                                      std::uint64_t size) const {
    std::vector<std::uint8_t> image(static_cast<std::size_t>(size), 0);
    for (const DatPacket& p : read_dat_file(path)) {
      if (p.offset > size || p.payload.size() > size - p.offset) {
        fail(c, fmt::format("{}: packet at offset 0x{:x} lies outside the 0x{:x} bytes it covers",
                            path, p.offset, size));
      }
      std::copy(p.payload.begin(), p.payload.end(),
                image.begin() + static_cast<std::ptrdiff_t>(p.offset));
    }
    return image;
  }

  // The checked region's bytes and its golden, for the element-wise check_file rules.
  struct Compared {
    std::vector<std::uint8_t> got, want;
  };
  Compared region_and_golden(const Command& c) const {
    require_notified(c);
    const MemoryImage& mem = dev_.memory();
    mem.check_range(c.addr, c.size);
    Compared r{std::vector<std::uint8_t>(static_cast<std::size_t>(c.size)),
               dat_image(c, c.path, c.size)};
    mem.read(c.addr, r.got.data(), r.got.size());
    return r;
  }

  // check_file with an FP16 rule: element by element, the worst element named on failure.
  void check_file_fp16(const Command& c) {
    const auto [got, want] = region_and_golden(c);
    const std::uint64_t elements = c.size / 2;
    std::vector<std::uint8_t> max_exps;
    if (!c.max_exp_path.empty()) max_exps = dat_image(c, c.max_exp_path, elements);
    const bool cc = c.file_compare == FileCompare::kFp16CcDirect;

    Failures failures;
    models::ThresholdResult worst_result{true, 0.0, 0.0};
    for (std::uint64_t i = 0; i < elements; ++i) {
      const auto a = static_cast<std::uint16_t>(got[2 * i] | got[2 * i + 1] << 8);
      const auto b = static_cast<std::uint16_t>(want[2 * i] | want[2 * i + 1] << 8);
      const int max_exp = max_exps.empty() ? c.max_exp : static_cast<std::int8_t>(max_exps[i]);
      const models::ThresholdResult r =
          cc ? models::check_cc_direct(a, b, max_exp, static_cast<int>(c.cc_terms), 1, 1,
                                       c.cc_scale)
             : models::check_sdp(a, b);
      if (!r.pass && failures.record(i, r.diff - r.bound)) worst_result = r;
    }
    const char* rule = cc ? "FP16_CC_DIRECT" : "FP16_SDP";
    const std::uint64_t failed = failures.count, worst = failures.worst;
    std::string detail;
    if (failed != 0) {
      const auto a = static_cast<std::uint16_t>(got[2 * worst] | got[2 * worst + 1] << 8);
      const auto b = static_cast<std::uint16_t>(want[2 * worst] | want[2 * worst + 1] << 8);
      detail = fmt::format(
          "{}:{}: {} of {} FP16 elements fail; worst at 0x{:x} (element {}): got 0x{:04x} ({}), "
          "want 0x{:04x} ({}), |diff| {} > bound {}",
          trace_.path, c.line, failed, elements, c.addr + 2 * worst, worst, a,
          models::fp16_to_float(a), b, models::fp16_to_float(b), worst_result.diff,
          worst_result.bound);
      if (cc) {
        detail +=
            fmt::format(" (max_exp {}, R*S*C {}, scale {})",
                        max_exps.empty() ? c.max_exp : static_cast<std::int8_t>(max_exps[worst]),
                        c.cc_terms, c.cc_scale);
      }
    }
    check(c, fmt::format("check_file {} 0x{:x}+0x{:x}", rule, c.addr, c.size), failed == 0, detail);
  }

  // check_file FP32_TOL / FP16_TOL: |got - want| <= abs_tol + rel_tol * |want| per element; a
  // NaN passes only against a NaN and an infinity only against the same infinity. Reports how
  // many elements fail and the worst (largest excess over its bound).
  void check_file_tolerance(const Command& c) {
    const auto [got, want] = region_and_golden(c);
    const bool fp32 = c.file_compare == FileCompare::kFp32Tol;
    const unsigned width = fp32 ? 4 : 2;
    const std::uint64_t elements = c.size / width;
    const auto value = [&](const std::vector<std::uint8_t>& bytes, std::uint64_t i) {
      std::uint32_t bits = 0;
      for (unsigned b = 0; b < width; ++b) bits |= std::uint32_t{bytes[i * width + b]} << (8 * b);
      return fp32 ? models::decode_float(bits, models::kFp32)
                  : models::decode_float(bits, models::kFp16);
    };
    Failures failures;
    double worst_bound = 0.0;
    for (std::uint64_t i = 0; i < elements; ++i) {
      const double a = value(got, i), b = value(want, i);
      bool pass = false;
      double excess = 0.0, bound = 0.0;
      if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
        pass = (std::isnan(a) && std::isnan(b)) || a == b;
        excess = std::numeric_limits<double>::infinity();
      } else {
        bound = c.abs_tol + c.rel_tol * std::fabs(b);
        excess = std::fabs(a - b) - bound;
        pass = excess <= 0.0;
      }
      if (!pass && failures.record(i, excess)) worst_bound = bound;
    }
    const char* rule = fp32 ? "FP32_TOL" : "FP16_TOL";
    const std::uint64_t failed = failures.count, worst = failures.worst;
    std::string detail;
    if (failed != 0) {
      detail = fmt::format(
          "{}:{}: {} of {} {} elements fail; worst at 0x{:x} (element {}): got {}, want {}, "
          "bound {} (abs_tol {} + rel_tol {} x |want|)",
          trace_.path, c.line, failed, elements, fp32 ? "FP32" : "FP16", c.addr + width * worst,
          worst, value(got, worst), value(want, worst), worst_bound, c.abs_tol, c.rel_tol);
    }
    check(c, fmt::format("check_file {} 0x{:x}+0x{:x}", rule, c.addr, c.size), failed == 0, detail);
  }

  static constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;

  const Trace& trace_;
  Device& dev_;
  const PlayerOptions& opt_;
  PlayResult result_;
  std::set<std::string> notified_;
  bool wrote_ = false;
  std::uint64_t last_write_cycle_ = 0;
};

}  // namespace

PlayResult play(const Trace& trace, Device& device, const PlayerOptions& options) {
  return Run(trace, device, options).go();
}

}  // namespace octasim::trace
