#include "models/io/tensor_file.hpp"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace octasim::models {
namespace {

// Writes a .npy file byte by byte (independent of write_npy_float32).
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const std::size_t pre = major == 1 ? 10 : 12;
  while ((pre + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major != 1) {
    out += '\0';
    out += '\0';
  }
  return out + header + data;
}

std::string le32(std::uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

std::string le16(unsigned v) {
  return std::string{static_cast<char>(v & 0xff), static_cast<char>((v >> 8) & 0xff)};
}

// CRC-32 (ZIP's: reflected 0xEDB88320), bit by bit, independent of models/numerics/crc32.
std::uint32_t zip_crc(const std::string& s) {
  std::uint32_t c = 0xffffffffu;
  for (const char ch : s) {
    c ^= static_cast<unsigned char>(ch);
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// A raw deflate stream of one stored block (BFINAL=1, BTYPE=00): valid input for inflate.
std::string deflate_stored(const std::string& data) {
  const auto n = static_cast<unsigned>(data.size());
  return std::string(1, '\x01') + le16(n) + le16(~n & 0xffff) + data;
}

struct ZipEntry {
  std::string name;
  std::string data;      // uncompressed
  bool deflate = false;  // stored otherwise
};

// A ZIP archive as the APPNOTE lays it out: local headers + data, central directory, end record.
std::string zip_bytes(const std::vector<ZipEntry>& entries) {
  std::string out;
  std::string dir;
  for (const ZipEntry& e : entries) {
    const std::string body = e.deflate ? deflate_stored(e.data) : e.data;
    const std::string common = le16(e.deflate ? 8 : 0) + le16(0) + le16(0) + le32(zip_crc(e.data)) +
                               le32(static_cast<std::uint32_t>(body.size())) +
                               le32(static_cast<std::uint32_t>(e.data.size())) +
                               le16(static_cast<unsigned>(e.name.size())) + le16(0);
    dir += le32(0x02014b50) + le16(20) + le16(20) + le16(0) + common + le16(0) + le16(0) + le16(0) +
           le32(0) + le32(static_cast<std::uint32_t>(out.size())) + e.name;
    out += le32(0x04034b50) + le16(20) + le16(0) + common + e.name + body;
  }
  const auto n = static_cast<unsigned>(entries.size());
  const auto offset = static_cast<std::uint32_t>(out.size());
  out += dir + le32(0x06054b50) + le16(0) + le16(0) + le16(n) + le16(n) +
         le32(static_cast<std::uint32_t>(dir.size())) + le32(offset) + le16(0);
  return out;
}

class TensorFileTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = ::testing::TempDir() + "octasim_tf_" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : paths_) std::remove(p.c_str());
  }
  // The message of the TensorFileError reading `path` throws.
  static std::string error_of(const std::string& path) {
    try {
      (void)read_tensor_file(path);
    } catch (const TensorFileError& e) {
      return e.what();
    }
    return "(no error)";
  }
  // The same through read_npy (the path ONNX and `octasim net` inputs take).
  static std::string npy_error_of(const std::string& path, bool integers) {
    try {
      (void)read_npy(path, integers);
    } catch (const TensorFileError& e) {
      return e.what();
    }
    return "(no error)";
  }

 private:
  std::vector<std::string> paths_;
};

TEST_F(TensorFileTest, Float32TwoByThree) {
  std::string data;
  for (const std::uint32_t b :
       {0x3f800000u, 0xc0000000u, 0x3e800000u, 0u, 0x41200000u, 0xbf000000u}) {
    data += le32(b);
  }
  const auto t = read_tensor_file(write(
      "f4.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data)));
  EXPECT_EQ(t.shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(t.dtype, "float32");
  EXPECT_EQ(t.values, (std::vector<float>{1.0f, -2.0f, 0.25f, 0.0f, 10.0f, -0.5f}));
}

TEST_F(TensorFileTest, Float16Float64BigEndianAndVersion2) {
  // float16: 0x3c00 = 1, 0xc000 = -2, 0x3555 = 0.333251953125
  const std::string f2 = std::string("\x00\x3c\x00\xc0\x55\x35", 6);
  auto t = read_tensor_file(
      write("f2.npy", npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", f2)));
  EXPECT_EQ(t.dtype, "float16");
  EXPECT_EQ(t.values, (std::vector<float>{1.0f, -2.0f, 0.333251953125f}));

  // float64 0.1 rounds to the nearest float32.
  const std::string f8 = std::string("\x9a\x99\x99\x99\x99\x99\xb9\x3f", 8);
  t = read_tensor_file(
      write("f8.npy", npy_bytes("{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (1, 1, "
                                "1), }",
                                f8, 2)));
  EXPECT_EQ(t.shape, (std::vector<std::size_t>{1, 1, 1}));
  EXPECT_EQ(t.values, (std::vector<float>{0.1f}));

  // big-endian float32 1.5 = 0x3fc00000; 0-d array.
  t = read_tensor_file(
      write("be.npy", npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (), }",
                                std::string("\x3f\xc0\x00\x00", 4))));
  EXPECT_TRUE(t.shape.empty());
  EXPECT_EQ(t.values, (std::vector<float>{1.5f}));
}

TEST_F(TensorFileTest, RoundTripWithTheWriter) {
  const std::string path = ::testing::TempDir() + "octasim_tf_rt.npy";
  const std::vector<float> v = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  write_npy_float32(path, {3, 2}, v);
  const auto t = read_npy(path);
  EXPECT_EQ(t.shape, (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(t.values, v);
  write_npy_float32(path, {6}, v);
  EXPECT_EQ(read_npy(path).shape, (std::vector<std::size_t>{6}));
  std::remove(path.c_str());
}

TEST_F(TensorFileTest, RawFloat32) {
  const std::string path = write("raw.bin", le32(0x3f800000u) + le32(0x40000000u));
  const auto t = read_tensor_file(path);
  EXPECT_EQ(t.shape, (std::vector<std::size_t>{2}));
  EXPECT_EQ(t.values, (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(read_tensor_file(path, {2, 1}).shape, (std::vector<std::size_t>{2, 1}));
  EXPECT_THROW((void)read_tensor_file(path, {3}), TensorFileError);
  EXPECT_NE(error_of(write("odd.bin", "12345")).find("not a multiple of 4"), std::string::npos);
}

TEST_F(TensorFileTest, ClearErrors) {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
  struct Case {
    const char* name;
    std::string bytes;
    const char* message;
  };
  const Case cases[] = {
      {"magic.npy", "NOTNUMPY" + std::string(80, ' '), "not a NumPy .npy file"},
      {"trunc.npy", npy_bytes(ok_dict, le32(0) + le32(0)), "truncated data"},
      {"extra.npy", npy_bytes(ok_dict, std::string(20, '\0')), "unexpected bytes"},
      {"complex.npy",
       npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", std::string(16, 0)),
       "unsupported dtype '<c8' (complex numbers)"},
      {"string.npy",
       npy_bytes("{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }", std::string(16, 0)),
       "unsupported dtype '<U4'"},
      {"object.npy",
       npy_bytes("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }",
                 "\x80\x02]q\x00(K\x01K\x02e."),
       "object arrays (dtype '|O'"},
      {"struct.npy",
       npy_bytes("{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }",
                 std::string(8, 0)),
       "structured arrays"},
      {"absurd.npy",
       npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), "
                 "}",
                 std::string(8, 0)),
       "absurd shape (4294967296, 4294967296, 16)"},
      {"huge.npy",
       npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }",
                 std::string(8, 0)),
       "truncated data (shape needs 4000000000000 bytes of float32, file has 8)"},
      {"header.npy", npy_bytes("{'descr': '<f4', 'shape': (4,), }", std::string(16, 0)),
       "malformed .npy header"},
      {"garbage.npy",
       npy_bytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4,), }", std::string(16, 0)),
       "malformed .npy header"},
      {"version.npy", std::string("\x93NUMPY\x09\x00\x10\x00", 10) + std::string(16, ' '),
       "unsupported .npy format version 9"},
      {"short.npy", std::string("\x93NUMPY\x01\x00\xff\x00", 10), "truncated .npy header"},
  };
  for (const Case& c : cases) {
    const std::string path = write(c.name, c.bytes);
    const std::string msg = error_of(path);
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;  // starts with the path
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_NE(error_of(::testing::TempDir() + "no_such_file.npy").find("cannot open"),
            std::string::npos);
}

TEST_F(TensorFileTest, IntegersBoolAndFortranOrder) {
  const std::string i4 = le32(0xffffffffu) + le32(7) + le32(0x80000000u) + le32(16777217);
  const std::string path =
      write("i4.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", i4));
  // The clip command reads integers (read_tensor_file); an ONNX initializer .npy must be float.
  const auto t = read_tensor_file(path);
  EXPECT_EQ(t.dtype, "int32");
  // 16777217 = 2^24 + 1 rounds to nearest-even 2^24 in float32.
  EXPECT_EQ(t.values, (std::vector<float>{-1.0f, 7.0f, -2147483648.0f, 16777216.0f}));
  EXPECT_NE(npy_error_of(path, false)
                .find("unsupported dtype '<i4' (expected float16, float32 or "
                      "float64)"),
            std::string::npos);
  // Big-endian uint16 and bool.
  auto u = read_tensor_file(
      write("u2.npy", npy_bytes("{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }",
                                std::string("\xff\xfe\x01\x00", 4))));
  EXPECT_EQ(u.dtype, "uint16");
  EXPECT_EQ(u.values, (std::vector<float>{65534.0f, 256.0f}));
  u = read_tensor_file(
      write("b1.npy", npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                std::string("\x01\x00\x01", 3))));
  EXPECT_EQ(u.dtype, "bool");
  EXPECT_EQ(u.values, (std::vector<float>{1.0f, 0.0f, 1.0f}));
  // Fortran order: the 2x3 matrix [[1, 2, 3], [4, 5, 6]] is stored by columns 1 4 2 5 3 6.
  std::string cols;
  for (const std::uint32_t b :
       {0x3f800000u, 0x40800000u, 0x40000000u, 0x40a00000u, 0x40400000u, 0x40c00000u}) {
    cols += le32(b);
  }
  const auto f = read_tensor_file(
      write("fortran.npy",
            npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", cols)));
  EXPECT_EQ(f.shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(f.values, (std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}));
}

TEST_F(TensorFileTest, NpzMembersStoredAndDeflated) {
  const std::string a = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                  le32(0x3f800000u) + le32(0xc0000000u));
  const std::string b =
      npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", "\x01\x02\xff");
  const std::string path = write("two.npz", zip_bytes({{"a.npy", a, false}, {"b.npy", b, true}}));
  EXPECT_EQ(read_tensor_file(path + ":a").values, (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(read_tensor_file(path + ":b.npy").values, (std::vector<float>{1.0f, 2.0f, 255.0f}));
  EXPECT_EQ(read_npy(path + ":a").values, (std::vector<float>{1.0f, -2.0f}));
  const std::string lone = write("lone.npz", zip_bytes({{"x.npy", a, true}}));
  EXPECT_EQ(read_tensor_file(lone).values, (std::vector<float>{1.0f, -2.0f}));

  // Errors name the archive (and member) and say what was expected.
  EXPECT_EQ(error_of(path),
            path + ": an .npz archive of 2 arrays (a, b): name one as " + path + ":NAME");
  EXPECT_EQ(error_of(path + ":c"), path + ": no array 'c' in the .npz archive (it holds: a, b)");
  const std::string bad_member = write(
      "badmember.npz",
      zip_bytes({{"o.npy", npy_bytes("{'descr': '|O', 'fortran_order': False, 'shape': (), }", "x"),
                  false}}));
  EXPECT_EQ(error_of(bad_member).rfind(bad_member + ":o: object arrays", 0), 0u)
      << error_of(bad_member);
}

TEST_F(TensorFileTest, CorruptNpzArchives) {
  const std::string a =
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", le32(0) + le32(0));
  const std::string good = zip_bytes({{"a.npy", a, true}});
  std::string flipped = good;
  flipped[60] = static_cast<char>(flipped[60] ^ 0x20);  // a header byte of the member's .npy
  std::string impossible = good;
  // The local and central headers' uncompressed size: 4 GB from a 100-odd-byte deflate stream.
  const std::size_t central = good.find(std::string("PK\x01\x02", 4));
  impossible.replace(central + 24, 4, le32(0xfffffff0u));
  std::string method = good;
  method.replace(central + 10, 2, le16(12));  // bzip2
  struct Case {
    const char* name;
    std::string bytes;
    const char* message;
  };
  const Case cases[] = {
      {"trunc.npz", good.substr(0, good.size() / 2), "expected an end-of-central-directory"},
      {"cut.npz", good.substr(0, 40) + good.substr(good.size() - 22 - 51),
       "not a valid .npz/ZIP archive"},
      {"crc.npz", flipped, "CRC-32 mismatch"},
      {"impossible.npz", impossible, "(impossible)"},
      {"method.npz", method, "compression method 12 is not supported"},
      {"notzip.npz", "this is text, not an archive", "not a NumPy .npz archive"},
  };
  for (const Case& c : cases) {
    const std::string path = write(c.name, c.bytes);
    const std::string msg = error_of(path);
    EXPECT_EQ(msg.rfind(path, 0), 0u) << msg;  // starts with the path
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace octasim::models
