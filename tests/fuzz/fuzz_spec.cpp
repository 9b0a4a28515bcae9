// Fuzz target: NVDLA hardware spec files (sim/core/spec_config.cpp): the input is a .spec file
// beside a small projects.spec it may #include; translated, turned into configuration JSON, and
// that JSON parsed as a configuration. A malformed spec must give std::runtime_error.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/hw_config.hpp"
#include "sim/core/spec_config.hpp"
#include "tests/fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool init = [] {
    octasim::fuzz::write_scratch("projects.spec",
                                 "#if defined(NV_SMALL)\n#define MAC_ATOMIC_C_SIZE_8\n"
                                 "#elif defined(NV_LARGE)\n#define MAC_ATOMIC_C_SIZE_64\n"
                                 "#else\n#error unknown project\n#endif\n");
    return true;
  }();
  (void)init;
  const std::string path = octasim::fuzz::write_scratch("nv_fuzz.spec", data, size);
  try {
    const octasim::SpecTranslation t = octasim::translate_spec_file(path);
    (void)octasim::spec_notes(t);
    const nlohmann::json j = octasim::spec_config_json(t);
    (void)octasim::parse_hw_config(j.dump(), path);
  } catch (const std::runtime_error& e) {
    octasim::fuzz::rejected(e);
  }
  return 0;
}
