// What every parser fuzz target checks: malformed input is a usage Error (never
// another exception, a crash or a hang), and accepted input round-trips.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/error.h"

namespace pto::fuzz {

[[noreturn]] inline void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
  std::abort();
}

// Runs `parse_and_check`; an Error of one of the `expected` categories is the way to
// reject input (bad input is Usage; a database file's reader may also say Db).
template <class F>
void expect_input_errors_only(std::initializer_list<ErrorCategory> expected, F&& parse_and_check) {
  try {
    parse_and_check();
  } catch (const Error& e) {
    if (std::find(expected.begin(), expected.end(), e.category()) == expected.end())
      broken(std::string("unexpected error: ") + e.what());
  }
}

// Runs `parse_and_check`; a usage Error is the expected way to reject input.
template <class F>
void expect_usage_errors_only(F&& parse_and_check) {
  expect_input_errors_only({ErrorCategory::Usage}, std::forward<F>(parse_and_check));
}

}  // namespace pto::fuzz
