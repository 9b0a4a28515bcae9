#include "models/io/atomic_file.hpp"

#include <unistd.h>  // getpid

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

namespace octasim::models {

namespace fs = std::filesystem;

OutputFileError::OutputFileError(const std::string& path, const std::string& reason)
    : std::runtime_error(path + ": cannot write file (" + reason + ")"),
      path_(path),
      reason_(reason) {}

namespace {

// Where the new contents go: the file a symbolic link points at (the link stays), else `path`.
// Empty when `path` exists and is not a regular file (a device, a FIFO: written in place).
std::string replaced_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return path;
  if (!fs::is_regular_file(st)) return {};
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path target = fs::canonical(path, ec);
    if (!ec) return target.string();
  }
  return path;
}

}  // namespace

PendingFile::PendingFile(std::string path, const std::string& temp_suffix)
    : path_(std::move(path)) {
  const std::string target = replaced_file(path_);
  if (target.empty()) {
    temp_ = path_;
    done_ = true;  // written in place: nothing to rename or remove
    return;
  }
  path_ = target;
  temp_ = path_ + ".tmp." + std::to_string(::getpid()) + temp_suffix;
}

PendingFile::PendingFile(PendingFile&& other) noexcept
    : path_(std::move(other.path_)), temp_(std::move(other.temp_)), done_(other.done_) {
  other.done_ = true;
}

PendingFile::~PendingFile() {
  discard();
}

void PendingFile::commit() {
  if (done_) return;
  // A replaced file keeps its permissions (the temporary has the umask's defaults).
  std::error_code ec;
  const fs::file_status old = fs::status(path_, ec);
  if (!ec && fs::is_regular_file(old)) fs::permissions(temp_, old.permissions(), ec);
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    discard();
    throw OutputFileError(path_, reason);
  }
  done_ = true;
}

void PendingFile::discard() noexcept {
  if (done_) return;
  std::remove(temp_.c_str());  // absent when nothing was written yet
  done_ = true;
}

void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write) {
  PendingFile file(path);
  {
    std::ofstream out(file.temp_path(), std::ios::binary | std::ios::trunc);
    if (!out) throw OutputFileError(path, std::strerror(errno));
    write(out);
    out.flush();
    if (!out) throw OutputFileError(path, "write failed");
    out.close();
    if (!out) throw OutputFileError(path, "write failed");
  }
  file.commit();
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  write_file_atomically(path, [&](std::ostream& out) {
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  });
}

void PendingFileSet::add(const std::string& path, std::string_view contents) {
  PendingFile file(path);
  std::ofstream out(file.temp_path(), std::ios::binary | std::ios::trunc);
  if (!out) throw OutputFileError(path, std::strerror(errno));
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) throw OutputFileError(path, "write failed");
  files_.push_back(std::move(file));
}

void PendingFileSet::commit() {
  for (PendingFile& f : files_) f.commit();
  files_.clear();
}

void check_writable(const std::string& path) {
  PendingFile file(path);
  if (file.temp_path() == path) {  // written in place: opening it must not truncate it
    std::ofstream probe(path, std::ios::app);
    if (!probe) throw OutputFileError(path, std::strerror(errno));
    return;
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw OutputFileError(path, "is a directory");
  std::ofstream probe(file.temp_path(), std::ios::binary | std::ios::trunc);
  if (!probe) throw OutputFileError(path, std::strerror(errno));
}

}  // namespace octasim::models
