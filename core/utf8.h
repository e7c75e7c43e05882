// Whether text is well-formed UTF-8. Text that ends up in JSON (a record's host,
// error, detail; an export; --json output) must be: the JSON library refuses to write a
// string that is not (an exception no caller expects), so text from outside that did not
// come through a JSON parser (a CSV, a database row another program wrote, a command
// line) is checked where it comes in, and refused there with a message naming it.
#pragma once

#include <string_view>

namespace pto {

// RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF.
bool valid_utf8(std::string_view text);

}  // namespace pto
