// Elementwise expressions (core/expression.h): a tokenizer-free recursive-descent
// parser over the text, the canonical printer, the graph builder and the fp64
// evaluator the reference kernel runs.
#include "core/expression.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "core/shown_value.h"

namespace pto {
namespace {

// The shortest decimal that reads back as the same double, with ".0" when integral.
std::string number_text(double v) {
  char text[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, v);
    if (std::strtod(text, nullptr) == v) break;
  }
  const std::string out = text;
  return out.find_first_of(".e") == std::string::npos ? out + ".0" : out;
}

const ExpressionFunction* find_function(const std::string& name) {
  for (const ExpressionFunction& f : expression_functions())
    if (name == f.name || (f.alias && name == f.alias)) return &f;
  return nullptr;
}

std::string function_list() {
  std::string out;
  for (const ExpressionFunction& f : expression_functions()) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

bool is_name_start(char c) { return c >= 'a' && c <= 'z'; }
bool is_name_char(char c) { return is_name_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Expression parse() {
    if (text_.size() > kMaxExpressionChars)
      usage_error("expression: " + std::to_string(text_.size()) + " characters, at most " +
                  std::to_string(kMaxExpressionChars));
    skip_space();
    if (at_end()) usage_error("expression: empty (write e.g. --expr 'mul(add(a,b),2.0)')");
    const size_t start = pos_;
    Expression e;
    e.root = expr(0);
    skip_space();
    if (!at_end()) fail("unexpected '" + token_at(pos_) + "' after the expression");
    if (e.root.kind != ExprNode::Kind::Call)
      fail_at(start, "'" + text_.substr(start, pos_ - start) + "' is not a call: the expression needs at least one op (" +
                         function_list() + ")");
    e.inputs = std::move(inputs_);
    return e;
  }

 private:
  ExprNode expr(int depth) {
    if (depth >= kMaxExpressionDepth)
      fail("calls nested deeper than " + std::to_string(kMaxExpressionDepth));
    skip_space();
    if (at_end()) fail("the expression ends where an operand was expected");
    const char c = text_[pos_];
    if (c == '-' || c == '.' || is_digit(c)) return number();
    if (is_name_start(c)) return name(depth);
    fail("unexpected '" + token_at(pos_) + "': expected a call, a tensor name (lowercase) or a number");
  }

  ExprNode number() {
    const size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    while (!at_end() && (is_digit(text_[pos_]) || text_[pos_] == '.')) ++pos_;
    if (!at_end() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (!at_end() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      while (!at_end() && is_digit(text_[pos_])) ++pos_;
    }
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;  // "2x" is one bad token
    const std::string token = text_.substr(start, pos_ - start);
    ExprNode n;
    n.kind = ExprNode::Kind::Number;
    const char* end = token.data() + token.size();
    const auto [ptr, ec] = std::from_chars(token.data(), end, n.value);
    if (ec != std::errc() || ptr != end || !std::isfinite(n.value))
      fail_at(start, "bad number '" + token + "'");
    return n;
  }

  ExprNode name(int depth) {
    const size_t start = pos_;
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    const std::string word = text_.substr(start, pos_ - start);
    const ExpressionFunction* f = find_function(word);
    skip_space();
    const bool called = !at_end() && text_[pos_] == '(';
    if (!f) {
      if (called) fail_at(start, "unknown function '" + word + "' (known: " + function_list() + ")");
      return tensor(word);
    }
    if (!called) fail_at(start, "'" + word + "' is a function: expected '(' after it (a tensor may not be named so)");
    ++pos_;
    ExprNode n;
    n.kind = ExprNode::Kind::Call;
    n.name = f->name;
    n.op = f->op;
    for (;;) {
      n.args.push_back(expr(depth + 1));
      skip_space();
      if (at_end()) fail("'" + word + "(' is not closed: expected ')'");
      if (text_[pos_] == ')') break;
      if (text_[pos_] != ',') fail("unexpected '" + token_at(pos_) + "' in the arguments of '" + word + "': expected ',' or ')'");
      ++pos_;
    }
    ++pos_;
    if (static_cast<int>(n.args.size()) != f->arity)
      fail_at(start, "'" + word + "' takes " + std::to_string(f->arity) + " argument" + (f->arity == 1 ? "" : "s") +
                         ", got " + std::to_string(n.args.size()));
    const bool reads_tensor = std::any_of(n.args.begin(), n.args.end(),
                                          [](const ExprNode& a) { return a.kind != ExprNode::Kind::Number; });
    if (!reads_tensor)
      fail_at(start, "'" + text_.substr(start, pos_ - start) + "' reads no tensor (a call needs a tensor operand)");
    return n;
  }

  ExprNode tensor(const std::string& word) {
    ExprNode n;
    n.kind = ExprNode::Kind::Tensor;
    n.name = word;
    const auto known = std::find(inputs_.begin(), inputs_.end(), word);
    n.input = static_cast<int>(known - inputs_.begin());
    if (known == inputs_.end()) inputs_.push_back(word);
    return n;
  }

  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }

  // The token that starts at `at`: a name or number, or the single character.
  std::string token_at(size_t at) const {
    size_t end = at;
    while (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_' ||
                                  text_[end] == '.'))
      ++end;
    return text_.substr(at, std::max<size_t>(end - at, 1));
  }

  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
  [[noreturn]] void fail_at(size_t at, const std::string& what) const {
    usage_error("expression " + shown_value(text_) + ": " + what + " at position " + std::to_string(at + 1));
  }

  const std::string& text_;
  size_t pos_ = 0;
  std::vector<std::string> inputs_;
};

void print(const ExprNode& n, std::string& out) {
  switch (n.kind) {
    case ExprNode::Kind::Tensor: out += n.name; return;
    case ExprNode::Kind::Number: out += number_text(n.value); return;
    case ExprNode::Kind::Call:
      out += n.name;
      out += '(';
      for (size_t i = 0; i < n.args.size(); ++i) {
        if (i) out += ',';
        print(n.args[i], out);
      }
      out += ')';
      return;
  }
}

// Operands first, so that calls are numbered in the order they compute (add0, mul1).
NodeId build(GraphBuilder& b, const ExprNode& n, const std::vector<NodeId>& inputs, int& calls) {
  if (n.kind == ExprNode::Kind::Tensor) return inputs.at(static_cast<size_t>(n.input));
  std::vector<NodeId> operands;
  for (const ExprNode& a : n.args)
    if (a.kind != ExprNode::Kind::Number) operands.push_back(build(b, a, inputs, calls));
  const std::string name = n.name + std::to_string(calls++);
  if (n.args.size() == 1) return b.unary(n.op, operands[0], name);
  const ExprNode &x = n.args[0], &y = n.args[1];
  if (x.kind == ExprNode::Kind::Number) return b.binary_scalar(n.op, operands[0], x.value, true, name);
  if (y.kind == ExprNode::Kind::Number) return b.binary_scalar(n.op, operands[0], y.value, false, name);
  return b.binary(n.op, operands[0], operands[1], name);
}

}  // namespace

