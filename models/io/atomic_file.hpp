// Output files that are never half-written: each is written under a temporary name in its own
// directory (`path.tmp.<pid>`) and renamed over `path` only when complete, so a reader (or a
// later run) sees either the old file, or none, or the whole new one. A write that fails, an
// exception or an interrupted run removes the temporary and leaves `path` as it was. Every
// octasim writer (reports, timelines, VCDs, .npy outputs, compiled traces, calibration tables,
// models) goes through here.
//
// A path that names something other than a regular file (/dev/stdout, a FIFO) is written in
// place, since it cannot be replaced by a rename; a symbolic link is followed, so the file it
// points at is replaced and the link kept. No fsync: a rename is atomic for other processes,
// not across a power cut.
#pragma once

#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace octasim::models {

// A file that could not be written: what() is "path: cannot write file (reason)".
class OutputFileError : public std::runtime_error {
 public:
  OutputFileError(const std::string& path, const std::string& reason);
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& reason() const { return reason_; }

 private:
  std::string path_, reason_;
};

// A file being written under a temporary name. The writer fills temp_path() (itself, or by
// handing the name to a library such as SystemC's VCD writer), then commit() renames it over
// path(). Destroyed without a commit, the temporary is removed.
class PendingFile {
 public:
  // `temp_suffix` is appended to the temporary's name (for writers that add an extension
  // themselves). Creates nothing yet.
  explicit PendingFile(std::string path, const std::string& temp_suffix = "");
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;
  PendingFile(PendingFile&& other) noexcept;
  PendingFile& operator=(PendingFile&&) = delete;
  ~PendingFile();

  [[nodiscard]] const std::string& path() const { return path_; }
  // The name to write; path() itself when it is not a regular file (written in place).
  [[nodiscard]] const std::string& temp_path() const { return temp_; }
  // Renames the temporary over path(); OutputFileError when it cannot.
  void commit();
  // Removes the temporary (what the destructor does without a commit).
  void discard() noexcept;

 private:
  std::string path_;
  std::string temp_;
  bool done_ = false;
};

// Writes `contents` to `path` atomically; OutputFileError naming the path when it cannot.
void write_file_atomically(const std::string& path, std::string_view contents);
// Writes what `write` puts on the stream to `path` atomically (binary mode); a stream error or
// an exception from `write` leaves `path` as it was (the exception propagates).
void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write);

// Several files written as one: add() writes each under its temporary name, commit() renames
// them all. Destroyed without a commit, every temporary is removed and no file is replaced.
class PendingFileSet {
 public:
  void add(const std::string& path, std::string_view contents);
  void commit();

 private:
  std::vector<PendingFile> files_;
};

// Checks up front that `path` can be written, without creating or changing it: creates and
// removes its temporary. OutputFileError ("path: cannot write file (reason)") when not.
void check_writable(const std::string& path);

}  // namespace octasim::models
