// The elementwise op's expressions (core/expression.h): random expressions printed in
// random spellings (whitespace, aliases, number forms) parse to one canonical text that
// is its own fixed point and round-trips through the workload key; every malformed
// input is a usage error naming its bad token and position; the graph has one node per
// call and compiles into one vector kernel by the default partition, feasible by
// default on every target; and random expressions at random ragged shapes, compiled
// for the host and for NPU targets, run on the CPU runtime and match the fp64 reference.
#include "core/expression.h"

#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "core/analyze.h"
#include "core/compile.h"
#include "core/cpu_runtime.h"
#include "core/op_library.h"
#include "core/target.h"
#include "core/workload.h"
#include "tests/core/error_testing.h"
#include "tests/random_attrs.h"
#include "tests/random_expression.h"

namespace pto {
namespace {

using testing::expect_error;
using Rng = std::mt19937_64;

// ---- Parser properties ------------------------------------------------------------------

// A random tree, numbers of any magnitude and sign: what the parser must read back exactly.
struct Tree {
  ExprNode::Kind kind = ExprNode::Kind::Tensor;
  const ExpressionFunction* f = nullptr;
  std::string name;
  double value = 0;
  std::vector<Tree> args;
};

double random_number(Rng& rng) {
  switch (rng() % 4) {
    case 0: return static_cast<double>(static_cast<int64_t>(rng() % 21) - 10);  // integral, "2" and "2.0"
    case 1: return -0.0;
    case 2: return std::ldexp(static_cast<double>(rng() % 1000003), static_cast<int>(rng() % 80) - 60);
    default: {
      double v = 0;
      do {
        const uint64_t bits = rng();
        std::memcpy(&v, &bits, sizeof v);
      } while (!std::isfinite(v));
      return v;
    }
  }
}

Tree random_tree(Rng& rng, int depth, bool needs_tensor) {
  const auto& functions = expression_functions();
  if (depth == 0 || rng() % 3 == 0) {
    Tree t;
    if (needs_tensor || rng() % 2) {
      static const char* names[] = {"a", "b", "x", "q_1", "long_name9", "in"};
      t.name = names[rng() % std::size(names)];
    } else {
      t.kind = ExprNode::Kind::Number;
      t.value = random_number(rng);
    }
    return t;
  }
  Tree t;
  t.kind = ExprNode::Kind::Call;
  t.f = &functions[rng() % functions.size()];
  const size_t tensor_arg = rng() % static_cast<size_t>(t.f->arity);
  for (int i = 0; i < t.f->arity; ++i) t.args.push_back(random_tree(rng, depth - 1, static_cast<size_t>(i) == tensor_arg));
  return t;
}

std::string spaces(Rng& rng, bool spaced) {
  if (!spaced) return "";
  static const char* pool[] = {"", " ", "  ", "\t", "\n "};
  return pool[rng() % std::size(pool)];
}

// One spelling of a number that reads back as exactly `v`.
std::string spell(double v, Rng& rng) {
  char text[64];
  switch (rng() % 3) {
    case 0: std::snprintf(text, sizeof text, "%.17g", v); break;
    case 1: std::snprintf(text, sizeof text, "%.16e", v); break;
    default:
      if (v == std::nearbyint(v) && std::fabs(v) < 1e15) std::snprintf(text, sizeof text, "%.0f.000", v);
      else std::snprintf(text, sizeof text, "%.17G", v);
  }
  return text;
}

std::string render(const Tree& t, Rng& rng, bool spaced) {
  switch (t.kind) {
    case ExprNode::Kind::Tensor: return spaces(rng, spaced) + t.name + spaces(rng, spaced);
    case ExprNode::Kind::Number: return spaces(rng, spaced) + spell(t.value, rng) + spaces(rng, spaced);
    case ExprNode::Kind::Call: break;
  }
  std::string out = spaces(rng, spaced) + (t.f->alias && rng() % 2 ? t.f->alias : t.f->name) + spaces(rng, spaced) + "(";
  for (size_t i = 0; i < t.args.size(); ++i) out += (i ? "," : "") + render(t.args[i], rng, spaced);
  return out + ")" + spaces(rng, spaced);
}

// The parsed node is the tree: kinds, canonical function names, tensor indices in order
// of first appearance, numbers bit for bit.
void expect_same(const ExprNode& n, const Tree& t, std::vector<std::string>& seen) {
  ASSERT_EQ(n.kind, t.kind);
  if (t.kind == ExprNode::Kind::Number) {
    EXPECT_EQ(std::memcmp(&n.value, &t.value, sizeof(double)), 0) << n.value << " vs " << t.value;
    return;
  }
  if (t.kind == ExprNode::Kind::Tensor) {
    const auto at = std::find(seen.begin(), seen.end(), t.name);
    EXPECT_EQ(n.input, at - seen.begin()) << t.name;
    if (at == seen.end()) seen.push_back(t.name);
    EXPECT_EQ(n.name, t.name);
    return;
  }
  EXPECT_EQ(n.name, t.f->name);
  EXPECT_EQ(n.op, t.f->op);
  ASSERT_EQ(n.args.size(), t.args.size());
  for (size_t i = 0; i < t.args.size(); ++i) expect_same(n.args[i], t.args[i], seen);
}

TEST(Expression, RandomExpressionsInAnySpellingParseToOneCanonicalText) {
  Rng rng(26);
  for (int trial = 0; trial < 3000; ++trial) {
    Tree tree;
    do tree = random_tree(rng, 1 + static_cast<int>(rng() % 5), true);
    while (tree.kind != ExprNode::Kind::Call);
    const std::string plain = render(tree, rng, false), spaced = render(tree, rng, true);
    SCOPED_TRACE(spaced);
    const Expression e = parse_expression(spaced);
    std::vector<std::string> seen;
    expect_same(e.root, tree, seen);
    EXPECT_EQ(e.inputs, seen);
    const std::string canonical = e.text();
    EXPECT_EQ(parse_expression(plain).text(), canonical);
    EXPECT_EQ(canonical_expression(canonical), canonical) << "not a fixed point";
    EXPECT_EQ(canonical.find_first_of(" \t\n"), std::string::npos) << canonical;
    // The key holds the canonical text and reads back the same workload.
    Workload w{"elementwise", {1 + static_cast<int64_t>(rng() % 5000), 1 + static_cast<int64_t>(rng() % 5000)},
               DType::F16, {}, canonical};
    const std::string key = w.key();
    EXPECT_EQ(Workload::parse_key(key).expr, canonical);
    EXPECT_EQ(Workload::parse_key(key).key(), key);
    Workload spelled = w;
    spelled.expr = spaced;
    EXPECT_EQ(Workload::parse_key(spelled.key()).key(), key) << "parse_key canonicalizes";
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(Expression, CanonicalFormsOfTheSeedsSpellings) {
  EXPECT_EQ(canonical_expression("mul(add(a, b), 2.0)"), "mul(add(a,b),2.0)");
  EXPECT_EQ(canonical_expression(" mul ( add( a ,b ) , 2 ) "), "mul(add(a,b),2.0)");
  EXPECT_EQ(canonical_expression("max(a, min(b, -0.50))"), "maximum(a,minimum(b,-0.5))");
  EXPECT_EQ(canonical_expression("div(1e-3, x)"), "div(0.001,x)");
  EXPECT_EQ(canonical_expression("mul(x, 1E+20)"), "mul(x,1e+20)");
  EXPECT_EQ(parse_expression("add(b, mul(a, b))").inputs, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(Workload::parse_key("elementwise|1024,4096|fp16|expr=mul( add(a,b), 2)").key(),
            "elementwise|1024,4096|fp16|expr=mul(add(a,b),2.0)");
}

TEST(Expression, MalformedInputsNameTheBadTokenAndItsPosition) {
  std::string nested = "a";
  for (int i = 0; i < 70; ++i) nested = "exp(" + nested + ")";
  const std::vector<std::pair<std::string, std::vector<std::string_view>>> cases = {
      {"", {"empty"}},
      {"   ", {"empty"}},
      {"a", {"'a' is not a call", "position 1"}},
      {"2.0", {"'2.0' is not a call", "position 1"}},
      {"mul(add(a,b),2.0", {"'mul(' is not closed", "position 17"}},
      {"mul(add(a,b) 2.0)", {"unexpected '2.0'", "expected ',' or ')'", "position 14"}},
      {"pow(a,2)", {"unknown function 'pow'", "known: add", "position 1"}},
      {"add(a, POW(b))", {"unexpected 'POW'", "position 8"}},
      {"exp(a,b)", {"'exp' takes 1 argument, got 2", "position 1"}},
      {"mul(a, add(b))", {"'add' takes 2 arguments, got 1", "position 8"}},
      {"add(2.0,3.0)", {"'add(2.0,3.0)' reads no tensor", "position 1"}},
      {"mul(a, exp(1.0))", {"'exp(1.0)' reads no tensor", "position 8"}},
      {"mul(a,2x)", {"bad number '2x'", "position 7"}},
      {"mul(a,1e999)", {"bad number '1e999'", "position 7"}},
      {"mul(a,1.2.3)", {"bad number '1.2.3'", "position 7"}},
      {"mul(a,-b)", {"bad number '-b'", "position 7"}},
      {"exp", {"'exp' is a function", "position 1"}},
      {"add(exp, a)", {"'exp' is a function", "position 5"}},
      {"mul(a,b))", {"unexpected ')' after the expression", "position 9"}},
      {"mul(a,,b)", {"unexpected ','", "position 7"}},
      {"mul(a;b)", {"unexpected ';'", "position 6"}},
      {"add(a,b)|x", {"unexpected '|'", "position 9"}},
      {"add(a,", {"ends where an operand was expected", "position 7"}},
      {"add()", {"unexpected ')'", "position 5"}},
      {nested, {"nested deeper than 64"}},
      {"add(a," + std::string(kMaxExpressionChars, ' ') + "b)", {"characters, at most 4096"}},
  };
  for (const auto& [text, parts] : cases) {
    expect_error([&] { parse_expression(text); }, ErrorCategory::Usage, parts, "'" + text + "'");
    expect_error([&] { Workload::parse_key("elementwise|4,4|fp32|expr=" + text); }, ErrorCategory::Usage, {},
                 "key of '" + text + "'");
  }
}

TEST(Expression, TheWorkloadCarriesAnExpressionOnlyForTheElementwiseOp) {
  Workload w{"elementwise", {8, 8}, DType::F32, {}, ""};
  expect_error([&] { build_graph(w); }, ErrorCategory::Usage, {"elementwise: needs an expression", "--expr"});
  w.expr = "mul(add(a, b), 2)";
  expect_error([&] { build_graph(w); }, ErrorCategory::Usage, {"not in its canonical form 'mul(add(a,b),2.0)'"});
  w.expr = "mul(add(a,b),2.0)";
  EXPECT_EQ(build_graph(w).inputs().size(), 2u);
  const Workload matmul{"matmul", {8, 8, 8}, DType::F32, {}, "exp(a)"};
  expect_error([&] { build_graph(matmul); }, ErrorCategory::Usage, {"matmul: takes no expression"});
  expect_error([&] { Workload::parse_key("matmul|8,8|fp16|expr=exp(a)|causal=1"); }, ErrorCategory::Usage,
               {"bad workload key"});
}

// ---- The graph and its kernel ----------------------------------------------------------

int calls_in(const ExprNode& n) {
  int count = n.kind == ExprNode::Kind::Call;
  for (const ExprNode& a : n.args) count += calls_in(a);
  return count;
}

TEST(Expression, OneNodePerCallFusedIntoOneVectorKernelFeasibleByDefaultOnEveryTarget) {
  Rng rng(7);
  for (const std::string& name : builtin_target_names()) {
    const Target target = load_target(name);
    for (int trial = 0; trial < 12; ++trial) {
      Workload w{"elementwise", {1 + static_cast<int64_t>(rng() % 3000), 1 + static_cast<int64_t>(rng() % 9000)},
                 trial % 3 == 0 ? DType::F32 : trial % 3 == 1 ? DType::F16 : DType::BF16, {},
                 testing::random_safe_expression(rng, 4)};
      SCOPED_TRACE(name + " " + w.key());
      const TensorGraph g = build_graph(w);
      const Expression e = parse_expression(w.expr);
      const bool narrow = w.dtype != DType::F32;
      int computing = 0;
      for (NodeId id : g.compute_nodes()) computing += g.node(id).kind != OpKind::Cast;
      EXPECT_EQ(computing, calls_in(e.root));
      EXPECT_EQ(g.compute_nodes().size(), static_cast<size_t>(computing) + (narrow ? e.inputs.size() + 1 : 0));
      ASSERT_EQ(g.inputs().size(), e.inputs.size());
      for (size_t i = 0; i < e.inputs.size(); ++i) EXPECT_EQ(g.node(g.inputs()[i]).name, e.inputs[i]);
      const TileConfig config = default_config(w, g, target);
      const TilingSummary summary = analyze(g, config, target);
      EXPECT_TRUE(summary.feasible) << config.to_string();
      EXPECT_EQ(summary.kernels.size(), 1u) << "the chain is not one vector kernel";
    }
  }
}

// ---- End to end --------------------------------------------------------------------------

// A size with a ragged tail for the hand-picked [64, 512] tile (and for most others).
int64_t ragged(Rng& rng, int64_t base) {
  switch (rng() % 3) {
    case 0: return 1 + static_cast<int64_t>(rng() % 7);
    case 1: return base * (1 + static_cast<int64_t>(rng() % 3)) + 1 + static_cast<int64_t>(rng() % (base - 1));
    default: return 1 + static_cast<int64_t>(rng() % (3 * base));
  }
}

// A random tile config for the [R, C] chain: random vec tiles (clamped, ragged), n-buffering,
// and sometimes a fusion list cutting the chain; a draw the target refuses is drawn again.
TileConfig random_config(const TensorGraph& g, const Workload& w, const Target& t, Rng& rng) {
  const Analyzer analyzer(g, t);
  for (int attempt = 0; attempt < 30; ++attempt) {
    TileConfig c;
    c.vec = Shape{1 + static_cast<int64_t>(rng() % 80), rng() % 3 ? 16 * (1 + static_cast<int64_t>(rng() % 40)) : w.shape[1]};
    if (rng() % 2) c.nbuffer = 1 + static_cast<int>(rng() % 2);
    if (rng() % 3 == 0) {
      std::vector<std::vector<int>> groups;
      for (NodeId id : g.compute_nodes()) {
        if (groups.empty() || rng() % 3 == 0) groups.emplace_back();
        groups.back().push_back(id);
      }
      c.fusion = groups;
    }
    try {
      if (analyzer.analyze(c).feasible) return c;
    } catch (const Error& e) {
      if (e.category() != ErrorCategory::Usage) throw;
    }
  }
  return default_config(w, g, t);
}

void expect_runs_like_the_reference(const Workload& w, const TileConfig& config, const Target& target, Rng& rng) {
  const TensorGraph g = build_graph(w);
  const Compiled compiled = compile(g, config, target);
  const std::vector<HostTensor> inputs = random_inputs(g, rng());
  const std::vector<HostTensor> want = find_op(w.op).reference(w, inputs);
  CpuExecutor exec(compiled.program, ExecOptions{1});
  exec.execute(inputs);
  const std::vector<HostTensor> got = exec.outputs();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].shape(), want[0].shape());
  EXPECT_TRUE(all_close(got[0], want[0], 1)) << "max diff " << max_abs_diff(got[0], want[0]);
}

TEST(ElementwiseEndToEnd, RandomExpressionsAtRaggedShapesMatchTheFp64Reference) {
  Rng rng(2026);
  for (const char* name : {"host", "ascend910b1", "ascend950pr"}) {
    const Target target = load_target(name);
    int random_configs = 0;
    for (int trial = 0; trial < 24; ++trial) {
      Workload w{"elementwise", {ragged(rng, 64), ragged(rng, 512)}, trial % 2 ? DType::F16 : DType::F32, {},
                 testing::random_safe_expression(rng, 1 + static_cast<int>(rng() % 4))};
      const TensorGraph g = build_graph(w);
      const TileConfig config = trial % 4 == 0 ? default_config(w, g, target) : random_config(g, w, target, rng);
      random_configs += !(config == default_config(w, g, target));
      SCOPED_TRACE(std::string(name) + " " + w.key() + " with " + config.to_string());
      expect_runs_like_the_reference(w, config, target, rng);
      if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_GT(random_configs, 9) << name << ": too few random configs";
  }
}

// The comparison can fail: a reference of another expression does not match.
TEST(ElementwiseEndToEnd, AnotherExpressionsReferenceDoesNotMatch) {
  const Workload w{"elementwise", {33, 70}, DType::F32, {}, "mul(add(a,b),2.0)"};
  Workload other = w;
  other.expr = "mul(add(a,b),2.5)";
  const TensorGraph g = build_graph(w);
  const Target host = load_target("host");
  CpuExecutor exec(compile(g, default_config(w, g, host), host).program, ExecOptions{1});
  const std::vector<HostTensor> inputs = random_inputs(g, 5);
  exec.execute(inputs);
  EXPECT_TRUE(all_close(exec.outputs()[0], find_op("elementwise").reference(w, inputs)[0], 1));
  EXPECT_FALSE(all_close(exec.outputs()[0], find_op("elementwise").reference(other, inputs)[0], 1));
}

}  // namespace
}  // namespace pto
