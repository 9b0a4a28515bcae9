// `octasim sweep`'s child processes and the row each leaves (sweep_child.hpp).
#include "sim/app/sweep_child.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace octasim::app::sweep {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The child's error from its stderr: octasim's last error line (without "octasim: error: "),
// else a sanitizer's or runtime's "ERROR:" line (a crash under AddressSanitizer exits 1), else the
// last non-empty line.
std::string error_line(const std::string& err) {
  std::string last, octasim, runtime;
  std::size_t start = 0;
  while (start < err.size()) {
    std::size_t end = err.find('\n', start);
    if (end == std::string::npos) end = err.size();
    std::string line = err.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) last = line;
    if (line.rfind("octasim: ", 0) == 0) octasim = line;
    const std::size_t error = line.find("ERROR: ");
    if (runtime.empty() && error != std::string::npos) runtime = line.substr(error);
    start = end + 1;
  }
  for (const char* prefix : {"octasim: error: ", "octasim: "}) {
    if (octasim.rfind(prefix, 0) == 0) return octasim.substr(std::strlen(prefix));
  }
  return runtime.empty() ? last : runtime;
}

std::uint64_t count_at(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

// The row's numbers from the child's report (sim/report/report.schema.json; `octasim net` adds
// "network").
void fill_from_report(Row& row, const nlohmann::json& r) {
  const nlohmann::json& result = r.at("result");
  row.trace_cycles = result.at("trace_cycles").get<std::uint64_t>();
  row.compute_cycles = result.at("compute_cycles").get<std::uint64_t>();
  const nlohmann::json& config = r.at("config");
  const std::uint64_t peak = config.at("mac_atomic_c").get<std::uint64_t>() *
                             config.at("mac_atomic_k").get<std::uint64_t>();
  row.peak_macs_per_cycle = peak;
  row.peak_dram_bytes_per_cycle = config.at("dram_bytes_per_cycle").get<double>();
  const nlohmann::json& dram = r.at("dram");
  row.dram_bytes = count_at(dram, "bytes_read") + count_at(dram, "bytes_written");

  std::uint64_t macs = 0, saturations = 0;
  for (const nlohmann::json& layer : r.at("layers")) {
    macs += count_at(layer, "macs");
    for (const nlohmann::json& reg : layer.value("registers", nlohmann::json::array())) {
      if (reg.value("source", "") == "status" &&
          reg.value("name", "").find("SATURATION") != std::string::npos) {
        saturations += count_at(reg, "value");
      }
    }
  }
  if (r.contains("ppu")) {
    for (const nlohmann::json& k : r["ppu"].value("kernels", nlohmann::json::array())) {
      saturations += count_at(k, "saturations");
    }
  }
  row.saturations = saturations;
  std::uint64_t cycles = *row.trace_cycles;
  if (r.contains("network")) {
    const nlohmann::json& net = r["network"];
    cycles = count_at(net, "cycles");
    macs = count_at(net, "device_macs");
    const std::uint64_t images = count_at(net, "images");
    if (cycles != 0 && images != 0) {
      row.fps = net.at("clock_mhz").get<double>() * 1e6 * static_cast<double>(images) /
                static_cast<double>(cycles);
    }
  }
  if (cycles != 0 && peak != 0) {
    row.mac_utilization =
        static_cast<double>(macs) / (static_cast<double>(cycles) * static_cast<double>(peak));
  }
  const std::uint64_t failed = count_at(result, "checks_failed");
  const std::uint64_t total = failed + count_at(result, "checks_passed");
  if (failed != 0) {
    row.message = row.kind == "network"
                      ? fmt::format("{} of {} images not bit-exact", failed, total)
                      : fmt::format("{} of {} checks failed", failed, total);
  }
}

Row base_row(const Job& job, double seconds, int rank) {
  Row row;
  row.index = job.index;
  row.input = job.input;
  row.kind = job.kind;
  row.config = job.config;
  row.grid = job.grid;
  row.host_seconds = seconds;
  row.rank = rank;
  return row;
}

}  // namespace

std::vector<std::string> child_args(const Job& job, const RunSettings& s,
                                    const std::string& report) {
  std::vector<std::string> args = {"octasim",
                                   job.kind == "network" ? "net" : "run",
                                   job.input,
                                   "--config",
                                   job.config_arg,
                                   "--report",
                                   report,
                                   "--no-progress",
                                   "--timeout-cycles",
                                   std::to_string(s.timeout_cycles)};
  if (job.kind == "network") {
    args.emplace_back("--timing-only");
    args.insert(args.end(), s.net_args.begin(), s.net_args.end());
  }
  return args;
}

