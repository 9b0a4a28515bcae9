#include "sim/trace/player.hpp"

#include <algorithm>
#include <exception>

#include <fmt/core.h>

#include "sim/trace/command_table.hpp"

namespace octasim::trace {

bool PlayResult::all_passed() const {
  return std::all_of(checks.begin(), checks.end(), [](const CheckOutcome& c) { return c.pass; });
}

// Each command runs its row's play; an error that is not already a TraceError is one now,
// naming the line and the command.
PlayResult Player::run() {
  for (const Command& c : trace_.commands) {
    try {
      kCommands[c.args.index()].play(*this, c);
    } catch (const TraceError&) {
      throw;
    } catch (const std::exception& e) {
      throw TraceError(trace_.path, c.line, fmt::format("{}: {}", op_name(c.op), e.what()));
    }
  }
  return result_;
}

void Player::fail(const Command& c, const std::string& msg) const {
  throw TraceError(trace_.path, c.line, msg);
}

void Player::report(const std::string& line) const {
  if (opt_.report) opt_.report(line);
}

void Player::check(const Command& c, std::string description, bool pass, std::string detail) {
  report(fmt::format("{} line {}: {}{}{}", pass ? "PASS" : "FAIL", c.line, description,
                     detail.empty() ? "" : ": ", detail));
  result_.checks.push_back({c.line, std::move(description), pass, std::move(detail)});
}

void Player::write_register(std::uint32_t addr, std::uint32_t value) {
  if (!wrote_) result_.first_write_cycle = dev_.cycle();
  wrote_ = true;
  dev_.csb_write(addr, value);
  last_write_cycle_ = dev_.cycle();
}

void Player::require_notified(const Command& c, const std::string& sync_id) const {
  if (!sync_id.empty() && notified_.count(sync_id) == 0) {
    fail(c, fmt::format("{} waits for '{}', which no earlier intr_notify or sync_notify raised",
                        op_name(c.op), sync_id));
  }
}

PlayResult play(const Trace& trace, Device& device, const PlayerOptions& options) {
  return Player(trace, device, options).run();
}

}  // namespace octasim::trace
