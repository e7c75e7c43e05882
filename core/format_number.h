// One number as text through a printf format ("%.2fx", "%.1f s", "%.3g"): the cells of
// the CLI's tables and the labels of its plots, written once instead of a snprintf
// buffer per caller.
#pragma once

#include <cstdint>
#include <string>

namespace pto {

// `format` takes exactly one double conversion.
std::string format_number(const char* format, double value);

// Bytes in GiB to three significant digits, for messages: "256 GiB", "1.5 GiB".
std::string format_gib(int64_t bytes);

}  // namespace pto
