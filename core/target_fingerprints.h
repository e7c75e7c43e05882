// TargetFingerprints: a target's fingerprint by its name, hashed the first time the name
// is seen and reused after, so that an answer keyed by target (the JIT's lookups:
// core/config_chain.h, db/config_lookup.h) costs a hash-map probe instead of a hash of
// the target's description. Within one instance a name stands for one description: a
// process that changes a target's description under the same name makes a new instance.
// Thread-safe.
#pragma once

#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "core/target.h"

namespace pto {

class TargetFingerprints {
 public:
  // Valid for the life of this object.
  const std::string& of(const Target& t);

 private:
  std::shared_mutex mutex_;
  std::unordered_map<std::string, std::string> by_name_;
};

}  // namespace pto
