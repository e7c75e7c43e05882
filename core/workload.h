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
  // e.g. causal=1, transpose_b=1, kv_heads=8; a dtype-valued attribute (kv_dtype=int8)
  // holds the DType's value and is written by its name.
  std::map<std::string, int64_t> attrs;

  std::string key() const;                 // canonical string form
  static Workload parse_key(const std::string& key);  // inverse of key(); usage Error on bad input
  int64_t attr(const std::string& name, int64_t fallback = 0) const;
};

// Parses "4096,4096,4096" (also accepts 'x' separators); usage Error naming the bad token.
Shape parse_shape_list(const std::string& text);
// Parses "causal=1,transpose_b=0,kv_dtype=int8"; usage Error naming the bad token.
std::map<std::string, int64_t> parse_attrs(const std::string& text);

// Attributes whose value is an element type (kv_dtype): named in keys and on the command
// line, stored as the DType's value.
bool is_dtype_attr(const std::string& name);

}  // namespace pto
