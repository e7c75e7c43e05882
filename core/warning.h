// Warnings: input that is accepted but probably not what the user meant (a duplicate
// JSON key, an l2_group larger than the tile grid, an option the backend ignores).
//
// Core code cannot print (it is a library, and the JIT runs inside other programs),
// so it reports through one sink: by default "pto-tune: warning: ..." on stderr;
// tests and embedders install their own.
#pragma once

#include <functional>
#include <string>

namespace pto {

using WarningSink = std::function<void(const std::string& message)>;

// Replaces the sink and returns the previous one (an empty sink: the stderr default).
WarningSink set_warning_sink(WarningSink sink);
void warn(const std::string& message);

}  // namespace pto
