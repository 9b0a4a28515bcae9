#include "sim/mem/l2_slice.hpp"

#include <algorithm>

namespace octasim::mem {

L2Slice::L2Slice(std::string group_name, const HwConfig& hw, std::uint64_t period)
    : period_(period),
      ways_(hw.mem.l2_ways),
      sets_(hw.mem.l2_slice_bytes / (hw.mem.l2_ways * hw.mem.l2_line_bytes)),
      line_bytes_(hw.mem.l2_line_bytes),
      bytes_per_cycle_(hw.mem.l2_bytes_per_cycle),
      hit_latency_(period * hw.mem.l2_hit_latency),
      mask_words_((hw.mem.l2_line_bytes + 63) / 64),
      lines_(static_cast<std::size_t>(sets_) * ways_),
      valid_(lines_.size() * mask_words_, 0),
      stats_(std::move(group_name)) {
  using stats::Unit;
  hits_ = stats_.add("hits", "accesses whose bytes were all valid in the slice", Unit::kCount);
  misses_ = stats_.add("misses",
                       "accesses that allocated a line, or reads that had to fetch missing bytes",
                       Unit::kCount);
  evictions_ = stats_.add("evictions", "lines replaced to make room (LRU)", Unit::kCount);
  writebacks_ = stats_.add("writebacks", "dirty lines written back to DRAM", Unit::kCount);
  fills_ = stats_.add("fills", "lines read from DRAM", Unit::kCount);
  bytes_read_ = stats_.add("bytes_read", "bytes clients read from the slice", Unit::kBytes);
  bytes_written_ = stats_.add("bytes_written", "bytes clients wrote to the slice", Unit::kBytes);
}

bool L2Slice::all_valid(std::size_t line, unsigned offset, unsigned len) const {
  for (unsigned i = offset; i < offset + len; ++i) {
    if ((valid_[line * mask_words_ + i / 64] >> (i % 64) & 1u) == 0) return false;
  }
  return true;
}

void L2Slice::set_valid(std::size_t line, unsigned offset, unsigned len) {
  for (unsigned i = offset; i < offset + len; ++i) {
    valid_[line * mask_words_ + i / 64] |= std::uint64_t{1} << (i % 64);
  }
}

void L2Slice::clear_valid(std::size_t line) {
  std::fill_n(valid_.begin() + static_cast<std::ptrdiff_t>(line * mask_words_), mask_words_, 0);
}

std::uint64_t L2Slice::access(std::uint64_t ready, std::uint64_t slice_line, std::uint64_t tag,
                              std::uint64_t dram_addr, unsigned offset, unsigned len, bool is_read,
                              DramChannel& dram) {
  const std::size_t set = slice_line % sets_;
  const std::size_t first = set * ways_;
  const std::uint64_t looked_up = ready + hit_latency_;
  std::size_t way = first + ways_;
  for (std::size_t w = first; w < first + ways_; ++w) {
    if (lines_[w].present && lines_[w].tag == tag) {
      way = w;
      break;
    }
  }
  bool miss = way == first + ways_;
  if (miss) {  // allocate: an empty way, else the least recently used
    way = first;
    for (std::size_t w = first; w < first + ways_; ++w) {
      if (!lines_[w].present) {
        way = w;
        break;
      }
      if (lines_[w].last_use < lines_[way].last_use) way = w;
    }
    Line& victim = lines_[way];
    if (victim.present) {
      ++evictions_;
      if (victim.dirty) {  // the whole line goes back (masked); nobody waits for it
        ++writebacks_;
        dram.access(looked_up, victim.dram_addr, line_bytes_, false);
      }
    }
    victim = Line{true, false, tag, dram_addr, 0, looked_up};
    clear_valid(way);
  }
  Line& line = lines_[way];
  line.last_use = ++clock_;
  std::uint64_t data_ready = looked_up;
  if (is_read) {
    if (!all_valid(way, offset, len)) {  // fetch the line, merge under the valid bytes
      miss = true;
      ++fills_;
      line.ready = std::max(line.ready, dram.access(looked_up, line.dram_addr, line_bytes_, true));
      set_valid(way, 0, line_bytes_);
    }
    data_ready = std::max(looked_up, line.ready);  // a fill may still be on its way
    bytes_read_ += len;
  } else {  // write-allocate without fetching: only the written bytes become valid
    set_valid(way, offset, len);
    line.dirty = true;
    bytes_written_ += len;
  }
  if (miss) {
    ++misses_;
  } else {
    ++hits_;
  }
  const std::uint64_t start = std::max(data_ready, port_free_);
  port_free_ = start + (len + bytes_per_cycle_ - 1) / bytes_per_cycle_ * period_;
  return port_free_;
}

}  // namespace octasim::mem
