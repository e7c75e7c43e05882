// The JIT entry point (see core/jit.h): the provider's config when it compiles for this
// shape and target, else the op's default config.
#include "core/jit.h"

#include "core/error.h"
#include "core/op_library.h"

namespace pto {

JitResult jit_compile(const Workload& w, const Target& t, ConfigProvider* provider) {
  const TensorGraph graph = build_graph(w);
  if (provider) {
    std::string source;
    if (const std::optional<TileConfig> tuned = provider->lookup(w, t, source)) {
      try {
        return {compile(graph, *tuned, t), source};
      } catch (const Error& e) {
        // A tuned config that does not fit (another shape's, a stale record) is not an
        // error for the JIT: it falls back. Anything else is.
        if (e.category() != ErrorCategory::Infeasible && e.category() != ErrorCategory::Usage) throw;
      }
    }
  }
  return {compile(graph, default_config(w, graph, t), t), "default"};
}

}  // namespace pto
