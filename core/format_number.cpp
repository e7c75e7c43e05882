#include "core/format_number.h"

#include <cstdio>

namespace pto {

std::string format_number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string format_gib(int64_t bytes) {
  return format_number("%.3g GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
}

}  // namespace pto
