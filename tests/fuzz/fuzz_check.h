// What every parser fuzz target checks: malformed input is a usage Error (never
// another exception, a crash or a hang), and accepted input round-trips.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace pto::fuzz {

[[noreturn]] inline void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
  std::abort();
}

// Runs `parse_and_check`; a usage Error is the expected way to reject input.
template <class F>
void expect_usage_errors_only(F&& parse_and_check) {
  try {
    parse_and_check();
  } catch (const Error& e) {
    if (e.category() != ErrorCategory::Usage) broken(std::string("non-usage error: ") + e.what());
  }
}

}  // namespace pto::fuzz
