// What a call throws, as text a test can search: "<category>: <message>", or "no error".
#pragma once

#include <functional>
#include <string>

#include "core/error.h"

namespace pto::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(to_string(e.category())) + ": " + e.what();
  }
  return "no error";
}

}  // namespace pto::testing
