// The pto-tune subcommands: each takes the words after its name and returns the exit
// code; errors are thrown (see cli/cli.h). One file per command (cli/cmd_NAME.cpp).
#pragma once

#include <string>
#include <vector>

namespace pto::cli {

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;  // one line for `pto-tune --help`
  int (*run)(const Args& args);
};

int run_ops(const Args& args);
int run_targets(const Args& args);
int run_compile(const Args& args);
int run_run(const Args& args);
int run_explain(const Args& args);
int run_calibrate(const Args& args);
int run_tune(const Args& args);
int run_batch(const Args& args);
int run_plan(const Args& args);
int run_db(const Args& args);
int run_lookup(const Args& args);
int run_validate(const Args& args);
int run_report(const Args& args);

// Every subcommand, in the order `pto-tune --help` lists them.
const std::vector<Command>& commands();

}  // namespace pto::cli
