// Valid attributes for a random workload. Most attributes are flags (0 or 1); the ones
// whose valid values depend on the shape or dtype (flash_attention's kv_heads divides H,
// kv_dtype is the workload's dtype or int8, causal needs SKV >= SQ) are drawn from what
// check_attrs in core/op_library.cpp accepts, adjusting the shape where a draw needs it.
// An op that takes an expression (elementwise) gets a random one that its fp64
// reference and an fp32 program agree on (tests/random_expression.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/op_library.h"
#include "core/workload.h"
#include "tests/random_expression.h"

namespace pto::testing {

// `int8_kv`: whether kv_dtype may be int8 (a target too small for a 128-token block may
// rule it out).
template <class Rng>
void draw_attrs(const OpDef& op, Workload& w, Rng& rng, bool int8_kv = true) {
  for (const std::string& a : op.attrs) {
    if (a == "kv_heads") {
      std::vector<int64_t> divisors;
      for (int64_t d = 1; d <= w.shape[1]; ++d)
        if (w.shape[1] % d == 0) divisors.push_back(d);
      w.attrs[a] = divisors[rng() % divisors.size()];
    } else if (a == "kv_dtype") {
      w.attrs[a] = static_cast<int64_t>(int8_kv && rng() % 3 == 0 ? DType::I8 : w.dtype);
    } else {
      w.attrs[a] = static_cast<int64_t>(rng() % 2);
    }
  }
  if (op.takes_expr) w.expr = random_safe_expression(rng);
  if (op.name == "flash_attention" && w.attr("causal") && w.shape[3] < w.shape[2]) w.shape[3] = w.shape[2];
}

// kExampleExpression when w's op takes an expression: for tests that build one
// workload of every op.
inline void set_example_expr(Workload& w) {
  for (const OpDef& op : op_library())
    if (op.name == w.op && op.takes_expr) w.expr = kExampleExpression;
}

}  // namespace pto::testing
