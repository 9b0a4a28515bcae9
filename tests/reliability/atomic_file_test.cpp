// models/io/atomic_file: a file is replaced whole or not at all, and no temporary is left behind.
#include "models/io/atomic_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace octasim::models {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("octasim-atomic-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }
  [[nodiscard]] static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // The names in the directory, sorted, joined by spaces.
  [[nodiscard]] std::string listing() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.insert(e.path().filename().string());
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : " ") + n;
    return s;
  }

  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesAndReplacesWholeFiles) {
  write_file_atomically(path("a.json"), std::string_view("first\n"));
  EXPECT_EQ(read(path("a.json")), "first\n");
  write_file_atomically(path("a.json"), std::string_view("second, longer\n"));
  EXPECT_EQ(read(path("a.json")), "second, longer\n");
  EXPECT_EQ(listing(), "a.json");
}

TEST_F(AtomicFileTest, AReplacedFileKeepsItsPermissions) {
  write_file_atomically(path("a.json"), std::string_view("first\n"));
  fs::permissions(path("a.json"), fs::perms::owner_read | fs::perms::owner_write);
  write_file_atomically(path("a.json"), std::string_view("second\n"));
  EXPECT_EQ(fs::status(path("a.json")).permissions(),
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(read(path("a.json")), "second\n");
}

TEST_F(AtomicFileTest, AnExceptionWhileWritingLeavesTheOldFileAndNoTemporary) {
  write_file_atomically(path("r.json"), std::string_view("old\n"));
  EXPECT_THROW(write_file_atomically(path("r.json"),
                                     [](std::ostream& out) {
                                       out << "half of the new contents";
                                       throw std::runtime_error("the writer failed");
                                     }),
               std::runtime_error);
  EXPECT_EQ(read(path("r.json")), "old\n");
  EXPECT_EQ(listing(), "r.json");
  // And a new file that fails is never created.
  EXPECT_THROW(write_file_atomically(path("new.json"),
                                     [](std::ostream&) { throw std::runtime_error("no"); }),
               std::runtime_error);
  EXPECT_EQ(listing(), "r.json");
}

TEST_F(AtomicFileTest, PendingFileIsRemovedUnlessCommitted) {
  {
    PendingFile f(path("w.vcd"), ".vcd");
    EXPECT_EQ(f.path(), path("w.vcd"));
    EXPECT_EQ(f.temp_path(), path("w.vcd") + ".tmp." + std::to_string(::getpid()) + ".vcd");
    std::ofstream(f.temp_path()) << "waves";
    EXPECT_EQ(listing(), "w.vcd.tmp." + std::to_string(::getpid()) + ".vcd");
  }
  EXPECT_EQ(listing(), "");
  {
    PendingFile f(path("w.vcd"), ".vcd");
    std::ofstream(f.temp_path()) << "waves";
    f.commit();
  }
  EXPECT_EQ(listing(), "w.vcd");
  EXPECT_EQ(read(path("w.vcd")), "waves");
}

TEST_F(AtomicFileTest, AFileSetIsCommittedWholeOrNotAtAll) {
  write_file_atomically(path("b.dat"), std::string_view("old b"));
  {
    PendingFileSet set;
    set.add(path("a.dat"), "new a");
    set.add(path("b.dat"), "new b");
    // A third file in a missing directory fails: nothing is replaced.
    EXPECT_THROW(set.add(path("missing/c.cfg"), "c"), OutputFileError);
  }
  EXPECT_EQ(listing(), "b.dat");
  EXPECT_EQ(read(path("b.dat")), "old b");
  PendingFileSet set;
  set.add(path("a.dat"), "new a");
  set.add(path("b.dat"), "new b");
  set.commit();
  EXPECT_EQ(listing(), "a.dat b.dat");
  EXPECT_EQ(read(path("a.dat")), "new a");
  EXPECT_EQ(read(path("b.dat")), "new b");
}

TEST_F(AtomicFileTest, ErrorsNameThePathAndTheReason) {
  const std::string bad = path("no_such_dir/r.json");
  try {
    write_file_atomically(bad, std::string_view("x"));
    FAIL() << "expected OutputFileError";
  } catch (const OutputFileError& e) {
    EXPECT_EQ(e.path(), bad);
    EXPECT_EQ(std::string(e.what()), bad + ": cannot write file (No such file or directory)");
  }
  EXPECT_THROW(check_writable(bad), OutputFileError);
  EXPECT_THROW(check_writable(dir_.string()), OutputFileError);  // a directory
}

TEST_F(AtomicFileTest, CheckWritableCreatesAndChangesNothing) {
  check_writable(path("r.json"));
  EXPECT_EQ(listing(), "");
  write_file_atomically(path("r.json"), std::string_view("kept"));
  check_writable(path("r.json"));
  EXPECT_EQ(read(path("r.json")), "kept");
  EXPECT_EQ(listing(), "r.json");
}

TEST_F(AtomicFileTest, ASymbolicLinkIsKeptAndItsTargetReplaced) {
  write_file_atomically(path("target.json"), std::string_view("old"));
  fs::create_symlink(path("target.json"), path("link.json"));
  write_file_atomically(path("link.json"), std::string_view("new"));
  EXPECT_TRUE(fs::is_symlink(path("link.json")));
  EXPECT_EQ(read(path("target.json")), "new");
  EXPECT_EQ(listing(), "link.json target.json");
}

TEST_F(AtomicFileTest, ADeviceIsWrittenInPlace) {
  write_file_atomically("/dev/null", std::string_view("discarded"));
  check_writable("/dev/null");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

}  // namespace
}  // namespace octasim::models
