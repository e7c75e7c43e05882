// Versions that decide whether a stored tuning result still describes what the code
// would do today. A tuned config is only as good as the compiler that compiled it and
// the cost model that ranked it: bump kCompilerVersion when the pass pipeline can emit a
// different program for the same (graph, config, target), and kCostModelVersion (in
// cost_model/) when predictions change. The tuning database stores both with every
// record and reports a record made under other versions as stale.
#pragma once

namespace pto {

inline constexpr const char* kCompilerVersion = "0.3.0";

}  // namespace pto
