#include "models/io/idx_file.hpp"

#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace octasim::models {
namespace {

// IDX bytes built by hand (independent of the reader): big-endian dimensions and elements.
std::string be(std::uint64_t v, int bytes) {
  std::string s(static_cast<std::size_t>(bytes), '\0');
  for (int i = 0; i < bytes; ++i) {
    s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * (bytes - 1 - i))) & 0xff);
  }
  return s;
}

std::string idx_header(unsigned type, const std::vector<std::uint32_t>& dims) {
  std::string s{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (const std::uint32_t d : dims) s += be(d, 4);
  return s;
}

std::string float_be(float f) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  return be(bits, 4);
}

std::string double_be(double d) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &d, 8);
  return be(bits, 8);
}

// One gzip member of `data` (zlib's deflate with the gzip wrapper).
std::string gzip(const std::string& data) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

class IdxFileTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = ::testing::TempDir() + "octasim_idx_" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : paths_) std::remove(p.c_str());
  }
  // The message of the TensorFileError reading `path` throws; checks it is one line starting
  // with the path.
  static std::string error_of(const std::string& path, std::size_t max_items = kIdxAllItems) {
    try {
      (void)read_idx(path, max_items);
    } catch (const TensorFileError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(path + ": ", 0), 0U) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      return msg;
    }
    return "(no error)";
  }

 private:
  std::vector<std::string> paths_;
};

TEST_F(IdxFileTest, ReadsUnsignedBytesPlainAndGzip) {
  std::string bytes = idx_header(0x08, {2, 3});
  for (const int v : {0, 1, 127, 128, 200, 255}) bytes += static_cast<char>(v);
  for (const bool gz : {false, true}) {
    const IdxArray a = read_idx(write(gz ? "u8.gz" : "u8", gz ? gzip(bytes) : bytes));
    EXPECT_EQ(a.type, IdxType::kUInt8);
    EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(a.file_items, 2U);
    EXPECT_EQ(a.ints, (std::vector<std::int64_t>{0, 1, 127, 128, 200, 255}));
    EXPECT_TRUE(a.floats.empty());
    EXPECT_EQ(a.as_floats(), (std::vector<float>{0, 1, 127, 128, 200, 255}));
  }
}

TEST_F(IdxFileTest, ReadsSignedIntegerTypesBigEndian) {
  std::string b8 = idx_header(0x09, {4});
  for (const int v : {0x80, 0xff, 0x00, 0x7f}) b8 += static_cast<char>(v);
  EXPECT_EQ(read_idx(write("i8", b8)).ints, (std::vector<std::int64_t>{-128, -1, 0, 127}));

  const std::string b16 =
      idx_header(0x0B, {4}) + be(0x8000, 2) + be(0xffff, 2) + be(0x1234, 2) + be(0x7fff, 2);
  const IdxArray s = read_idx(write("i16", b16));
  EXPECT_EQ(s.type, IdxType::kInt16);
  EXPECT_EQ(s.ints, (std::vector<std::int64_t>{-32768, -1, 0x1234, 32767}));

  const std::string b32 =
      idx_header(0x0C, {1, 3}) + be(0x80000000U, 4) + be(0x01020304, 4) + be(0xfffffffeU, 4);
  const IdxArray i = read_idx(write("i32.gz", gzip(b32)));
  EXPECT_EQ(i.type, IdxType::kInt32);
  EXPECT_EQ(i.shape, (std::vector<std::size_t>{1, 3}));
  EXPECT_EQ(i.ints, (std::vector<std::int64_t>{-2147483648LL, 0x01020304, -2}));
}

