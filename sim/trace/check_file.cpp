// check_file: a memory region against a golden .dat file — NVDLA's byte-exact comparison, the
// FP16 thresholds of NVDLA's precision guide, or octasim's FP32/FP16 tolerance rules.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <vector>

#include <fmt/core.h>

#include "models/numerics/float_format.hpp"
#include "models/precision/thresholds.hpp"
#include "sim/trace/command_table.hpp"

namespace octasim::trace {

// check_file(sync_id, pri_mem, address, size, "golden.dat"[, FP16_SDP |
//            , FP16_CC_DIRECT, R*S*C, scale, max_exp | "max_exp.dat" |
//            , FP16_CC_WINOGRAD, C, scale, max_exp | "max_exp.dat" |
//            , FP32_TOL, abs_tol, rel_tol | , FP16_TOL, abs_tol, rel_tol]).
CheckFile parse_check_file(const ArgReader& a) {
  static const char* const kForms =
      "check_file(sync_id, pri_mem, address, size, \"golden.dat\"[, FP16_SDP | , "
      "FP16_CC_DIRECT, R*S*C, scale, max_exp or \"max_exp.dat\" | , FP16_CC_WINOGRAD, C, scale, "
      "max_exp or \"max_exp.dat\" | , FP32_TOL, abs_tol, "
      "rel_tol | , FP16_TOL, abs_tol, rel_tol])";
  const std::size_t n = a.size();
  if (n != 5 && n != 6 && n != 8 && n != 9) {
    a.fail(fmt::format("check_file expects 5, 6, 8 or 9 arguments: {}; got {}", kForms, n));
  }
  CheckFile c;
  c.sync_id = a.identifier(a[0], "sync id");
  c.space = a.memory(a[1]);
  c.addr = a.u64(a[2], "address");
  c.size = a.u64(a[3], "size");
  c.path = a.data_file(a[4]);
  if (n == 5) return c;
  const std::string& rule = a[5];
  if (rule == "FP16_SDP" && n == 6) {
    c.file_compare = FileCompare::kFp16Sdp;
  } else if ((rule == "FP16_CC_DIRECT" || rule == "FP16_CC_WINOGRAD") && n == 9) {
    const bool direct = rule == "FP16_CC_DIRECT";
    c.file_compare = direct ? FileCompare::kFp16CcDirect : FileCompare::kFp16CcWinograd;
    c.cc_terms = a.u32(a[6], direct ? "R*S*C" : "C");
    if (c.cc_terms == 0)
      a.fail(fmt::format("{} of {} must be positive", direct ? "R*S*C" : "C", rule));
    c.cc_scale = a.positive_real(a[7], "scale");
    if (!a[8].empty() && a[8].front() == '"') {
      c.max_exp_path = a.data_file(a[8]);
    } else {
      c.max_exp = a.small_int(a[8], "max_exp");
    }
  } else if ((rule == "FP32_TOL" || rule == "FP16_TOL") && n == 8) {
    c.file_compare = rule == "FP32_TOL" ? FileCompare::kFp32Tol : FileCompare::kFp16Tol;
    c.abs_tol = a.tolerance(a[6], "abs_tol");
    c.rel_tol = a.tolerance(a[7], "rel_tol");
  } else {
    a.fail(
        fmt::format("unknown check_file comparison '{}' with {} arguments: {}", rule, n, kForms));
  }
  const unsigned element = c.file_compare == FileCompare::kFp32Tol ? 4 : 2;
  if (c.size % element != 0 || c.addr % element != 0) {
    a.fail(fmt::format("{} compares {}-byte elements: address 0x{:x} and size 0x{:x} must be {}",
                       rule, element, c.addr, c.size, element == 2 ? "even" : "multiples of 4"));
  }
  return c;
}

namespace {

constexpr std::uint64_t kCheckChunk = std::uint64_t{1} << 20;

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

// The golden image is zero where no packet lies; a later packet overwrites an earlier one.
// Compared chunk by chunk, so a large region needs no buffer of its size.
void check_bytes(Player& p, const Command& c, const CheckFile& a) {
  p.require_notified(c, a.sync_id);
  const MemoryImage& mem =
      p.device().memory_of(access_space(p.device(), a.space, a.space_by_address, a.addr, a.size));
  check_region(mem, a.addr, a.size);
  const std::vector<DatPacket> packets = read_data_file(a.path, a.format);
  // Chunk index -> the packets overlapping that chunk, in file order.
  std::map<std::uint64_t, std::vector<std::size_t>> by_chunk;
  for (std::size_t i = 0; i < packets.size(); ++i) {
    const DatPacket& packet = packets[i];
    if (packet.offset > a.size || packet.payload.size() > a.size - packet.offset) {
      p.fail(c, fmt::format("golden packet at offset 0x{:x} lies outside the checked size 0x{:x}",
                            packet.offset, a.size));
    }
    if (packet.payload.empty()) continue;
    const std::uint64_t last = packet.offset + packet.payload.size() - 1;
    for (std::uint64_t k = packet.offset / kCheckChunk; k <= last / kCheckChunk; ++k)
      by_chunk[k].push_back(i);
  }
  const std::size_t buffer = static_cast<std::size_t>(std::min(a.size, kCheckChunk));
  std::vector<std::uint8_t> got(buffer), want(buffer);
  std::string detail;
  for (std::uint64_t lo = 0; lo < a.size && detail.empty(); lo += kCheckChunk) {
    const std::size_t n = static_cast<std::size_t>(std::min(a.size - lo, kCheckChunk));
    std::fill_n(want.begin(), n, std::uint8_t{0});
    if (const auto it = by_chunk.find(lo / kCheckChunk); it != by_chunk.end()) {
      for (const std::size_t i : it->second) {
        const DatPacket& packet = packets[i];
        const std::uint64_t from = std::max(packet.offset, lo);
        const std::uint64_t to = std::min(packet.offset + packet.payload.size(), lo + n);
        std::copy(packet.payload.begin() + static_cast<std::ptrdiff_t>(from - packet.offset),
                  packet.payload.begin() + static_cast<std::ptrdiff_t>(to - packet.offset),
                  want.begin() + static_cast<std::ptrdiff_t>(from - lo));
      }
    }
    mem.read(a.addr + lo, got.data(), n);
    const auto end = got.begin() + static_cast<std::ptrdiff_t>(n);
    const auto mismatch = std::mismatch(got.begin(), end, want.begin());
    if (mismatch.first != end) {
      const std::uint64_t off = lo + static_cast<std::uint64_t>(mismatch.first - got.begin());
      detail = fmt::format("first mismatch at 0x{:x} (offset 0x{:x}): got 0x{:02x}, want 0x{:02x}",
                           a.addr + off, off, *mismatch.first, *mismatch.second);
    }
  }
  p.check(c, fmt::format("check_file 0x{:x}+0x{:x}", a.addr, a.size), detail.empty(), detail);
}

// A .dat file as the bytes of [0, size): zero where no packet lies, later packets win.
std::vector<std::uint8_t> dat_image(const Player& p, const Command& c, const std::string& path,
                                    std::uint64_t size, DataFormat format = DataFormat::kPackets) {
  std::vector<std::uint8_t> image(static_cast<std::size_t>(size), 0);
  for (const DatPacket& packet : read_data_file(path, format)) {
    if (packet.offset > size || packet.payload.size() > size - packet.offset) {
      p.fail(c, fmt::format("{}: packet at offset 0x{:x} lies outside the 0x{:x} bytes it covers",
                            path, packet.offset, size));
    }
    std::copy(packet.payload.begin(), packet.payload.end(),
              image.begin() + static_cast<std::ptrdiff_t>(packet.offset));
  }
  return image;
}

// The checked region's bytes and its golden, for the element-wise rules.
struct Compared {
  std::vector<std::uint8_t> got, want;
};
Compared region_and_golden(Player& p, const Command& c, const CheckFile& a) {
  p.require_notified(c, a.sync_id);
  const MemoryImage& mem =
      p.device().memory_of(access_space(p.device(), a.space, a.space_by_address, a.addr, a.size));
  check_region(mem, a.addr, a.size);
  Compared r{std::vector<std::uint8_t>(static_cast<std::size_t>(a.size)),
             dat_image(p, c, a.path, a.size, a.format)};
  mem.read(a.addr, r.got.data(), r.got.size());
  return r;
}

// An FP16 rule: element by element, the worst element named on failure.
void check_fp16(Player& p, const Command& c, const CheckFile& a) {
  const auto [got, want] = region_and_golden(p, c, a);
  const std::uint64_t elements = a.size / 2;
  std::vector<std::uint8_t> max_exps;
  if (!a.max_exp_path.empty()) max_exps = dat_image(p, c, a.max_exp_path, elements);
  const bool wino = a.file_compare == FileCompare::kFp16CcWinograd;
  const bool cc = a.file_compare == FileCompare::kFp16CcDirect || wino;

  Failures failures;
  models::ThresholdResult worst_result{true, 0.0, 0.0};
  for (std::uint64_t i = 0; i < elements; ++i) {
    const auto x = static_cast<std::uint16_t>(got[2 * i] | got[2 * i + 1] << 8);
    const auto y = static_cast<std::uint16_t>(want[2 * i] | want[2 * i + 1] << 8);
    const int max_exp = max_exps.empty() ? a.max_exp : static_cast<std::int8_t>(max_exps[i]);
    const models::ThresholdResult r =
        wino ? models::check_cc_winograd(x, y, max_exp, static_cast<int>(a.cc_terms), a.cc_scale)
        : cc
            ? models::check_cc_direct(x, y, max_exp, static_cast<int>(a.cc_terms), 1, 1, a.cc_scale)
            : models::check_sdp(x, y);
    if (!r.pass && failures.record(i, r.diff - r.bound)) worst_result = r;
  }
  const char* rule = wino ? "FP16_CC_WINOGRAD" : cc ? "FP16_CC_DIRECT" : "FP16_SDP";
  const std::uint64_t failed = failures.count, worst = failures.worst;
  std::string detail;
  if (failed != 0) {
    const auto x = static_cast<std::uint16_t>(got[2 * worst] | got[2 * worst + 1] << 8);
    const auto y = static_cast<std::uint16_t>(want[2 * worst] | want[2 * worst + 1] << 8);
    detail = fmt::format(
        "{}:{}: {} of {} FP16 elements fail; worst at 0x{:x} (element {}): got 0x{:04x} ({}), "
        "want 0x{:04x} ({}), |diff| {} > bound {}",
        p.trace_path(), c.line, failed, elements, a.addr + 2 * worst, worst, x,
        models::fp16_to_float(x), y, models::fp16_to_float(y), worst_result.diff,
        worst_result.bound);
    if (cc) {
      detail +=
          fmt::format(" (max_exp {}, {} {}, scale {})",
                      max_exps.empty() ? a.max_exp : static_cast<std::int8_t>(max_exps[worst]),
                      wino ? "C" : "R*S*C", a.cc_terms, a.cc_scale);
    }
  }
  p.check(c, fmt::format("check_file {} 0x{:x}+0x{:x}", rule, a.addr, a.size), failed == 0, detail);
}

// FP32_TOL / FP16_TOL: |got - want| <= abs_tol + rel_tol * |want| per element; a NaN passes
// only against a NaN and an infinity only against the same infinity. Reports how many
// elements fail and the worst (largest excess over its bound).
void check_tolerance(Player& p, const Command& c, const CheckFile& a) {
  const auto [got, want] = region_and_golden(p, c, a);
  const bool fp32 = a.file_compare == FileCompare::kFp32Tol;
  const unsigned width = fp32 ? 4 : 2;
  const std::uint64_t elements = a.size / width;
  const auto value = [&](const std::vector<std::uint8_t>& bytes, std::uint64_t i) {
    std::uint32_t bits = 0;
    for (unsigned b = 0; b < width; ++b) bits |= std::uint32_t{bytes[i * width + b]} << (8 * b);
    return fp32 ? models::decode_float(bits, models::kFp32)
                : models::decode_float(bits, models::kFp16);
  };
  Failures failures;
  double worst_bound = 0.0;
  for (std::uint64_t i = 0; i < elements; ++i) {
    const double x = value(got, i), y = value(want, i);
    bool pass = false;
    double excess = 0.0, bound = 0.0;
    if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y)) {
      pass = (std::isnan(x) && std::isnan(y)) || x == y;
      excess = std::numeric_limits<double>::infinity();
    } else {
      bound = a.abs_tol + a.rel_tol * std::fabs(y);
      excess = std::fabs(x - y) - bound;
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
        p.trace_path(), c.line, failed, elements, fp32 ? "FP32" : "FP16", a.addr + width * worst,
        worst, value(got, worst), value(want, worst), worst_bound, a.abs_tol, a.rel_tol);
  }
  p.check(c, fmt::format("check_file {} 0x{:x}+0x{:x}", rule, a.addr, a.size), failed == 0, detail);
}

}  // namespace

void play_check_file(Player& p, const Command& c, const CheckFile& a) {
  switch (a.file_compare) {
    case FileCompare::kBytes:
      check_bytes(p, c, a);
      break;
    case FileCompare::kFp16Sdp:
    case FileCompare::kFp16CcDirect:
    case FileCompare::kFp16CcWinograd:
      check_fp16(p, c, a);
      break;
    case FileCompare::kFp32Tol:
    case FileCompare::kFp16Tol:
      check_tolerance(p, c, a);
      break;
  }
}

}  // namespace octasim::trace
