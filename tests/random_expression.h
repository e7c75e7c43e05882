// Random elementwise expressions (core/expression.h) that a test can run and compare
// with the fp64 reference: every call of every function can be drawn, but each value
// stays in a range where fp32 steps stay close to fp64 (|value| <= kMaxMagnitude), and
// log, sqrt, rsqrt and divisors only see operands bounded away from zero. Ranges are
// tracked as intervals over the inputs' ranges: random_inputs() gives an input in
// [0.5, 2] when it feeds such an operand directly, else [-1, 1] (so [-2, 2] covers both).
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/expression.h"

namespace pto::testing {

struct Range {
  double lo, hi;
};

template <class Rng>
class SafeExpressionDrawer {
 public:
  static constexpr double kMaxMagnitude = 8;
  static constexpr double kAwayFromZero = 0.25;

  explicit SafeExpressionDrawer(Rng& rng) : rng_(rng) {}

  // Canonical text of a random expression with calls nested at most `depth` deep.
  std::string draw(int depth) {
    const size_t tensors = 1 + rng_() % std::size(kNames);
    names_.assign(kNames, kNames + tensors);
    for (int attempt = 0;; ++attempt) {
      Drawn d = call(depth, false);
      if (d.is_call) return canonical_expression(d.text);
      if (attempt > 20) return canonical_expression("mul(add(a,b),2.0)");
    }
  }

 private:
  static constexpr const char* kNames[] = {"a", "b", "x_2", "in"};  // "in": a Python keyword in emitted code

  struct Drawn {
    std::string text;
    Range range;
    bool is_call = false;
  };

  bool chance(int in) { return rng_() % static_cast<uint64_t>(in) == 0; }

  Drawn leaf(bool positive) {
    if (!positive && chance(4)) {
      const double v = static_cast<double>(static_cast<int64_t>(rng_() % 25) - 12) / 4;  // -3 .. 3 by 0.25
      return {std::to_string(v), {v, v}};
    }
    const std::string name = names_[rng_() % names_.size()];
    return {name, positive ? Range{0.5, 2} : Range{-2, 2}};
  }

  static bool tame(const Range& r) {
    return std::isfinite(r.lo) && std::isfinite(r.hi) && r.lo >= -kMaxMagnitude && r.hi <= kMaxMagnitude;
  }
  static bool away_from_zero(const Range& r) { return r.lo >= kAwayFromZero || r.hi <= -kAwayFromZero; }

  // An operand: a call (while depth lasts) or a leaf; `positive` asks for one that a
  // log, sqrt, rsqrt or divisor may read.
  Drawn operand(int depth, bool positive) {
    if (depth > 0 && chance(2)) {
      Drawn d = call(depth, positive);
      if (d.is_call) return d;
    }
    return leaf(positive);
  }

  Drawn call(int depth, bool positive) {
    const auto& functions = expression_functions();
    for (int attempt = 0; attempt < 12; ++attempt) {
      const ExpressionFunction& f = functions[rng_() % functions.size()];
      const bool domain = f.op == OpKind::Log || f.op == OpKind::Sqrt || f.op == OpKind::Rsqrt;
      std::vector<Drawn> args;
      args.push_back(operand(depth - 1, domain));
      if (f.arity == 2) args.push_back(operand(depth - 1, f.op == OpKind::Div));
      if (f.arity == 2 && args[0].range.lo == args[0].range.hi && args[1].range.lo == args[1].range.hi) continue;
      if (f.arity == 1 && args[0].range.lo == args[0].range.hi) continue;  // a call reads a tensor
      const auto range = range_of(f.op, args);
      if (!range || !tame(*range) || (positive && !(range->lo >= kAwayFromZero))) continue;
      std::string text = std::string(f.alias && chance(2) ? f.alias : f.name) + "(" + args[0].text;
      if (f.arity == 2) text += ", " + args[1].text;
      return {text + ")", *range, true};
    }
    return leaf(positive);
  }

  static std::optional<Range> range_of(OpKind op, const std::vector<Drawn>& args) {
    const Range x = args[0].range;
    auto hull = [](std::initializer_list<double> v) { return Range{std::min(v), std::max(v)}; };
    switch (op) {
      case OpKind::Log: return x.lo >= kAwayFromZero ? std::optional(Range{std::log(x.lo), std::log(x.hi)}) : std::nullopt;
      case OpKind::Sqrt: return x.lo >= kAwayFromZero ? std::optional(Range{std::sqrt(x.lo), std::sqrt(x.hi)}) : std::nullopt;
      case OpKind::Rsqrt:
        return x.lo >= kAwayFromZero ? std::optional(Range{1 / std::sqrt(x.hi), 1 / std::sqrt(x.lo)}) : std::nullopt;
      case OpKind::Exp: return Range{std::exp(x.lo), std::exp(x.hi)};
      case OpKind::Abs: return Range{x.lo <= 0 && x.hi >= 0 ? 0 : std::min(std::fabs(x.lo), std::fabs(x.hi)),
                                     std::max(std::fabs(x.lo), std::fabs(x.hi))};
      case OpKind::Neg: return Range{-x.hi, -x.lo};
      case OpKind::Erf: return Range{std::erf(x.lo), std::erf(x.hi)};
      case OpKind::Erfc: return Range{std::erfc(x.hi), std::erfc(x.lo)};
      case OpKind::Tanh: return Range{std::tanh(x.lo), std::tanh(x.hi)};
      default: break;
    }
    const Range y = args[1].range;
    switch (op) {
      case OpKind::Add: return Range{x.lo + y.lo, x.hi + y.hi};
      case OpKind::Sub: return Range{x.lo - y.hi, x.hi - y.lo};
      case OpKind::Mul: return hull({x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi});
      case OpKind::Div:
        if (!away_from_zero(y)) return std::nullopt;
        return hull({x.lo / y.lo, x.lo / y.hi, x.hi / y.lo, x.hi / y.hi});
      case OpKind::Max: return Range{std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
      case OpKind::Min: return Range{std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
      default: return std::nullopt;
    }
  }

  Rng& rng_;
  std::vector<std::string> names_;
};

// The PyPTO seeds' chain, in canonical form: a fixed expression for tests that take
// one workload per op.
inline constexpr const char* kExampleExpression = "mul(add(a,b),2.0)";

// A random expression for an op that takes one (OpDef::takes_expr), in canonical form.
template <class Rng>
std::string random_safe_expression(Rng& rng, int depth = 3) {
  return SafeExpressionDrawer<Rng>(rng).draw(depth);
}

}  // namespace pto::testing
