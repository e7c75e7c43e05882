// format_ns: a time in ns as a person reads it, with the unit that keeps it short —
// the one formatter that `pto-tune explain` (Estimate::to_table) and `pto-tune run`
// share, so a predicted and a measured time of one config print alike, and the tuning
// report's tables use.
#pragma once

#include <string>

namespace pto {

// How a microsecond is spelled: "us" in terminals and plain text, "µs" in the HTML and
// Markdown report.
enum class MicroUnit { Ascii, Micro };

// "812 ns", "3.41 us" (or "3.41 µs"), "1.640 ms", "2.05 s".
std::string format_ns(double ns, MicroUnit micro = MicroUnit::Ascii);

}  // namespace pto
