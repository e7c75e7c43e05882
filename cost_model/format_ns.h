// format_ns: a time in ns as a person reads it, with the unit that keeps it short —
// the one formatter that `pto-tune explain` (Estimate::to_table) and `pto-tune run`
// share, so a predicted and a measured time of one config print alike.
#pragma once

#include <string>

namespace pto {

// "812 ns", "3.41 us", "1.640 ms", "2.05 s".
std::string format_ns(double ns);

}  // namespace pto
