#include "firmware/driver/trace_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/core.h>

#include "firmware/regmap/regmap.hpp"
#include "models/io/atomic_file.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {

std::string format_dat(const std::vector<std::uint8_t>& bytes) {
  std::string out = "{\n";
  for (std::size_t offset = 0; offset < bytes.size(); offset += kDatPacketBytes) {
    const std::size_t n = std::min(kDatPacketBytes, bytes.size() - offset);
    out += fmt::format("{{offset:0x{:x}, size:{}, payload:", offset, n);
    for (std::size_t i = 0; i < n; ++i) {
      out += fmt::format("{}0x{:02x}", i == 0 ? "" : " ", bytes[offset + i]);
    }
    out += "} ,\n";
  }
  out += "}\n";
  return out;
}

std::string trace_register_name(std::uint32_t addr) {
  const regs::RegisterInfo* r = regs::find_register(addr);
  if (r == nullptr) {
    throw FirmwareError(fmt::format("no NVDLA register at CSB address 0x{:05x}", addr));
  }
  return fmt::format("NVDLA_{}.{}_0", r->unit, r->name);
}

std::string trace_interrupt_name(unsigned status_bit) {
  const regs::RegisterInfo* status = regs::find_register(regs::GLB::S_INTR_STATUS::kAddr);
  for (std::size_t i = 0; status != nullptr && i < status->field_count; ++i) {
    const regs::FieldInfo& f = status->fields[i];
    if (f.field.lsb != status_bit || f.field.width != 1) continue;
    // <UNIT>_DONE_STATUS<g> -> <UNIT>_<g>
    const std::string name = f.name;
    const std::string marker = "_DONE_STATUS";
    const auto pos = name.find(marker);
    if (pos != std::string::npos && pos + marker.size() + 1 == name.size()) {
      return name.substr(0, pos) + "_" + name.back();
    }
    // PPU_CH<n>_STATUS -> PPU_<n>
    if (name.size() == 14 && name.rfind("PPU_CH", 0) == 0 && name.substr(7) == "_STATUS") {
      return std::string("PPU_") + name[6];
    }
  }
  throw FirmwareError(
      fmt::format("GLB S_INTR_STATUS bit {} is not a unit's done interrupt", status_bit));
}

void write_text_file(const std::string& path, const std::string& text) {
  try {
    models::write_file_atomically(path, text);
  } catch (const models::OutputFileError& e) {
    throw FirmwareError(fmt::format("cannot write '{}': {}", e.path(), e.reason()));
  }
}

void TraceWriter::line(const std::string& text) {
  text_ += text;
  text_ += '\n';
}

void TraceWriter::write32(std::uint32_t addr, std::uint32_t value) {
  line(fmt::format("reg_write({}, 0x{:x});", trace_register_name(addr), value));
}

std::uint32_t TraceWriter::read32(std::uint32_t addr) {
  line(fmt::format("reg_read({}, read_{});", trace_register_name(addr), reads_++));
  return 0;
}

void TraceWriter::wait_interrupt(unsigned status_bit) {
  last_sync_id_ = fmt::format("sync_id_{}", syncs_++);
  line(fmt::format("intr_notify({}, {});", trace_interrupt_name(status_bit), last_sync_id_));
}

void TraceWriter::comment(const std::string& text) {
  std::string one_line = text;
  for (char& c : one_line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  line("// " + one_line);
}

void TraceWriter::mem_init_zero(std::uint64_t addr, std::uint64_t size, TraceMemory memory) {
  line(fmt::format("mem_init({}, 0x{:x}, 0x{:x}, ALL_ZERO);", trace_memory_name(memory), addr,
                   size));
}

void TraceWriter::mem_load(std::uint64_t addr, const std::string& name,
                           std::vector<std::uint8_t> bytes, TraceMemory memory) {
  add_file(name, std::move(bytes));
  line(fmt::format("mem_load({}, 0x{:x}, \"{}\");", trace_memory_name(memory), addr, name));
}

void TraceWriter::add_file(const std::string& name, std::vector<std::uint8_t> bytes) {
  const bool plain = !name.empty() && name.find_first_of("/\\\"") == std::string::npos &&
                     name.size() > 4 && name.compare(name.size() - 4, 4, ".dat") == 0;
  if (!plain) {
    throw FirmwareError(
        fmt::format("data file name '{}' must be a plain file name ending in .dat", name));
  }
  for (const DataFile& f : files_) {
    if (f.name == name) throw FirmwareError(fmt::format("data file '{}' is loaded twice", name));
  }
  files_.push_back({name, std::move(bytes)});
}

void TraceWriter::ppu_submit(unsigned channel, std::uint64_t addr, const std::string& name,
                             std::vector<std::uint8_t> bytes) {
  add_file(name, std::move(bytes));
  line(fmt::format("ppu_submit({}, pri_mem, 0x{:x}, \"{}\");", channel, addr, name));
}

void TraceWriter::check_file(std::uint64_t addr, const std::string& name,
                             std::vector<std::uint8_t> golden, const std::string& rule,
                             TraceMemory memory) {
  if (last_sync_id_.empty()) {
    throw FirmwareError("check_file needs an earlier wait_interrupt to name its sync point");
  }
  const std::size_t size = golden.size();
  add_file(name, std::move(golden));
  line(fmt::format("check_file({}, {}, 0x{:x}, 0x{:x}, \"{}\"{}{});", last_sync_id_,
                   trace_memory_name(memory), addr, size, name, rule.empty() ? "" : ", ", rule));
}

void TraceWriter::check_crc(std::uint64_t addr, std::uint64_t size, std::uint32_t crc,
                            TraceMemory memory) {
  if (last_sync_id_.empty()) {
    throw FirmwareError("check_crc needs an earlier wait_interrupt to name its sync point");
  }
  line(fmt::format("check_crc({}, {}, 0x{:x}, 0x{:x}, 0x{:08x});", last_sync_id_,
                   trace_memory_name(memory), addr, size, crc));
}

void TraceWriter::check_register(std::uint32_t addr, std::uint32_t expected) {
  line(fmt::format("reg_read_check({}, 0x{:x});", trace_register_name(addr), expected));
}

std::string TraceWriter::save(
    const std::string& dir, const std::string& cfg_name,
    const std::vector<std::pair<std::string, std::string>>& beside) const {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  const std::string path = base + cfg_name;
  // All or nothing: every file is written under a temporary name before any is renamed.
  try {
    models::PendingFileSet files;
    for (const DataFile& f : files_) files.add(base + f.name, format_dat(f.bytes));
    for (const auto& [name, text] : beside) files.add(base + name, text);
    files.add(path, text_);
    files.commit();
  } catch (const models::OutputFileError& e) {
    throw FirmwareError(fmt::format("cannot write '{}': {}", e.path(), e.reason()));
  }
  return path;
}

}  // namespace octasim::firmware
