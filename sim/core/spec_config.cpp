#include "sim/core/spec_config.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>

#include <fmt/core.h>

namespace octasim {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail_at(const std::string& file, int line, const std::string& msg) {
  throw std::runtime_error(fmt::format("{}:{}: {}", file, line, msg));
}

std::string trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// The identifier at the start of `s` ("" if none).
std::string leading_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return {};
  std::size_t n = 0;
  while (n < s.size() && identifier_char(s[n])) ++n;
  return std::string(s.substr(0, n));
}

// ---- Reading: a C preprocessor for what spec files hold. ----

// An #if / #elif expression: defined(NAME) / defined NAME combined with !, && and || and
// parentheses, or an integer.
class IfExpression {
 public:
  IfExpression(const std::string& file, int line, const std::string& text,
               const std::map<std::string, std::size_t>& defined)
      : file_(file), line_(line), s_(text), defined_(defined) {}

  bool evaluate() {
    const bool v = disjunction();
    skip_space();
    if (pos_ != s_.size()) fail();
    return v;
  }

 private:
  [[noreturn]] void fail() const {
    fail_at(file_, line_,
            fmt::format("#if expression '{}' not understood (expected defined(NAME) combined "
                        "with !, && and ||, or an integer)",
                        s_));
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view token) {
    skip_space();
    if (s_.compare(pos_, token.size(), token) != 0) return false;
    pos_ += token.size();
    return true;
  }
  bool disjunction() {
    bool v = conjunction();
    while (eat("||")) v = conjunction() || v;
    return v;
  }
  bool conjunction() {
    bool v = unary();
    while (eat("&&")) v = unary() && v;
    return v;
  }
  bool unary() {
    if (eat("!")) return !unary();
    if (eat("(")) {
      const bool v = disjunction();
      if (!eat(")")) fail();
      return v;
    }
    skip_space();
    const std::string word = leading_identifier(std::string_view(s_).substr(pos_));
    if (word == "defined") {
      pos_ += word.size();
      const bool paren = eat("(");
      skip_space();
      const std::string name = leading_identifier(std::string_view(s_).substr(pos_));
      if (name.empty()) fail();
      pos_ += name.size();
      if (paren && !eat(")")) fail();
      return defined_.count(name) != 0;
    }
    std::size_t n = 0;
    while (pos_ + n < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_ + n]))) ++n;
    if (n == 0) fail();
    const bool v = s_.find_first_not_of('0', pos_) < pos_ + n;
    pos_ += n;
    return v;
  }

  const std::string& file_;
  int line_;
  const std::string& s_;
  const std::map<std::string, std::size_t>& defined_;
  std::size_t pos_ = 0;
};

// `line` without comments; `in_block` carries an open /* comment across lines.
std::string strip_comments(const std::string& line, bool& in_block) {
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (in_block) {
      if (line.compare(i, 2, "*/") == 0) {
        in_block = false;
        ++i;
      }
    } else if (line.compare(i, 2, "/*") == 0) {
      in_block = true;
      ++i;
      out += ' ';
    } else if (line.compare(i, 2, "//") == 0) {
      break;
    } else {
      out += line[i];
    }
  }
  return out;
}

// Reads a spec file the way the C preprocessor does, in order: `#define`s collect, `#include`
// reads a file in place, #if / #ifdef / #ifndef / #elif / #else / #endif select lines, and an
// #error reached is recorded (projects.spec's checks; see translate_spec_file). `%define` lines
// (projects.spec's derived values) are skipped: they follow from the defines.
class SpecReader {
 public:
  void read(const std::string& path) {
    if (!std::ifstream(path)) {
      throw std::runtime_error(fmt::format("{}: cannot open spec file", path));
    }
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      throw std::runtime_error(fmt::format("{}: not a regular file (expected a spec file)", path));
    }
    read_file(path);
  }

  std::vector<SpecDefine> defines;
  std::vector<SpecDefine> errors;  // #error lines reached: name "#error", value the message

 private:
  struct Frame {  // one open #if
    int line;
    bool parent_active;
    bool taken;  // some branch so far was true
    bool active;
  };

  void read_file(const std::string& path);
  void read_line(const std::string& path, int line_no, const std::string& text,
                 std::vector<Frame>& frames);
  bool conditional(const std::string& path, int line_no, const std::string& word,
                   const std::string& rest, std::vector<Frame>& frames);
  void define(const std::string& path, int line_no, const std::string& rest);
  void include(const std::string& path, int line_no, const std::string& rest);

  std::map<std::string, std::size_t> defined_;  // name -> index into defines
  std::vector<fs::path> reading_;               // the include chain, to refuse a cycle
  std::vector<std::string> reading_names_;
};

