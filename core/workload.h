// A workload: one op at one concrete shape and dtype, with its attributes (and, for the
// elementwise op, its expression). Its canonical string
// ("matmul|4096,4096,4096|fp16|transpose_b=1", "elementwise|1024,4096|fp16|expr=mul(add(a,b),2.0)")
// is the lookup key.
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
  // The elementwise op's expression in canonical form (core/expression.h), empty for
  // every other op: the key's last field, "expr=...".
  std::string expr = {};  // a default, so that {op, shape, dtype, attrs} initializers stay warning-free

  std::string key() const;                 // canonical string form: op|shape|dtype[|attrs][|expr=EXPR]
  // Inverse of key() (an expression is canonicalized); usage Error on bad input.
  static Workload parse_key(const std::string& key);
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
