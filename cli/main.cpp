// pto-tune's entry point: picks the subcommand and turns errors into a message on
// stderr ("pto-tune: error: ...") and the exit code of their category: 0 ok,
// 1 runtime failure, 2 bad usage or input.
#include <csignal>
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"

namespace pto::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> all = {
      {"tune", "tune one workload and store the winner (also: pto-tune --op OP --shapes DIMS ...)", run_tune},
      {"batch", "tune a list of workloads offline (resumable, sharded, a shared budget)", run_batch},
      {"plan", "plan the tuned sizes of a dynamic dim so the lookup serves its range within a loss bound", run_plan},
      {"ops", "list the operators that can be tuned", run_ops},
      {"targets", "list the built-in hardware targets", run_targets},
      {"compile", "compile one workload and print a stage of the compiler", run_compile},
      {"run", "measure one config: on the CPU, verified and timed (host), or simulated (NPU)", run_run},
      {"explain", "predict a config's time with the cost model and say what bounds it", run_explain},
      {"report", "write an HTML report with plots (and a Markdown summary) of a tuning database", run_report},
      {"calibrate", "fit the cost model's coefficients to measured samples of the search space", run_calibrate},
      {"lookup", "the config the JIT would use for a workload, and where it came from", run_lookup},
      {"db", "the tuning database: show, export, import, merge, check", run_db},
      {"validate", "simulate published Ascend timings, fit and cross-validate the simulator", run_validate},
  };
  return all;
}

namespace {

void print_help(std::ostream& out) {
  out << "pto-tune: the tile-shape autotuner for PyPTO-style Ascend operators.\n\n"
         "Usage: pto-tune COMMAND [OPTIONS]\n\nCommands:\n";
  for (const Command& c : commands()) {
    out << "  " << c.name << std::string(10 - std::string(c.name).size(), ' ') << c.summary << "\n";
  }
  out << "\nExamples:\n  pto-tune --op matmul --shapes 1024,1024,1024 --budget 32\n"
         "  pto-tune compile --op matmul --shapes 512,512,512 --target ascend910b1 --emit tile\n"
         "\nRun 'pto-tune COMMAND --help' for a command's options and an example.\n";
}

int dispatch(Args words) {
  if (words.empty()) {
    print_help(std::cerr);
    return exit_code(ErrorCategory::Usage);
  }
  if (words[0] == "--help" || words[0] == "-h" || (words[0] == "help" && words.size() == 1)) {
    print_help(std::cout);
    return 0;
  }
  if (words[0] == "help") words = {words[1], "--help"};  // "help COMMAND"
  // `pto-tune --op matmul --shapes ...`: options with no command word are a tuning job.
  if (words[0].starts_with("--")) return run_tune(words);
  for (const Command& c : commands()) {
    if (words[0] == c.name) return c.run(Args(words.begin() + 1, words.end()));
  }
  std::string known;
  for (const Command& c : commands()) known += (known.empty() ? "" : ", ") + std::string(c.name);
  usage_error("unknown command '" + words[0] + "' (known: " + known + "; see 'pto-tune --help')");
}

}  // namespace
}  // namespace pto::cli

namespace {

// Output that did not reach its destination (a full disk, a closed pipe) is a runtime
// failure, not success: exit 1 with a message instead of losing it silently.
int checked_exit(int code) {
  std::cout.flush();
  if (std::cout) return code;
  std::cerr << "pto-tune: error: cannot write the output (disk full, or the reader closed the pipe)\n";
  return pto::exit_code(pto::ErrorCategory::Io);
}

}  // namespace

int main(int argc, char** argv) {
  // A write to a closed pipe then fails with EPIPE, which checked_exit reports, instead
  // of killing the process before it can say anything.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return checked_exit(pto::cli::dispatch(pto::cli::Args(argv + 1, argv + argc)));
  } catch (const pto::Error& e) {
    std::cerr << "pto-tune: error: " << e.what() << "\n";
    return pto::exit_code(e.category());
  } catch (const std::exception& e) {
    std::cerr << "pto-tune: error: " << e.what() << "\n";
    return pto::exit_code(pto::ErrorCategory::Internal);
  }
}