void SpecReader::read_file(const std::string& path) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  reading_.push_back(ec ? fs::path(path) : canonical);
  reading_names_.push_back(path);
  std::ifstream in(path);
  std::string raw;
  int line_no = 0;
  bool in_block = false;
  std::vector<Frame> frames;  // this file's open #if blocks: each file closes its own
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string text = trim(strip_comments(raw, in_block));
    if (!text.empty()) read_line(path, line_no, text, frames);
  }
  if (!frames.empty()) fail_at(path, frames.back().line, "#if without a matching #endif");
  reading_.pop_back();
  reading_names_.pop_back();
}

void SpecReader::read_line(const std::string& path, int line_no, const std::string& text,
                           std::vector<Frame>& frames) {
  const bool active = frames.empty() || frames.back().active;
  const bool directive = text[0] == '#';
  const std::string rest0 = directive ? trim(text.substr(1)) : text;
  const std::string word = directive ? leading_identifier(rest0) : "";
  const std::string rest = trim(std::string_view(rest0).substr(word.size()));
  if (directive && conditional(path, line_no, word, rest, frames)) return;
  if (!active) return;
  if (!directive) {
    if (text.rfind("%define", 0) == 0 && !leading_identifier(trim(text.substr(7))).empty()) {
      return;
    }
    fail_at(path, line_no, fmt::format("expected a #define, #include or #if line, got '{}'", text));
  }
  if (word == "define") {
    define(path, line_no, rest);
  } else if (word == "include") {
    include(path, line_no, rest);
  } else if (word == "error") {
    std::string msg = rest;
    if (msg.size() >= 2 && msg.front() == '"' && msg.back() == '"') {
      msg = trim(msg.substr(1, msg.size() - 2));
    }
    errors.push_back({"#error", msg, path, line_no});
  } else {
    fail_at(path, line_no,
            fmt::format("unsupported directive '#{}' (expected #define, #include, #if, #ifdef, "
                        "#ifndef, #elif, #else, #endif or #error)",
                        word));
  }
}

// Handles #if, #ifdef, #ifndef, #elif, #else and #endif; false for another directive.
bool SpecReader::conditional(const std::string& path, int line_no, const std::string& word,
                             const std::string& rest, std::vector<Frame>& frames) {
  const bool active = frames.empty() || frames.back().active;
  if (word == "if" || word == "ifdef" || word == "ifndef") {
    const std::string name = leading_identifier(rest);
    if (word != "if" && (name.empty() || name.size() != rest.size())) {
      fail_at(path, line_no, fmt::format("expected #{} NAME, got '#{} {}'", word, word, rest));
    }
    if (rest.empty()) fail_at(path, line_no, "expected #if EXPRESSION");
    bool v = false;
    if (active) {
      v = word == "if" ? IfExpression(path, line_no, rest, defined_).evaluate()
                       : (defined_.count(name) != 0) == (word == "ifdef");
    }
    frames.push_back({line_no, active, v, v});
    return true;
  }
  if (word != "elif" && word != "else" && word != "endif") return false;
  if (frames.empty()) fail_at(path, line_no, fmt::format("#{} without #if", word));
  Frame& f = frames.back();
  if (word == "elif") {
    if (rest.empty()) fail_at(path, line_no, "expected #elif EXPRESSION");
    f.active =
        f.parent_active && !f.taken && IfExpression(path, line_no, rest, defined_).evaluate();
    f.taken = f.taken || f.active;
  } else if (word == "else") {
    f.active = f.parent_active && !f.taken;
    f.taken = true;
  } else {
    frames.pop_back();
  }
  return true;
}

