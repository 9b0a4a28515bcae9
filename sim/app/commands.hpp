// The octasim CLI's subcommands. Each registers its options on a CLI11 subcommand and runs
// after parsing; a user error throws UsageError, which main() prints as one line.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

// CLI11's App, declared only: CLI/CLI.hpp takes about 10 s to compile, and only the files that
// register options include it (the *_command.cpp files and main.cpp).
namespace CLI {
class App;
}  // namespace CLI

namespace octasim::app {

// An error the user can fix (bad value, missing or malformed file): printed without a trace.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `octasim numerics`: a self-demonstration of the numerics core (models/).
void add_numerics_command(CLI::App& app);
int run_numerics();

// `octasim demo [--out DIR] [--pool max|average|min]` and the default when no subcommand is
// given: the firmware-generated SDP -> PDP -> CDP trace, played like `octasim run`.
struct DemoOptions {
  std::string out;  // empty: a temporary directory, removed afterwards
  std::string pool = "max";
  std::string report;    // --report FILE.json
  std::string timeline;  // --timeline FILE.json
  std::string timeline_detail = "tile";
};
void add_demo_command(CLI::App& app, DemoOptions& opts);
int run_demo(const DemoOptions& opts);

struct CvtOptions {
  long long offset = 0;
  long long scale = 1;
  unsigned shift = 0;
  std::string out = "int8";
  std::vector<std::string> values;
  std::string file;
};
void add_cvt_command(CLI::App& app, CvtOptions& opts);
int run_cvt(const CvtOptions& opts);

struct ClipOptions {
  static constexpr int kNoAxis = -1000000;
  std::string file;
  int bits = 4;
  bool is_unsigned = false;
  std::string method = "octav";
  int per_channel = kNoAxis;
  std::size_t per_vector = 0;
  bool json = false;
  std::string shape;  // raw float32 files only
  std::string init = "half-max";
  double tolerance = 1e-4;
  int max_iterations = 10;
  std::size_t candidates = 1000;
  double percentile = 99.99;
};
void add_clip_command(CLI::App& app, ClipOptions& opts);
int run_clip(const ClipOptions& opts);

// Checks that each output file named can be written (creating and removing a temporary beside
// it; an existing file is left as it is), so that an unwritable path is a UsageError before a
// run rather than an exception after it; empty names are skipped.
void check_output_files(const std::vector<std::string>& paths);

struct RunOptions {
  std::string trace;
  std::string config;  // empty: the trace format's default (nv_small; nv_full for .txn)
  bool functional = false;
  std::uint64_t timeout_cycles = 50'000'000;
  std::string report;    // --report FILE.json: the run's report (sim/report/report.schema.json)
  std::string timeline;  // --timeline FILE.json: Chrome-trace JSON of the units' activity
  std::string timeline_detail = "tile";  // layer, tile or dma
  std::string vcd;                       // --vcd FILE.vcd: the device's signals
  bool progress = true;                  // a progress line on stderr when it is a terminal
};
void add_run_command(CLI::App& app, RunOptions& opts);
// Exit status: 0 when every check passed, 1 when a check failed; user errors throw UsageError.
int run_trace(const RunOptions& opts);

// `octasim report FILE.json [B.json]`: prints a report written by --report as tables, or
// compares two.
struct ReportOptions {
  std::vector<std::string> files;
};
void add_report_command(CLI::App& app, ReportOptions& opts);
int run_report(const ReportOptions& opts);

// What `octasim net` and `octasim compile` share: the model and how it is quantized.
struct NetCommonOptions {
  std::string model;
  std::string config = "nv_small";
  std::string precision = "int8";
  std::string calibration = "max";
  double percentile = 99.99;
  std::string weights = "max";
  std::string calib_data;
  std::size_t calib_images = 100;
  std::string calibration_table;
  std::string save_calibration;
  bool fold = true;               // --no-fold: the first convolution reads the input unfolded
  bool no_cvsram = false;         // --no-cvsram: keep everything in DRAM
  std::string winograd = "auto";  // --winograd auto|on|off (--no-winograd: off)
  double winograd_budget = 0.10;  // --winograd-budget: auto's allowed extra error
  bool no_winograd = false;
  bool dense_groups = false;     // --dense-groups: a grouped convolution as one dense layer
  std::string fallback = "ppu";  // --fallback ppu|none: nodes the DLA cannot run
};

// `octasim net MODEL.onnx [--input X] [--labels L] [--output Y.npy] [--functional] ...`.
struct NetOptions {
  NetCommonOptions common;
  std::string input;
  std::size_t limit = 0;
  std::string output;
  std::string reference_output;  // --reference-output FILE.npy: the FP32 reference's output 0
  std::string labels;
  bool functional = false;
  std::uint64_t timeout_cycles = 50'000'000;
  bool progress = true;
  std::string report;                // --report FILE.json
  std::string timeline;              // --timeline FILE.json
  std::string schedule = "overlap";  // --schedule serial|overlap
  std::string sync = "host";         // --sync host|device (with --schedule overlap)
  std::string compare;               // --compare CONFIG
  bool timing_only = false;          // --timing-only
  unsigned batch = 1;                // --batch N (firmware/net/batch.hpp)
  std::vector<std::string> expect;   // --expect Y0.npy ...: one file per graph output
  double max_rel_error = -1.0;       // --max-rel-error B (< 0: none)
};
void add_net_command(CLI::App& app, NetOptions& opts);
// Exit status: 0 when every image's outputs equal the quantized reference executor's (and, with
// --expect and --max-rel-error, every output is within the bound of the expected outputs).
int run_net(const NetOptions& opts);

// `octasim compile MODEL.onnx --out DIR`.
struct CompileOptions {
  NetCommonOptions common;
  std::string out;
  std::string input;
  std::size_t image = 0;
};
void add_compile_command(CLI::App& app, CompileOptions& opts);
int run_compile(const CompileOptions& opts);

// `octasim onnx-test DIR...`: ONNX backend node tests on the device (onnx_test_command.cpp).
// Exit status 0 when every test passes, 1 when one fails, 2 when none fails but one is
// unsupported.
struct OnnxTestOptions {
  std::vector<std::string> dirs;
  std::string registry;  // --registry NODE_DIR: every test there of registry operators only
  std::string config = "nv_full";
  bool functional = false;
  std::uint64_t timeout_cycles = 200'000'000;
};
void add_onnx_test_command(CLI::App& app, OnnxTestOptions& opts);
int run_onnx_test(const OnnxTestOptions& opts);

// `octasim zoo NAME --out FILE.onnx` / `octasim zoo --list` (zoo_command.cpp).
struct ZooOptions {
  std::string name;
  std::string out;
  bool list = false;
};
void add_zoo_command(CLI::App& app, ZooOptions& opts);
int run_zoo(const ZooOptions& opts);

// `octasim ops`: the operator registry as a table.
void add_ops_command(CLI::App& app);
int run_ops();

// `octasim sweep --traces DIR|FILE... --networks MODEL.onnx... --configs A,B --grid KEY=V1,V2
// --out results.csv|.json [--jobs N] [--resume] [--timeout S]`: every (input, configuration)
// pair in a child octasim, one row each; under mpirun rank 0 deals the pairs to every rank
// (sweep_*.cpp).
struct SweepOptions {
  std::vector<std::string> traces;
  std::vector<std::string> networks;
  std::vector<std::string> configs;
  std::vector<std::string> grid;      // each KEY=V1,V2,...
  std::vector<std::string> net_args;  // --net-arg ARG: passed to every `octasim net`
  std::string out;
  unsigned jobs = 1;
  bool resume = false;
  double timeout = 0;  // host seconds per simulation; 0: none
  std::uint64_t timeout_cycles = 50'000'000;
};
void add_sweep_command(CLI::App& app, SweepOptions& opts);
// Exit status 0 when the output file holds every row (whatever the rows' results).
int run_sweep(const SweepOptions& opts);

}  // namespace octasim::app
