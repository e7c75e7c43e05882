// The JIT entry point: compile a workload with the best config known for it.
//
// The JIT never tunes on the hot path. It asks a ConfigProvider (usually a ConfigChain,
// core/config_chain.h: the tuning database's provider, db/config_lookup.h, then the cost
// model's pick, search/model_pick.h, then the op's default) and falls back to the op's
// default config when the provider has nothing or what it has does not compile for
// this shape and target. Every answer carries its provenance (ConfigChoice), so a
// caller can say where each config came from and whether it is stale.
//
// Compiled programs are cached in memory, keyed by workload, target fingerprint and
// config: compiling the same kernel twice returns the first program. The cache is
// thread-safe and bounded (kJitCacheCapacity; when full it starts over).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "core/compile.h"
#include "core/target.h"
#include "core/tile_config.h"
#include "core/workload.h"

namespace pto {

// Where a config came from, best first: a tuned record of this very workload, the
// tuned record of the nearest shape of the same op, the cost model's pick, the op's
// default.
enum class ConfigSource { Exact, Transfer, Nearest, Model, Default };
// "exact", "transfer", "nearest", "model", "default"
const char* config_source_name(ConfigSource s);

// "64,4096,11008": a shape as --shapes and the answers' provenance spell it.
std::string shape_dims(const Shape& s);

struct ConfigChoice {
  TileConfig config;
  ConfigSource source = ConfigSource::Default;
  std::optional<Shape> from_shape;  // Transfer, Nearest: the tuned shape whose config this is
  // A tuned record made under other compiler/cost-model versions, or for another
  // description of the same target: served only because nothing fresh was found.
  bool stale = false;
  std::string stale_reason;         // "made by compiler 0.1.0 (now 0.2.0)"
  // Transfer, or Default after one: how many tuned shapes' configs the cost model
  // ranked against the default for this shape (0: no ranking took place).
  size_t ranked_neighbours = 0;
  // Transfer, or Default after one: why the ranking served it ("the default is predicted
  // 12.0 % slower, beyond the model's 3.0 % error margin"; for a default kept although a
  // neighbour's config was predicted faster, by how little). Empty otherwise.
  std::string reason = {};  // a default, so that brace initializers without it stay warning-free
  // "exact", "transfer 4096,4096,4096 (the model's pick of 4 tuned neighbours' configs
  // and the default): REASON", "nearest 4096,4096,4096", "model", "default", "default
  // (the model ranks it above 4 tuned neighbours' configs)", "default (REASON)", +
  // " (stale: REASON)".
  std::string describe() const;
};

class ConfigProvider {
 public:
  virtual ~ConfigProvider() = default;
  // The config for this workload on this target with its provenance, or nullopt when
  // the provider has nothing (the JIT then takes the op's default).
  virtual std::optional<ConfigChoice> lookup(const Workload& w, const Target& t) = 0;
};

struct JitResult {
  std::shared_ptr<const Compiled> compiled;  // shared with the cache
  ConfigChoice choice;    // the provider's, or source Default when it was not used
  bool cache_hit = false; // the program came from the cache, not from compile()
};

JitResult jit_compile(const Workload& w, const Target& t, ConfigProvider* provider);

inline constexpr size_t kJitCacheCapacity = 4096;
size_t jit_cache_size();
void jit_cache_clear();

}  // namespace pto