void SpecReader::define(const std::string& path, int line_no, const std::string& rest) {
  const std::string name = leading_identifier(rest);
  if (name.empty())
    fail_at(path, line_no, fmt::format("expected #define NAME, got '#define {}'", rest));
  if (rest.size() > name.size() && rest[name.size()] == '(') {
    fail_at(path, line_no,
            fmt::format("#define {}(...): macros with arguments are not spec settings "
                        "(expected #define NAME or #define NAME VALUE)",
                        name));
  }
  const std::string value = trim(std::string_view(rest).substr(name.size()));
  const auto it = defined_.find(name);
  if (it != defined_.end()) {
    const SpecDefine& before = defines[it->second];
    if (before.value != value) {
      fail_at(path, line_no,
              fmt::format("#define {} {} redefines it ('{}' at {})", name, value, before.value,
                          before.where()));
    }
    return;
  }
  defined_.emplace(name, defines.size());
  defines.push_back({name, value, path, line_no});
}

void SpecReader::include(const std::string& path, int line_no, const std::string& rest) {
  if (rest.size() < 3 || rest.front() != '"' || rest.back() != '"') {
    fail_at(path, line_no, fmt::format("expected #include \"FILE\", got '#include {}'", rest));
  }
  const std::string name = rest.substr(1, rest.size() - 2);
  const fs::path dir = fs::path(path).parent_path();
  const std::string target = name[0] == '/' || dir.empty() ? name : (dir / name).string();
  if (!std::ifstream(target)) {
    fail_at(path, line_no, fmt::format("#include \"{}\": no such file ({})", name, target));
  }
  std::error_code ec;
  if (!fs::is_regular_file(target, ec)) {  // a device or FIFO (/dev/zero) would be read forever
    fail_at(path, line_no, fmt::format("#include \"{}\": not a regular file ({})", name, target));
  }
  const fs::path canonical = fs::weakly_canonical(target, ec);
  for (std::size_t i = 0; i < reading_.size(); ++i) {
    if (reading_[i] == (ec ? fs::path(target) : canonical)) {
      std::string chain;
      for (std::size_t j = i; j < reading_names_.size(); ++j) chain += reading_names_[j] + " -> ";
      fail_at(path, line_no,
              fmt::format("#include \"{}\": include cycle ({}{})", name, chain, reading_names_[i]));
    }
  }
  read_file(target);
}

// ---- The define -> key table. ----

enum class Form { kFlag, kSwitch, kNumber };

struct DefineMapping {
  const char* define;  // kFlag: the whole name; kSwitch: NAME of NAME_ENABLE / NAME_DISABLE;
                       // kNumber: NAME of NAME_<n> (NVDLA's spelling) or `#define NAME <n>`
  Form form;
  const char* key;  // the octasim key; nullptr: none. A key octasim does not have (yet) counts
                    // as none, so a row for a key being added starts mapping when it lands.
};

