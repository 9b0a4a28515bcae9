// Fuzz target: configuration JSON (sim/core/hw_config.cpp, parse_hw_config). A configuration
// it accepts must print back (hw_config_json) to JSON that parses to the same text. A malformed
// one must give std::runtime_error (nlohmann's parse errors derive from std::exception and are
// turned into std::runtime_error naming the source).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "sim/core/hw_config.hpp"
#include "tests/fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const octasim::HwConfig c = octasim::parse_hw_config(text, "fuzz.json");
    const std::string back = octasim::hw_config_json(c);
    if (octasim::hw_config_json(octasim::parse_hw_config(back, "round trip")) != back) {
      std::abort();  // an accepted configuration must round-trip
    }
  } catch (const std::runtime_error& e) {
    octasim::fuzz::rejected(e);
  }
  return 0;
}
