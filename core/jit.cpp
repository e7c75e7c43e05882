// The JIT entry point (see core/jit.h): the provider's config when it compiles for this
// shape and target, else the op's default config; compiled programs cached by
// (workload, target fingerprint, config).
#include "core/jit.h"

#include <mutex>
#include <unordered_map>

#include "core/error.h"
#include "core/op_library.h"

namespace pto {

namespace {

class ProgramCache {
 public:
  std::shared_ptr<const Compiled> find(const std::string& key) {
    std::lock_guard lock(mutex_);
    const auto it = programs_.find(key);
    return it == programs_.end() ? nullptr : it->second;
  }
  // Another thread may have compiled the same key meanwhile: the first one stays.
  std::shared_ptr<const Compiled> insert(const std::string& key, std::shared_ptr<const Compiled> program) {
    std::lock_guard lock(mutex_);
    if (programs_.size() >= kJitCacheCapacity) programs_.clear();
    return programs_.emplace(key, std::move(program)).first->second;
  }
  size_t size() {
    std::lock_guard lock(mutex_);
    return programs_.size();
  }
  void clear() {
    std::lock_guard lock(mutex_);
    programs_.clear();
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Compiled>> programs_;
};

ProgramCache& cache() {
  static ProgramCache c;
  return c;
}

// The cached program for this config, compiled on a miss. Throws what compile() throws.
JitResult compile_cached(const Workload& w, const TensorGraph& graph, const Target& t, ConfigChoice choice) {
  const std::string key = w.key() + "\n" + t.fingerprint() + "\n" + choice.config.to_string();
  if (auto hit = cache().find(key)) return {std::move(hit), std::move(choice), true};
  auto program = std::make_shared<const Compiled>(compile(graph, choice.config, t));
  return {cache().insert(key, std::move(program)), std::move(choice), false};
}

}  // namespace

const char* config_source_name(ConfigSource s) {
  switch (s) {
    case ConfigSource::Exact: return "exact";
    case ConfigSource::Transfer: return "transfer";
    case ConfigSource::Nearest: return "nearest";
    case ConfigSource::Model: return "model";
    case ConfigSource::Default: return "default";
  }
  return "default";
}

std::string shape_dims(const Shape& s) {
  std::string dims;
  for (int64_t d : s) {  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on "," + std::string&&
    if (!dims.empty()) dims += ',';
    dims += std::to_string(d);
  }
  return dims;
}

std::string ConfigChoice::describe() const {
  std::string text = config_source_name(source);
  if (from_shape) text += " " + shape_dims(*from_shape);
  const std::string neighbours = std::to_string(ranked_neighbours) + " tuned neighbour" +
                                 (ranked_neighbours == 1 ? "'s config" : "s' configs");
  if (ranked_neighbours > 0 && source == ConfigSource::Transfer)
    text += " (the model's pick of " + neighbours + " and the default)" + (reason.empty() ? "" : ": " + reason);
  if (ranked_neighbours > 0 && source == ConfigSource::Default)
    text += " (" + (reason.empty() ? "the model ranks it above " + neighbours : reason) + ")";
  if (stale) text += " (stale: " + stale_reason + ")";
  return text;
}

JitResult jit_compile(const Workload& w, const Target& t, ConfigProvider* provider) {
  const TensorGraph graph = build_graph(w);
  if (provider) {
    if (std::optional<ConfigChoice> choice = provider->lookup(w, t);
        choice && choice->source != ConfigSource::Default) {
      try {
        return compile_cached(w, graph, t, std::move(*choice));
      } catch (const Error& e) {
        // A tuned config that does not fit (another shape's, a stale record) is not an
        // error for the JIT: it falls back. Anything else is.
        if (e.category() != ErrorCategory::Infeasible && e.category() != ErrorCategory::Usage) throw;
      }
    }
  }
  return compile_cached(w, graph, t, {default_config(w, graph, t), ConfigSource::Default, {}, false, {}});
}

size_t jit_cache_size() { return cache().size(); }
void jit_cache_clear() { cache().clear(); }

}  // namespace pto
