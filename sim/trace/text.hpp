// Text helpers the trace readers share (trace_parser.cpp, txn_data.cpp, txn_reader.cpp).
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace octasim::trace {

// `s` without leading and trailing white space.
[[nodiscard]] inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The directory part of a path ("." for a bare file name): where relative file names in a trace
// are resolved.
[[nodiscard]] inline std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

}  // namespace octasim::trace
