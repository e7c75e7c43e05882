// parse_int64: the one checked reader of a decimal integer in the text users type
// (shapes, attrs, batch lines, size ranges). The whole text must be the number — no
// spaces, no suffix, nothing past INT64's range — so "12abc", " 3" and 2^63 are refused
// rather than read in part or wrapped; each caller words its own error.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pto {

inline std::optional<int64_t> parse_int64(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || stop != end) return std::nullopt;
  return value;
}

}  // namespace pto
