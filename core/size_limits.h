// The limits on how large a workload and its program may be, and the overflow-checked
// arithmetic that enforces them.
//
// Sizes come from the user (--shapes, target files), so counts derived from them must
// not wrap: GraphBuilder refuses any tensor past kMaxTensorBytes with checked
// arithmetic, which keeps every count derived from a shape afterwards (elements,
// bytes, tiles, tasks, flops) inside int64; compile refuses a program past kMaxTasks
// or kMaxInstructions before it builds one. Each refusal is a usage Error naming the
// limit.
#pragma once

#include <cstdint>
#include <optional>

#include "core/shape.h"

namespace pto {

// The largest tensor a graph may hold: 1 TiB, far past any NPU's HBM.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;
// The largest program compile builds (about 400 bytes a task), and the most
// instructions it may execute over all tasks (which bounds simulation and CPU time).
constexpr int64_t kMaxTasks = int64_t{1} << 20;
constexpr int64_t kMaxInstructions = int64_t{1} << 28;

// a * b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// The product of the sizes, or nullopt when it does not fit in int64.
inline std::optional<int64_t> checked_num_elements(const Shape& s) {
  std::optional<int64_t> n = 1;
  for (int64_t d : s) {
    if (!(n = checked_mul(*n, d))) return std::nullopt;
  }
  return n;
}

}  // namespace pto
