// stable_hash: 64-bit FNV-1a of a byte string — small, and the same value on every
// machine, compiler and run (std::hash is none of these). For what must agree across
// machines: a target's fingerprint (core/target.cpp) and the shard a workload falls in
// (batch/shard.h). One copy, so that the two can never drift apart.
#pragma once

#include <cstdint>
#include <string_view>

namespace pto {

inline uint64_t stable_hash(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;  // the FNV offset basis
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;  // the FNV prime
  }
  return h;
}

// Folds `part` into a running hash, order-sensitively: for hashes of many parts (the
// derived versions, core/compiler_fingerprint.h) without concatenating them first.
inline uint64_t stable_hash_mix(uint64_t h, uint64_t part) {
  return (h ^ part) * 1099511628211ull + 0x9e3779b97f4a7c15ull;
}

}  // namespace pto
