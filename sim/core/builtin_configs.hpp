// The configurations built into the binary: sim/configs/*.json, embedded by CMake into the
// generated builtin_configs.cpp (sim/core/CMakeLists.txt); hw_config.cpp looks them up by name.
#pragma once

#include <cstddef>

namespace octasim {

struct BuiltinConfig {
  const char* name;
  const char* json;
};

extern const BuiltinConfig kBuiltinConfigs[];
extern const std::size_t kBuiltinConfigCount;

}  // namespace octasim
