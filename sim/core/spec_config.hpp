// NVDLA's hardware spec files (spec/defs/*.spec: nv_small.spec, nv_large.spec, ...) read
// directly as octasim configurations. A spec file is C-preprocessor text: `#define NAME` lines
// whose value is spelled in the name (MAC_ATOMIC_C_SIZE_64, SDP_EW_DISABLE), `#include "file"`,
// and (in projects.spec, included at the end of each) `#if defined(..)` / `#elif` / `#else` /
// `#endif` blocks whose `#error` lines check the defines and whose `%define` lines derive values
// from them.
//
// The path: spec text -> the defines of the file and its includes -> a JSON object of octasim
// configuration keys -> parse_hw_config, so validation and its errors are the JSON
// configurations' own.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/hw_config.hpp"

namespace octasim {

// One `#define` of a spec file, where it was written.
struct SpecDefine {
  std::string name;   // MAC_ATOMIC_C_SIZE_64
  std::string value;  // the text after the name ("" in NVDLA's style, where the name says it)
  std::string file;
  int line = 0;

  [[nodiscard]] std::string where() const { return file + ":" + std::to_string(line); }
};

// What a spec file says, in octasim's configuration keys.
struct SpecTranslation {
  std::string path;
  std::string project;               // the file's stem: nv_medium_512
  nlohmann::json keys;               // octasim key -> value, for every define that has a key
  std::vector<SpecDefine> mapped;    // the defines that set keys, in file order
  std::vector<SpecDefine> unmapped;  // defines with no octasim key (yet): ignored
  // The #error lines reached (name "#error", value the message): projects.spec's checks are
  // NVDLA master's RTL generator's, which refuse nv_full.spec (from nvdlav1: 512-bit interface,
  // no FEATURE_DATA_TYPE_INT8); octasim validates the values it models itself, so these are notes.
  std::vector<SpecDefine> failed_checks;
};

// Whether a --config argument or a JSON "base" names a spec file (ends in ".spec").
[[nodiscard]] bool is_spec_path(const std::string& name_or_path);

// Reads a spec file and its includes in order, as the C preprocessor does (#if blocks select
// lines), and maps its defines to octasim keys. Throws std::runtime_error "file:line: what was
// expected" for a line it cannot read, an include that does not exist or includes itself, a
// non-numeric value where a number is needed, or two defines giving one setting different values.
[[nodiscard]] SpecTranslation translate_spec_file(const std::string& path);

// The configuration JSON a spec stands for: its keys on top of a base — the built-in
// configuration named like the spec's project (nv_small.spec -> nv_small) if there is one, else
// nv_small (whose model-timing keys, not in any spec, are the calibrated ones) — with "name" the
// project and a "description" naming the file and the base.
[[nodiscard]] nlohmann::json spec_config_json(const SpecTranslation& t);

// One line per #error reached ("file:line: NVDLA's check fails: #error ...") and per unmapped
// define ("file:line: NAME has no octasim configuration key (ignored)").
[[nodiscard]] std::vector<std::string> spec_notes(const SpecTranslation& t);

// translate_spec_file + spec_config_json + parse_hw_config; a validation error names the spec
// file and the defines that set the keys it is about. Appends spec_notes to `notes` if given.
[[nodiscard]] HwConfig load_spec_config(const std::string& path, std::vector<std::string>* notes);

}  // namespace octasim
