// An elementwise expression: the `elementwise` op's chain of vector ops as a PyPTO
// tutorial writes it, "mul(add(a, b), 2.0)".
//
// Grammar (whitespace between tokens is ignored; at most kMaxExpressionChars characters
// and kMaxExpressionDepth nested calls):
//   expr   := call | tensor | number
//   call   := function '(' expr (',' expr)* ')'
//   tensor := [a-z][a-z0-9_]*   (not a function name): an input of the workload's shape
//   number := ['-'] digits ['.' digits] [('e'|'E') ['+'|'-'] digits]   (a float scalar)
// The functions are the vector ops of the Tensor Graph, one graph node per call, named
// as PyPTO names them (max and min are accepted for maximum and minimum): see
// expression_functions(). A call reads at least one tensor, and the whole expression
// is a call. Inputs are the tensors in order of first appearance.
//
// The canonical text (Expression::text) is the key's spelling: no whitespace, the
// PyPTO function names, numbers as the shortest decimal that reads back the same
// double, with a ".0" when integral ("2" -> "2.0"). Parsing the canonical text gives
// it back. Errors are usage Errors naming the bad token and its 1-based position.
#pragma once

#include <string>
#include <vector>

#include "core/tensor_graph.h"

namespace pto {

constexpr size_t kMaxExpressionChars = 4096;
constexpr int kMaxExpressionDepth = 64;

struct ExprNode {
  enum class Kind { Tensor, Number, Call };
  Kind kind = Kind::Tensor;
  std::string name;  // Tensor: its name; Call: the canonical function name
  int input = -1;    // Tensor: its index in Expression::inputs
  OpKind op = OpKind::Input;  // Call: the graph op
  double value = 0;           // Number
  std::vector<ExprNode> args; // Call
};

struct Expression {
  ExprNode root;
  std::vector<std::string> inputs;  // tensor names, in order of first appearance
  std::string text() const;         // canonical
};

struct ExpressionFunction {
  const char* name;   // canonical (PyPTO's)
  const char* alias;  // another accepted spelling, or nullptr
  OpKind op;
  int arity;
};
const std::vector<ExpressionFunction>& expression_functions();

Expression parse_expression(const std::string& text);
// parse_expression(text).text(): what a workload key holds.
std::string canonical_expression(const std::string& text);

// The expression as Tensor Graph nodes over `inputs` (one node per Expression::inputs
// entry, in that order), one node per call, each named for its place in the text.
NodeId build_expression(GraphBuilder& b, const Expression& e, const std::vector<NodeId>& inputs);

// The expression at one point, in fp64, given each input's value there (in
// Expression::inputs order).
double evaluate_expression(const ExprNode& node, const double* values);

}  // namespace pto
