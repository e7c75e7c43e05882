// A workload: one op at one concrete shape and dtype, with its attributes. Its
// canonical string ("matmul|4096,4096,4096|fp16|transpose_b=1") is the lookup key.
#pragma once

#include <map>
#include <string>

#include "core/dtype.h"
#include "core/shape.h"

namespace pto {

struct Workload {
  std::string op;
  Shape shape;
  DType dtype = DType::F16;
  std::map<std::string, int64_t> attrs;  // e.g. causal=1, transpose_b=1

  std::string key() const;                 // canonical string form
  static Workload parse_key(const std::string& key);  // inverse of key(); usage Error on bad input
  int64_t attr(const std::string& name, int64_t fallback = 0) const;
};

// Parses "4096,4096,4096" (also accepts 'x' separators); usage Error naming the bad token.
Shape parse_shape_list(const std::string& text);
// Parses "causal=1,transpose_b=0"; usage Error naming the bad token.
std::map<std::string, int64_t> parse_attrs(const std::string& text);

}  // namespace pto