TEST_F(IdxFileTest, ReadsFloatAndDouble) {
  const std::string f = idx_header(0x0D, {3}) + float_be(-1.5F) + float_be(3.25e10F) +
                        float_be(std::numeric_limits<float>::denorm_min());
  const IdxArray a = read_idx(write("f32", f));
  EXPECT_EQ(a.type, IdxType::kFloat32);
  EXPECT_TRUE(a.ints.empty());
  EXPECT_EQ(a.floats,
            (std::vector<float>{-1.5F, 3.25e10F, std::numeric_limits<float>::denorm_min()}));

  // 0.1 rounds to float's nearest 0.1F; 1e300 is beyond FP32 (infinity); FLT_MAX + 2^102 (below
  // half an ulp of FLT_MAX) rounds back to FLT_MAX; -2^128 + 2^103 is the tie that rounds to -inf.
  const double flt_max = std::numeric_limits<float>::max();
  const std::string d = idx_header(0x0E, {5}) + double_be(0.1) + double_be(1e300) +
                        double_be(flt_max + std::ldexp(1.0, 102)) +
                        double_be(-(flt_max + std::ldexp(1.0, 103))) + double_be(-2.0);
  const IdxArray b = read_idx(write("f64.gz", gzip(d)));
  EXPECT_EQ(b.type, IdxType::kFloat64);
  ASSERT_EQ(b.floats.size(), 5U);
  EXPECT_EQ(b.floats[0], 0.1F);
  EXPECT_EQ(b.floats[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(b.floats[2], std::numeric_limits<float>::max());
  EXPECT_EQ(b.floats[3], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(b.floats[4], -2.0F);
}

TEST_F(IdxFileTest, MaxItemsCutsAxisZeroOnly) {
  std::string bytes = idx_header(0x08, {5, 2, 3});
  for (int v = 0; v < 30; ++v) bytes += static_cast<char>(v);
  const std::string path = write("items", bytes);
  const IdxArray two = read_idx(path, 2);
  EXPECT_EQ(two.shape, (std::vector<std::size_t>{2, 2, 3}));
  EXPECT_EQ(two.file_items, 5U);
  ASSERT_EQ(two.ints.size(), 12U);
  for (int v = 0; v < 12; ++v) EXPECT_EQ(two.ints[static_cast<std::size_t>(v)], v);
  EXPECT_EQ(read_idx(path, 5).ints.size(), 30U);
  EXPECT_EQ(read_idx(path, 99).shape, (std::vector<std::size_t>{5, 2, 3}));
  const IdxArray none = read_idx(path, 0);
  EXPECT_EQ(none.shape, (std::vector<std::size_t>{0, 2, 3}));
  EXPECT_TRUE(none.ints.empty());
  // The rest of the file is still checked: a truncated file fails even when its head suffices.
  EXPECT_NE(error_of(write("items_short", bytes.substr(0, bytes.size() - 1)), 1)
                .find("truncated IDX data"),
            std::string::npos);
}

TEST_F(IdxFileTest, ZeroDimensionsAndEmptyArrays) {
  const IdxArray scalar = read_idx(write("scalar", idx_header(0x0C, {}) + be(7, 4)));
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.file_items, 1U);
  EXPECT_EQ(scalar.ints, (std::vector<std::int64_t>{7}));
  const IdxArray empty = read_idx(write("empty", idx_header(0x0D, {0, 4})));
  EXPECT_EQ(empty.shape, (std::vector<std::size_t>{0, 4}));
  EXPECT_TRUE(empty.floats.empty());
}

TEST_F(IdxFileTest, ReadsConcatenatedGzipMembers) {
  const std::string bytes = idx_header(0x08, {4}) + std::string{1, 2, 3, 4};
  const IdxArray a = read_idx(write("multi.gz", gzip(bytes.substr(0, 6)) + gzip(bytes.substr(6))));
  EXPECT_EQ(a.ints, (std::vector<std::int64_t>{1, 2, 3, 4}));
}

TEST_F(IdxFileTest, RejectsMissingEmptyAndBadMagic) {
  const std::string missing = ::testing::TempDir() + "octasim_idx_no_such_file";
  EXPECT_NE(error_of(missing).find("cannot open"), std::string::npos);
  EXPECT_NE(error_of(write("zero", "")).find("expected a 4-byte IDX header"), std::string::npos);
  EXPECT_NE(error_of(write("short", std::string("\0\0", 2))).find("ends after 2 bytes"),
            std::string::npos);
  const std::string bad = error_of(write("magic", std::string("\x01\0\x08\x01", 4) + be(0, 4)));
  EXPECT_NE(bad.find("expected the IDX magic 00 00, got 01 00"), std::string::npos) << bad;
  // A .npy file is not IDX.
  EXPECT_NE(error_of(write("npy", "\x93NUMPY\x01")).find("IDX magic"), std::string::npos);
}

TEST_F(IdxFileTest, RejectsUnknownType) {
  for (const unsigned t : {0x00U, 0x07U, 0x0AU, 0x0FU, 0xffU}) {
    const std::string msg = error_of(write("type", idx_header(t, {1}) + "x"));
    EXPECT_NE(msg.find("unknown IDX type 0x"), std::string::npos) << msg;
  }
}

TEST_F(IdxFileTest, RejectsTruncatedHeaderAndData) {
  const std::string header = idx_header(0x0B, {2, 3});
  const std::string cut_dims = error_of(write("hdr", header.substr(0, 9)));
  EXPECT_NE(cut_dims.find("truncated IDX header: expected 2 big-endian uint32 dimensions"),
            std::string::npos)
      << cut_dims;
  const std::string data(11, '\x01');  // 2x3 shorts need 12 bytes
  const std::string cut = error_of(write("data", header + data));
  EXPECT_NE(cut.find("truncated IDX data: expected 12 bytes for short 2x3, got 11"),
            std::string::npos)
      << cut;
  // The same through gzip: the IDX content is short, the gzip stream itself is intact.
  EXPECT_NE(error_of(write("data.gz", gzip(header + data))).find("truncated IDX data"),
            std::string::npos);
}

TEST_F(IdxFileTest, RejectsTrailingBytes) {
  const std::string bytes = idx_header(0x08, {2}) + std::string{1, 2, 3};
  const std::string msg = error_of(write("trail", bytes));
  EXPECT_NE(msg.find("unexpected bytes after the 2 data bytes of ubyte 2"), std::string::npos)
      << msg;
  EXPECT_NE(error_of(write("trail.gz", gzip(bytes))).find("unexpected bytes after"),
            std::string::npos);
  // Garbage after a complete gzip member (not another member).
  const std::string good = idx_header(0x08, {2}) + std::string{1, 2};
  const std::string after = error_of(write("gztrail.gz", gzip(good) + "junk"));
  EXPECT_NE(after.find("after the gzip data, got 4 other bytes"), std::string::npos) << after;
}

TEST_F(IdxFileTest, RejectsCorruptAndTruncatedGzip) {
  std::string body;
  for (int i = 0; i < 4000; ++i) body += static_cast<char>((i * 7919) % 251);
  const std::string bytes = idx_header(0x08, {4000}) + body;
  const std::string gz = gzip(bytes);
  // A flipped byte in the deflate data or in the CRC-32 trailer.
  for (const std::size_t at : {gz.size() / 2, gz.size() - 6}) {
    std::string bad = gz;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    const std::string msg = error_of(write("corrupt.gz", bad));
    EXPECT_NE(msg.find("corrupt gzip data"), std::string::npos) << msg;
  }
  for (const std::size_t keep : {std::size_t{3}, std::size_t{20}, gz.size() / 2, gz.size() - 1}) {
    const std::string msg = error_of(write("cut.gz", gz.substr(0, keep)));
    EXPECT_NE(msg.find("gzip data ends early"), std::string::npos) << keep << ": " << msg;
  }
}

TEST_F(IdxFileTest, RejectsDimensionsBeyondMemory) {
  // 2^32-1 cubed 32-bit ints cannot be addressed; nothing is allocated for them.
  const std::string msg =
      error_of(write("huge", idx_header(0x0C, {0xffffffffU, 0xffffffffU, 0xffffffffU}) + "abcd"));
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
  // A plausible but lying header: 10^9 bytes claimed, 4 present.
  const std::string lie = error_of(write("lie.gz", gzip(idx_header(0x08, {1000000000U}) + "abcd")));
  EXPECT_NE(lie.find("expected 1000000000 bytes for ubyte 1000000000, got 4"), std::string::npos)
      << lie;
}

// Debian's dataset-fashion-mnist (scripts/install-deps.sh installs it).
const std::string kFashion = "/usr/share/datasets/fashion-mnist/";

bool exists(const std::string& path) {
  return std::ifstream(path).good();
}

TEST(IdxFashionMnist, TestLabels) {
  const std::string path = kFashion + "t10k-labels-idx1-ubyte.gz";
  if (!exists(path)) GTEST_SKIP() << path << " absent (Debian package dataset-fashion-mnist)";
  const IdxArray a = read_idx(path);
  EXPECT_EQ(a.type, IdxType::kUInt8);
  ASSERT_EQ(a.shape, (std::vector<std::size_t>{10000}));
  std::vector<int> per_class(10, 0);
  for (const std::int64_t v : a.ints) {
    ASSERT_GE(v, 0);
    ASSERT_LE(v, 9);
    ++per_class[static_cast<std::size_t>(v)];
  }
  // Fashion-MNIST's test set is balanced: 1,000 images of each of the 10 classes.
  for (const int n : per_class) EXPECT_EQ(n, 1000);
  // Its first labels (ankle boot, pullover, trouser, trouser, shirt), as published.
  EXPECT_EQ(std::vector<std::int64_t>(a.ints.begin(), a.ints.begin() + 5),
            (std::vector<std::int64_t>{9, 2, 1, 1, 6}));
}

TEST(IdxFashionMnist, TestImagesAndSubset) {
  const std::string path = kFashion + "t10k-images-idx3-ubyte.gz";
  if (!exists(path)) GTEST_SKIP() << path << " absent (Debian package dataset-fashion-mnist)";
  const IdxArray a = read_idx(path);
  EXPECT_EQ(a.type, IdxType::kUInt8);
  ASSERT_EQ(a.shape, (std::vector<std::size_t>{10000, 28, 28}));
  ASSERT_EQ(a.ints.size(), 10000U * 28 * 28);
  std::int64_t lo = 255;
  std::int64_t hi = 0;
  for (const std::int64_t v : a.ints) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 255);
  const IdxArray head = read_idx(path, 100);
  ASSERT_EQ(head.shape, (std::vector<std::size_t>{100, 28, 28}));
  EXPECT_EQ(head.file_items, 10000U);
  EXPECT_TRUE(std::equal(head.ints.begin(), head.ints.end(), a.ints.begin()));
}

}  // namespace
}  // namespace octasim::models
