// The JIT entry point: compile a workload with the best config known for it.
//
// The JIT never tunes on the hot path. It asks a ConfigProvider (implemented by db/
// on top of the tuning database) and falls back to the op's default config when the
// provider has nothing or what it has is infeasible for this shape and target.
#pragma once

#include <optional>
#include <string>

#include "core/compile.h"
#include "core/target.h"
#include "core/tile_config.h"
#include "core/workload.h"

namespace pto {

class ConfigProvider {
 public:
  virtual ~ConfigProvider() = default;
  // The tuned config for this workload on this target, if any; `source` says where it
  // came from ("exact", "nearest 4096,4096,4096", "cost-model").
  virtual std::optional<TileConfig> lookup(const Workload& w, const Target& t,
                                           std::string& source) = 0;
};

struct JitResult {
  Compiled compiled;
  std::string config_source;  // provider's source, or "default"
};

JitResult jit_compile(const Workload& w, const Target& t, ConfigProvider* provider);

}  // namespace pto
