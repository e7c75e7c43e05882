// Test helper: assert that code throws a pto::Error of one category whose message
// names what it should (the field, the bad value), so error-path tests read as a table.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace pto::testing {

template <class F>
void expect_error(F&& f, ErrorCategory category, const std::vector<std::string_view>& parts,
                  const std::string& context = "") {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(to_string(e.category()), std::string(to_string(category))) << context << ": " << e.what();
    for (std::string_view part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << context << ": message '" << e.what() << "' lacks '" << part << "'";
    }
    return;
  }
  ADD_FAILURE() << context << ": no pto::Error thrown";
}

}  // namespace pto::testing
