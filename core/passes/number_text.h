// An integer as text, the one spelling the passes' rule messages and stage dumps use
// ("tile 64 > UB 196608 B"). One definition for them all, not one per file: the module
// builds as unity batches (CMakeLists.txt), where two file-local copies would collide.
#pragma once

#include <cstdint>
#include <string>

namespace pto::passes {

inline std::string num(int64_t v) { return std::to_string(v); }

}  // namespace pto::passes