Row error_row(const Job& job, const std::string& message, double seconds, int rank) {
  Row row = base_row(job, seconds, rank);
  row.result = "error";
  row.message = message;
  return row;
}

Row make_row(const Job& job, int status, const std::string& err, const std::string& report,
             double seconds, int rank) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return error_row(job, fmt::format("killed by signal {} ({})", sig, strsignal(sig)), seconds,
                     rank);
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 2) {
    Row row = base_row(job, seconds, rank);
    row.result = "refused";
    row.message = error_line(err);
    return row;
  }
  if (code != 0 && code != 1) {
    const std::string line = error_line(err);
    return error_row(job, fmt::format("exit status {}{}{}", code, line.empty() ? "" : ": ", line),
                     seconds, rank);
  }
  Row row = base_row(job, seconds, rank);
  row.result = code == 0 ? "pass" : "fail";
  // Exit 0 or 1 without a report: the run ended early (a sanitizer's crash report exits 1).
  const auto no_report = [&]() {
    const std::string line = error_line(err);
    return error_row(job,
                     fmt::format("exit status {} and no readable report{}{}", code,
                                 line.empty() ? "" : ": ", line),
                     seconds, rank);
  };
  try {
    std::ifstream in(report);
    if (!in) return no_report();
    fill_from_report(row, nlohmann::json::parse(in));
  } catch (const nlohmann::json::exception&) {
    return no_report();
  }
  return row;
}

Pool::Pool(unsigned slots, RunSettings settings) : slots_(slots), settings_(std::move(settings)) {}

Pool::~Pool() {
  kill_all();
}

unsigned Pool::free_slots() const {
  return running_.size() >= slots_ ? 0 : slots_ - static_cast<unsigned>(running_.size());
}

void Pool::start(const Job& job) {
  Running r;
  r.job = job;
  const std::filesystem::path dir(settings_.temp_dir);
  r.report = (dir / fmt::format("report-{}.json", job.index)).string();
  r.err = (dir / fmt::format("report-{}.err", job.index)).string();
  const std::vector<std::string> args = child_args(job, settings_, r.report);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, r.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  // Its own process group, so that a timeout kills everything it started and a Ctrl-C at the
  // terminal reaches only the sweep (which kills its children); default signal handling.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  r.started = std::chrono::steady_clock::now();
  const int spawned = posix_spawn(&r.pid, "/proc/self/exe", &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    r.pid = -1;
    r.spawn_error = std::strerror(spawned);  // reported by collect()
  }
  running_.push_back(std::move(r));
}

std::vector<Row> Pool::collect() {
  std::vector<Row> rows;
  const auto now = std::chrono::steady_clock::now();
  for (auto it = running_.begin(); it != running_.end();) {
    const double seconds = std::chrono::duration<double>(now - it->started).count();
    int status = 0;
    bool done = false;
    if (it->pid < 0) {
      rows.push_back(error_row(it->job, fmt::format("cannot start octasim: {}", it->spawn_error), 0,
                               settings_.rank));
      done = true;
    } else if (waitpid(it->pid, &status, WNOHANG) == it->pid) {
      rows.push_back(
          make_row(it->job, status, read_text(it->err), it->report, seconds, settings_.rank));
      done = true;
    } else if (settings_.timeout > 0 && seconds > settings_.timeout) {
      ::kill(-it->pid, SIGKILL);
      while (waitpid(it->pid, &status, 0) < 0 && errno == EINTR) {
      }
      rows.push_back(error_row(it->job, fmt::format("timed out after {:g} s", settings_.timeout),
                               seconds, settings_.rank));
      done = true;
    }
    if (done) {
      std::error_code ec;
      std::filesystem::remove(it->report, ec);
      std::filesystem::remove(it->err, ec);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  return rows;
}

void Pool::kill_all() {
  for (Running& r : running_) {
    if (r.pid < 0) continue;
    ::kill(-r.pid, SIGKILL);
    int status = 0;
    while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::error_code ec;
    std::filesystem::remove(r.report, ec);
    std::filesystem::remove(r.err, ec);
  }
  running_.clear();
}

}  // namespace octasim::app::sweep
