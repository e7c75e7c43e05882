// parse_fraction: an option's fraction as a person writes it ("2%" or "0.02"), for
// plan's --max-loss and the lookup's --transfer-margin.
#pragma once

#include <string>

namespace pto::cli {

// "2%" -> 0.02, "0.02" -> 0.02: a fraction below 1, above 0 (or from 0 with `zero_ok`).
// Anything else is a usage Error naming `option` and the text.
double parse_fraction(const std::string& option, const std::string& text, bool zero_ok);

}  // namespace pto::cli
