// Helpers of the firmware end-to-end tests that run the octasim binary (OCTASIM_BIN, defined by
// the test target) on a trace they wrote: one implementation, shared.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "tests/sim/sim_test_util.hpp"

namespace octasim::test {

// Runs `octasim ARGS` with stdout and stderr into *output; returns std::system's status.
inline int run_octasim(const std::string& args, std::string* output) {
  const TempDir logs("log");
  const std::string log = (logs.path() / "octasim.log").string();
  const std::string cmd = std::string(OCTASIM_BIN) + " " + args + " > " + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::stringstream s;
  s << std::ifstream(log).rdbuf();
  *output = s.str();
  return rc;
}

}  // namespace octasim::test
