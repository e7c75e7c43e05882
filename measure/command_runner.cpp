// The `command` and `npu` backends: the user's own measurement. Each batch of
// feasible candidates becomes one run of the user's shell command (`/bin/sh -c CMD`,
// in a process group of its own, measure/isolation.h), with the protocol's request
// (measure/measure_protocol.h) on its stdin — stdin rather than a file named in an
// environment variable: nothing is left behind in /tmp, and the command line the user
// wrote is run exactly as written, no part of a config ever pasted into it. The answer
// is read from its stdout. A command that fails as a whole (a non-zero exit, a crash,
// no answer in time, output that is not an answer) fails each candidate of its batch
// with that reason; the rest (the cost model's screening, the checks on the times, the
// provenance) is the external runner's (measure/external_runner.cpp).
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "measure/backends.h"
#include "measure/isolation.h"
#include "measure/measure_protocol.h"

namespace pto::measure {

namespace {

using nlohmann::json;

constexpr size_t kQuotedOutputChars = 200;

std::string seconds_text(double s) {
  std::ostringstream text;
  text << s;
  return text.str();
}

// The answer in the command's stdout: all of it, or else its last non-empty line (a
// command that prints a log line or two before its answer is still understood).
json answer_in(const std::string& output) {
  if (json whole = json::parse(output, nullptr, false); !whole.is_discarded()) return whole;
  const size_t end = output.find_last_not_of(" \t\r\n");
  if (end != std::string::npos) {
    const size_t newline = output.rfind('\n', end);
    const size_t begin = newline == std::string::npos ? 0 : newline + 1;
    if (json line = json::parse(output.substr(begin, end + 1 - begin), nullptr, false); !line.is_discarded())
      return line;
  }
  throw std::runtime_error("the measure command's answer is not JSON: '" + output.substr(0, kQuotedOutputChars) +
                           (output.size() > kQuotedOutputChars ? "...'" : "'"));
}

ExternalMeasurer command_measurer(const std::string& command, const Target& target, double timeout_s) {
  return {"command: " + command, [command, target, timeout_s](const ExternalBatch& batch) {
            const std::string request = protocol_request(batch, target, timeout_s).dump();
            const double limit_s = timeout_s * static_cast<double>(batch.candidates.size());
            const ChildResult child = run_command(command, request, limit_s);
            if (child.end == ChildResult::End::TimedOut)
              throw ExternalTimeout("the measure command gave no answer within " + seconds_text(limit_s) +
                                    " s; its process group was killed");
            if (!child.succeeded()) throw std::runtime_error("the measure command failed: " + child.describe());
            std::vector<std::string> ids;
            for (const ExternalCandidate& c : batch.candidates) ids.push_back(c.id);
            try {
              return parse_protocol_answer(answer_in(child.output), ids);
            } catch (const Error& e) {
              throw std::runtime_error(std::string("the measure command's answer: ") + e.what());
            }
          }};
}

}  // namespace

std::unique_ptr<Runner> make_command_runner(const std::string& name, const Target& target,
                                            const RunnerOptions& options) {
  check_timeout(options.timeout_s);
  if (options.measure_function) return make_external_runner(name, target, options, *options.measure_function);
  return make_external_runner(name, target, options, command_measurer(options.measure_command, target, options.timeout_s));
}

}  // namespace pto::measure
