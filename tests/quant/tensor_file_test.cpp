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
      {"int.npy",
       npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", std::string(16, 0)),
       "unsupported dtype '<i4'"},
      {"fortran.npy",
       npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", std::string(16, 0)),
       "Fortran-order"},
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

}  // namespace
}  // namespace octasim::models
