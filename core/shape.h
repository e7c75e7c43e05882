// Shapes: a list of dimension sizes, outermost first, plus the small arithmetic that
// tiling needs everywhere (ceil division, alignment, element counts, printing).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pto {

using Shape = std::vector<int64_t>;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t align_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

inline int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Row-major strides in elements.
inline Shape contiguous_strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

inline std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

}  // namespace pto
