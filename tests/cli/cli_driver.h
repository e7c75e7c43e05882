// Drives the built pto-tune executable as a user would, for the CLI tests: runs it
// through the shell and captures stdout, stderr and the exit code.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pto::cli::testing {

struct Result {
  int exit_code = -1;
  std::string out, err;
};

// Runs `pto-tune ARGS` through the shell (arguments are quoted by the caller).
inline Result pto_tune(const std::string& args) {
  const std::string err_path = std::filesystem::temp_directory_path() /
                               ("pto_cli_test_" + std::to_string(::getpid()) + ".err");
  const std::string command = std::string(PTO_TUNE_BIN) + " " + args + " 2>" + err_path;
  Result r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.out.append(buffer, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  r.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  std::filesystem::remove(err_path);
  return r;
}

inline std::string quoted(const std::string& s) { return "'" + s + "'"; }

// A usage failure: exit 2 and one error line that names every `part`.
inline void expect_usage_error(const std::string& args, const std::vector<std::string>& parts) {
  const Result r = pto_tune(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_TRUE(r.err.starts_with("pto-tune: error: ")) << args << "\n" << r.err;
  for (const std::string& part : parts) {
    EXPECT_NE(r.err.find(part), std::string::npos) << args << ": '" << r.err << "' lacks '" << part << "'";
  }
}

}  // namespace pto::cli::testing
