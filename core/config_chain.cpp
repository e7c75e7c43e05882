#include "core/config_chain.h"

#include <mutex>

#include "core/op_library.h"

namespace pto {

ConfigChain::ConfigChain(std::vector<std::shared_ptr<ConfigProvider>> steps) : steps_(std::move(steps)) {}

std::optional<ConfigChoice> ConfigChain::lookup(const Workload& w, const Target& t) { return choose(w, t); }

ConfigChoice ConfigChain::choose(const Workload& w, const Target& t) {
  const std::string key = w.key() + '\n' + fingerprints_.of(t);
  {
    std::shared_lock lock(mutex_);
    if (const auto it = answers_.find(key); it != answers_.end()) return it->second;
  }
  ConfigChoice answer = first_answer(w, t);
  if (answer.source == ConfigSource::Exact && !answer.stale) return answer;
  std::unique_lock lock(mutex_);
  if (answers_.size() >= kMaxMemoized) answers_.clear();
  return answers_.emplace(key, std::move(answer)).first->second;
}

ConfigChoice ConfigChain::first_answer(const Workload& w, const Target& t) const {
  for (const std::shared_ptr<ConfigProvider>& step : steps_)
    if (std::optional<ConfigChoice> answer = step->lookup(w, t)) return std::move(*answer);
  return {default_config(w, build_graph(w), t), ConfigSource::Default, {}, false, {}};
}

size_t ConfigChain::memoized() const {
  std::shared_lock lock(mutex_);
  return answers_.size();
}

}  // namespace pto