// clang-format off
const DefineMapping kDefineMap[] = {
    {"FEATURE_DATA_TYPE_INT8",  Form::kFlag,   "feature_int8"},
    {"FEATURE_DATA_TYPE_INT16", Form::kFlag,   "feature_int16"},
    {"FEATURE_DATA_TYPE_FP16",  Form::kFlag,   "feature_fp16"},
    {"WEIGHT_DATA_TYPE_INT8",   Form::kFlag,   nullptr},  // weights follow the feature types
    {"WEIGHT_DATA_TYPE_INT16",  Form::kFlag,   nullptr},
    {"WEIGHT_DATA_TYPE_FP16",   Form::kFlag,   nullptr},
    {"WEIGHT_COMPRESSION",      Form::kSwitch, "weight_compression"},
    {"WINOGRAD",                Form::kSwitch, "winograd"},
    {"BATCH",                   Form::kSwitch, "batch"},
    {"SECONDARY_MEMIF",         Form::kSwitch, "secondary_memif"},
    {"SDP_LUT",                 Form::kSwitch, "sdp_lut"},
    {"SDP_BS",                  Form::kSwitch, "sdp_bs"},
    {"SDP_BN",                  Form::kSwitch, "sdp_bn"},
    {"SDP_EW",                  Form::kSwitch, "sdp_ew"},
    {"BDMA",                    Form::kSwitch, "bdma"},
    {"RUBIK",                   Form::kSwitch, "rubik"},
    {"RUBIK_CONTRACT",          Form::kSwitch, nullptr},
    {"RUBIK_RESHAPE",           Form::kSwitch, nullptr},
    {"PDP",                     Form::kSwitch, "pdp"},
    {"CDP",                     Form::kSwitch, "cdp"},
    {"RETIMING",                Form::kSwitch, nullptr},
    {"MAC_ATOMIC_C_SIZE",       Form::kNumber, "mac_atomic_c"},
    {"MAC_ATOMIC_K_SIZE",       Form::kNumber, "mac_atomic_k"},
    {"MEMORY_ATOMIC_SIZE",      Form::kNumber, "memory_atomic_size"},
    {"MAX_BATCH_SIZE",          Form::kNumber, nullptr},
    {"CBUF_BANK_NUMBER",        Form::kNumber, "cbuf_bank_number"},
    {"CBUF_BANK_WIDTH",         Form::kNumber, "cbuf_bank_width"},
    {"CBUF_BANK_DEPTH",         Form::kNumber, "cbuf_bank_depth"},
    {"SDP_BS_THROUGHPUT",       Form::kNumber, "sdp_bs_throughput"},
    {"SDP_BN_THROUGHPUT",       Form::kNumber, "sdp_bn_throughput"},
    {"SDP_EW_THROUGHPUT",       Form::kNumber, "sdp_ew_throughput"},
    {"PDP_THROUGHPUT",          Form::kNumber, "pdp_throughput"},
    {"CDP_THROUGHPUT",          Form::kNumber, "cdp_throughput"},
    {"PRIMARY_MEMIF_LATENCY",   Form::kNumber, "primary_memif_latency"},
    {"PRIMARY_MEMIF_MAX_BURST_LENGTH", Form::kNumber, "primary_memif_max_burst"},
    {"PRIMARY_MEMIF_WIDTH",     Form::kNumber, "primary_memif_width"},
    {"SECONDARY_MEMIF_LATENCY", Form::kNumber, "secondary_memif_latency"},
    {"SECONDARY_MEMIF_MAX_BURST_LENGTH", Form::kNumber, "secondary_memif_max_burst"},
    {"SECONDARY_MEMIF_WIDTH",   Form::kNumber, "secondary_memif_width"},
    {"MEM_ADDRESS_WIDTH",       Form::kNumber, "mem_address_width"},
    {"NUM_DMA_READ_CLIENTS",    Form::kNumber, nullptr},
    {"NUM_DMA_WRITE_CLIENTS",   Form::kNumber, nullptr},
};
// clang-format on

// The feature data types a spec lists are the complete set: the ones it does not name are off.
const char* const kFeatureKeys[] = {"feature_int8", "feature_int16", "feature_fp16"};

bool has_key(const DefineMapping& m) {
  return m.key != nullptr && is_hw_config_key(m.key);
}

// The value a define gives its row: a bool, a number, or nullopt for NVDLA's "_x" (the setting
// does not apply to this configuration; the key keeps the base's value).
struct Match {
  const DefineMapping* row = nullptr;
  std::optional<nlohmann::json> value;
};

std::optional<std::uint64_t> decimal(std::string_view s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > std::numeric_limits<unsigned>::max()) return std::nullopt;
  return v;
}

// The row `d` belongs to (the longest matching one), or none. Fails on a number row whose value
// is not a number.
Match match(const SpecDefine& d) {
  for (const DefineMapping& m : kDefineMap) {
    const std::string base = m.define;
    if (m.form == Form::kFlag && d.name == base) return {&m, nlohmann::json(true)};
    if (m.form == Form::kSwitch && d.name == base + "_ENABLE") return {&m, nlohmann::json(true)};
    if (m.form == Form::kSwitch && d.name == base + "_DISABLE") return {&m, nlohmann::json(false)};
  }
  const DefineMapping* best = nullptr;
  for (const DefineMapping& m : kDefineMap) {
    const std::string base = m.define;
    if (m.form != Form::kNumber) continue;
    const bool prefix = d.name.size() > base.size() + 1 &&
                        d.name.compare(0, base.size(), base) == 0 && d.name[base.size()] == '_';
    if ((d.name == base || prefix) && (best == nullptr || base.size() > std::strlen(best->define)))
      best = &m;
  }
  if (best == nullptr) return {};
  const std::string base = best->define;
  const bool spelled_in_name = d.name != base;
  const std::string text = spelled_in_name ? d.name.substr(base.size() + 1) : d.value;
  if (text == "x") return {best, std::nullopt};
  const auto v = decimal(text);
  if (!v) {
    fail_at(d.file, d.line,
            spelled_in_name
                ? fmt::format("{}: expected {}_<number> (decimal, below 2^32) or {}_x, got '_{}'",
                              d.name, base, base, text)
                : fmt::format("#define {}: expected a number (below 2^32), got '{}'", base, text));
  }
  return {best, nlohmann::json(*v)};
}

