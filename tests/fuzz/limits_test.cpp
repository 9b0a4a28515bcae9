// The resource limits the fuzzers led to (README "Reliability: fuzzing"): sizes read from an
// input file are checked before anything of that size is allocated, filled or read, and the
// error names the file and what was expected. Each input here once made a fuzz target exceed
// libFuzzer's -malloc_limit_mb / -rss_limit_mb or escape as the wrong exception.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "firmware/onnx/onnx_import.hpp"
#include "models/io/tensor_file.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/core/spec_config.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "sim/trace/txn_reader.hpp"

namespace octasim {
namespace {

// DRAM of a 64-bit address space (nv_full, nv_large), where the address range bounds nothing.
class WideDevice final : public trace::Device {
 public:
  void csb_write(std::uint32_t /*addr*/, std::uint32_t /*value*/) override {}
  std::uint32_t csb_read(std::uint32_t /*addr*/) override { return 0; }
  MemoryImage& memory() override { return dram; }
  bool wait_interrupt(unsigned /*bit*/, std::uint64_t /*timeout*/) override { return false; }
  void wait_cycles(std::uint64_t /*cycles*/) override {}
  std::uint64_t cycle() const override { return 0; }
  MemoryImage dram{64};
};

std::string play_error(const std::string& text) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string golden = (dir / "octasim_limits_golden.dat").string();
  std::ofstream(golden) << "{offset:0x0, size:1, payload:0x00}\n";
  WideDevice device;
  try {
    (void)trace::play(trace::parse_trace(text, (dir / "limits.cfg").string()), device, {});
  } catch (const trace::TraceError& e) {
    EXPECT_EQ(device.dram.mapped_bytes(), 0u) << "memory was allocated before the check";
    return e.what();
  }
  return "no error";
}

TEST(FuzzLimits, TraceRegionsAreAtMostOneGiB) {
  EXPECT_EQ(trace::kMaxRegionBytes, std::uint64_t{1} << 30);
  for (const std::string& line :
       {std::string("mem_init(pri_mem, 0x0, 0x40000001, ALL_ONE);"),
        std::string("mem_init(pri_mem, 0x80000000, 0x10000000000, RANDOM, 1);"),
        std::string("sync_notify(x, s);\ncheck_crc(s, 1, 0x0, 0x100000000, 0x0);"),
        std::string("sync_notify(x, s);\ncheck_file(s, 1, 0x0, 0x80000000, "
                    "\"octasim_limits_golden.dat\", FP16_SDP);")}) {
    const std::string msg = play_error(line);
    EXPECT_NE(msg.find("limits.cfg:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("beyond octasim's limit of 0x40000000 bytes (1 GiB)"), std::string::npos)
        << msg;
  }
}

std::string tensor_error(const onnx::TensorProto& tp) {
  const std::string path = (std::filesystem::temp_directory_path() / "octasim_limits.pb").string();
  {
    std::ofstream out(path, std::ios::binary);
    EXPECT_TRUE(tp.SerializeToOstream(&out));
  }
  try {
    (void)firmware::read_tensor_pb(path);
  } catch (const firmware::OnnxError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": tensor 'w' ", 0), 0u) << msg;
    return msg;
  }
  return "no error";
}

// The onnx target found a TensorProto whose dims multiply to ~2.4e13 elements with no data (the
// importer allocated the shape before comparing it with the data; regressions/onnx).
TEST(FuzzLimits, OnnxTensorShapeIsCheckedAgainstItsDataFirst) {
  onnx::TensorProto tp;
  tp.set_name("w");
  tp.set_data_type(onnx::TensorProto_DataType_FLOAT);
  for (int i = 0; i < 3; ++i) tp.add_dims(100000);
  EXPECT_NE(tensor_error(tp).find("has shape 100000x100000x100000: more than 2^31 elements"),
            std::string::npos);
  tp.clear_dims();
  tp.add_dims(1000);
  tp.add_dims(1000);
  tp.add_float_data(1.0F);
  tp.add_float_data(2.0F);
  EXPECT_NE(tensor_error(tp).find("has 2 values for shape 1000x1000 (1000000 float32"),
            std::string::npos);
  tp.clear_float_data();
  tp.set_raw_data(std::string(12, '\0'));
  EXPECT_NE(tensor_error(tp).find("has 12 bytes of data for shape 1000x1000"), std::string::npos);
  // 2^31 elements of int64 (16 GiB) with 8 bytes of data: refused, nothing allocated.
  tp.clear_dims();
  tp.add_dims(std::int64_t{1} << 31);
  tp.set_data_type(onnx::TensorProto_DataType_INT64);
  tp.set_raw_data(std::string(8, '\0'));
  EXPECT_NE(tensor_error(tp).find("has 8 bytes of data for shape 2147483648 (2147483648 int64"),
            std::string::npos);
}

TEST(FuzzLimits, ConfigurationNumberBeyondDoubleIsAJsonError) {
  try {
    (void)parse_hw_config(R"({"name": 1e400})", "big.json");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("big.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  }
}

// A .npy header naming 10^11 elements (400 GB of float32) over 16 bytes of data is refused from
// the header, before the values are allocated; so is a shape whose byte count overflows.
TEST(FuzzLimits, NpyShapeIsCheckedBeforeAllocating) {
  const auto npy = [](const std::string& shape) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
    header.resize(118, ' ');  // magic (6) + version (2) + length (2) + header = 128
    header += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    return bytes + header + std::string(16, '\0');
  };
  const auto error_of = [](const std::string& bytes) {
    try {
      (void)models::decode_npy("big.npy", reinterpret_cast<const unsigned char*>(bytes.data()),
                               bytes.size(), false);
    } catch (const models::TensorFileError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(npy("2, 2")), "no error");
  EXPECT_EQ(error_of(npy("100000, 1000000"))
                .rfind("big.npy: truncated data (shape needs "
                       "400000000000 bytes",
                       0),
            0u)
      << error_of(npy("100000, 1000000"));
  EXPECT_EQ(error_of(npy("4294967296, 4294967296")).rfind("big.npy: absurd shape", 0), 0u)
      << error_of(npy("4294967296, 4294967296"));
}

// A data file or include that is a device (/dev/zero: endless, /dev/stdin: blocks) is refused
// by name instead of being read until memory runs out.
TEST(FuzzLimits, DataFilesAndIncludesMustBeRegularFiles) {
  const auto error_of = [](const auto& parse) {
    try {
      parse();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string msg = error_of([] {
    (void)trace::parse_trace("mem_load(pri_mem, 0x80000000, \"/dev/zero\");", "/tmp/z.cfg");
  });
  EXPECT_EQ(msg, "/tmp/z.cfg:1: data file '/dev/zero' is not a regular file (/dev/zero)");
  msg = error_of(
      [] { (void)trace::parse_txn("load_mem 0x80000000 0x10 /dev/zero\n", "/tmp/z.txn", {}); });
  EXPECT_EQ(msg, "/tmp/z.txn:1: data file '/dev/zero' is not a regular file (/dev/zero)");
  const std::string spec = (std::filesystem::temp_directory_path() / "octasim_zero.spec").string();
  std::ofstream(spec) << "#define FEATURE_DATA_TYPE_INT8\n#include \"/dev/zero\"\n";
  msg = error_of([&] { (void)translate_spec_file(spec); });
  EXPECT_EQ(msg, spec + ":2: #include \"/dev/zero\": not a regular file (/dev/zero)");
  msg = error_of([] { (void)translate_spec_file("/dev/null"); });
  EXPECT_EQ(msg, "/dev/null: not a regular file (expected a spec file)");
}

}  // namespace
}  // namespace octasim
