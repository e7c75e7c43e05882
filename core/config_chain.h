// ConfigChain: the JIT's fallback order as composed ConfigProviders (core/jit.h). Each
// step is a provider that may have nothing for a workload; the first that answers wins,
// and its ConfigChoice::source says which step served (the database's exact, transfer or
// nearest hit, the cost model's pick). When no step answers, the op's default config: a
// chain always answers, the default being the floor of every order. The JIT's order:
//
//   ConfigChain lookup({std::make_shared<db::DbConfigProvider>(path),    // exact, transfer
//                       std::make_shared<search::ModelPickProvider>()});  // model; then default
//
// Answers are memoized per workload and target, so that a transfer or a model pick is
// worked out once. A fresh exact hit is not kept: finding it again costs a step one hash
// probe, as the memo would, and keeping it would crowd out the answers that cost a
// model's work. The memo holds at most kMaxMemoized answers and starts over when full,
// so that a process asking for ever new shapes (a JIT of dynamic shapes) does not grow
// without bound. Targets are identified by name within one chain
// (core/target_fingerprints.h). Thread-safe when its steps are.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/jit.h"
#include "core/target_fingerprints.h"

namespace pto {

class ConfigChain : public ConfigProvider {
 public:
  explicit ConfigChain(std::vector<std::shared_ptr<ConfigProvider>> steps);

  // choose(): never nullopt.
  std::optional<ConfigChoice> lookup(const Workload& w, const Target& t) override;
  ConfigChoice choose(const Workload& w, const Target& t);

  static constexpr size_t kMaxMemoized = size_t{1} << 16;
  size_t memoized() const;  // answers in the memo; at most kMaxMemoized

 private:
  ConfigChoice first_answer(const Workload& w, const Target& t) const;

  std::vector<std::shared_ptr<ConfigProvider>> steps_;
  TargetFingerprints fingerprints_;
  mutable std::shared_mutex mutex_;  // guards answers_
  std::unordered_map<std::string, ConfigChoice> answers_;  // by workload key + target fingerprint
};

}  // namespace pto
