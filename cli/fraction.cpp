// parse_fraction (cli/fraction.h).
#include "cli/fraction.h"

#include <exception>
#include <string>

#include "core/error.h"

namespace pto::cli {

double parse_fraction(const std::string& option, const std::string& text, bool zero_ok) {
  std::string number = text;
  double scale = 1;
  if (!number.empty() && number.back() == '%') number.pop_back(), scale = 0.01;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(number, &used) * scale;
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != number.size() || !((zero_ok ? v >= 0 : v > 0) && v < 1))
    usage_error(option + ": expected a fraction such as 2% or 0.02 (" + (zero_ok ? "from 0" : "above 0") +
                ", below 100%), got '" + text + "'");
  return v;
}

}  // namespace pto::cli
