#include "core/target_fingerprints.h"

#include <mutex>

namespace pto {

const std::string& TargetFingerprints::of(const Target& t) {
  {
    std::shared_lock lock(mutex_);
    if (const auto it = by_name_.find(t.name); it != by_name_.end()) return it->second;
  }
  std::string fingerprint = t.fingerprint();
  std::unique_lock lock(mutex_);
  return by_name_.emplace(t.name, std::move(fingerprint)).first->second;  // entries are never erased
}

}  // namespace pto
