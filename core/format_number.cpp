#include "core/format_number.h"

#include <cstdio>

namespace pto {

std::string format_number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace pto