const std::vector<ExpressionFunction>& expression_functions() {
  static const std::vector<ExpressionFunction> functions = {
      {"add", nullptr, OpKind::Add, 2},        {"sub", nullptr, OpKind::Sub, 2},
      {"mul", nullptr, OpKind::Mul, 2},        {"div", nullptr, OpKind::Div, 2},
      {"maximum", "max", OpKind::Max, 2},      {"minimum", "min", OpKind::Min, 2},
      {"exp", nullptr, OpKind::Exp, 1},        {"log", nullptr, OpKind::Log, 1},
      {"sqrt", nullptr, OpKind::Sqrt, 1},      {"rsqrt", nullptr, OpKind::Rsqrt, 1},
      {"abs", nullptr, OpKind::Abs, 1},        {"neg", nullptr, OpKind::Neg, 1},
      {"erf", nullptr, OpKind::Erf, 1},        {"erfc", nullptr, OpKind::Erfc, 1},
      {"tanh", nullptr, OpKind::Tanh, 1},
  };
  return functions;
}

std::string Expression::text() const {
  std::string out;
  print(root, out);
  return out;
}

Expression parse_expression(const std::string& text) { return Parser(text).parse(); }

std::string canonical_expression(const std::string& text) { return parse_expression(text).text(); }

NodeId build_expression(GraphBuilder& b, const Expression& e, const std::vector<NodeId>& inputs) {
  if (inputs.size() != e.inputs.size())
    internal_error("build_expression: " + std::to_string(inputs.size()) + " inputs for " +
                   std::to_string(e.inputs.size()) + " tensors");
  int calls = 0;
  return build(b, e.root, inputs, calls);
}

double evaluate_expression(const ExprNode& n, const double* values) {
  if (n.kind == ExprNode::Kind::Tensor) return values[n.input];
  if (n.kind == ExprNode::Kind::Number) return n.value;
  const double x = evaluate_expression(n.args[0], values);
  const double y = n.args.size() > 1 ? evaluate_expression(n.args[1], values) : 0;
  switch (n.op) {
    case OpKind::Add: return x + y;
    case OpKind::Sub: return x - y;
    case OpKind::Mul: return x * y;
    case OpKind::Div: return x / y;
    case OpKind::Max: return std::max(x, y);
    case OpKind::Min: return std::min(x, y);
    case OpKind::Exp: return std::exp(x);
    case OpKind::Log: return std::log(x);
    case OpKind::Sqrt: return std::sqrt(x);
    case OpKind::Rsqrt: return 1 / std::sqrt(x);
    case OpKind::Abs: return std::fabs(x);
    case OpKind::Neg: return -x;
    case OpKind::Erf: return std::erf(x);
    case OpKind::Erfc: return std::erfc(x);
    case OpKind::Tanh: return std::tanh(x);
    default: internal_error(std::string("evaluate_expression: no fp64 form of ") + op_kind_name(n.op));
  }
}

}  // namespace pto