std::string stem(const std::string& path) {
  return fs::path(path).stem().string();
}

}  // namespace

bool is_spec_path(const std::string& name_or_path) {
  return name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".spec") == 0;
}

SpecTranslation translate_spec_file(const std::string& path) {
  SpecReader reader;
  reader.read(path);
  const std::vector<SpecDefine>& defines = reader.defines;

  SpecTranslation t;
  t.failed_checks = reader.errors;
  t.path = path;
  t.project = stem(path);
  t.keys = nlohmann::json::object();
  struct Setting {
    std::optional<nlohmann::json> value;
    const SpecDefine* by;
  };
  std::map<const DefineMapping*, Setting> settings;  // one value per row, or a conflict
  bool feature_named = false;
  for (const SpecDefine& d : defines) {
    const Match m = match(d);
    if (m.row == nullptr || !has_key(*m.row)) {
      t.unmapped.push_back(d);
    }
    if (m.row == nullptr) continue;
    const auto [it, fresh] = settings.emplace(m.row, Setting{m.value, &d});
    if (!fresh && it->second.value != m.value) {
      fail_at(d.file, d.line,
              fmt::format("{} conflicts with {} ({}): one value per setting", d.name,
                          it->second.by->name, it->second.by->where()));
    }
    if (!has_key(*m.row)) continue;
    if (m.row->form == Form::kFlag && std::string(m.row->key).rfind("feature_", 0) == 0)
      feature_named = true;
    if (m.value) t.keys[m.row->key] = *m.value;
    t.mapped.push_back(d);
  }
  if (feature_named) {
    for (const char* key : kFeatureKeys) {
      if (!t.keys.contains(key) && is_hw_config_key(key)) t.keys[key] = false;
    }
  }
  return t;
}

nlohmann::json spec_config_json(const SpecTranslation& t) {
  const std::vector<std::string> builtins = builtin_hw_configs();
  bool named = false;
  for (const std::string& b : builtins) named = named || b == t.project;
  const std::string base = named ? t.project : "nv_small";
  nlohmann::json j = t.keys;
  j["base"] = base;
  j["name"] = t.project;
  j["description"] =
      fmt::format("NVDLA spec file {}; keys it does not set from the built-in {}", t.path, base);
  return j;
}

std::vector<std::string> spec_notes(const SpecTranslation& t) {
  std::vector<std::string> notes;
  for (const SpecDefine& d : t.failed_checks) {
    notes.push_back(
        fmt::format("{}: NVDLA's check fails: #error {} (octasim checks the values "
                    "it models itself)",
                    d.where(), d.value));
  }
  for (const SpecDefine& d : t.unmapped) {
    notes.push_back(
        fmt::format("{}: {} has no octasim configuration key (ignored)", d.where(), d.name));
  }
  return notes;
}

HwConfig load_spec_config(const std::string& path, std::vector<std::string>* notes) {
  const SpecTranslation t = translate_spec_file(path);
  const nlohmann::json j = spec_config_json(t);
  try {
    HwConfig c = parse_hw_config(j.dump(), path);
    if (notes != nullptr) {
      for (std::string& n : spec_notes(t)) notes->push_back(std::move(n));
    }
    return c;
  } catch (const std::runtime_error& e) {
    // Name the defines behind the keys the error is about.
    std::string msg = e.what();
    std::string from;
    for (const SpecDefine& d : t.mapped) {
      const Match m = match(d);
      if (msg.find(m.row->key) != std::string::npos) {
        from += fmt::format("{}{} = {} from {} at {}", from.empty() ? "" : "; ", m.row->key,
                            m.value ? m.value->dump() : "x", d.name, d.where());
      }
    }
    throw std::runtime_error(from.empty() ? msg : fmt::format("{} ({})", msg, from));
  }
}

}  // namespace octasim
