// How an error message quotes a value the user gave: in single quotes, cut to its
// first kMaxShownValue characters when longer, so that a 5 MB key or shape is named but
// not echoed in full (twice, where a message quotes the whole and a part of it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pto {

inline constexpr size_t kMaxShownValue = 200;

inline std::string shown_value(std::string_view value) {
  if (value.size() <= kMaxShownValue) return "'" + std::string(value) + "'";
  return "'" + std::string(value.substr(0, kMaxShownValue)) + "...' (" + std::to_string(value.size()) + " characters)";
}

}  // namespace pto
