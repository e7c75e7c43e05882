#include "core/workload.h"

#include <cctype>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/shown_value.h"
#include "core/expression.h"
#include "core/parse_number.h"

namespace pto {

namespace {

constexpr const char* kExprField = "expr=";

// Splits on any of `separators`, keeping empty pieces (so "4,,4" reports the empty one).
std::vector<std::string> split(const std::string& text, std::string_view separators) {
  std::vector<std::string> pieces(1);
  for (char c : text) {
    if (separators.find(c) != std::string_view::npos) {
      pieces.emplace_back();
    } else {
      pieces.back() += c;
    }
  }
  return pieces;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (unsigned char c : s) {
    if (!std::isalnum(c) && c != '_') return false;
  }
  return true;
}

std::string attr_value(const std::string& name, int64_t value) {
  if (is_dtype_attr(name) && value >= 0 && value <= static_cast<int64_t>(DType::Bool))
    return dtype_name(static_cast<DType>(value));
  return std::to_string(value);
}

}  // namespace

bool is_dtype_attr(const std::string& name) { return name == "kv_dtype"; }

std::string Workload::key() const {
  std::string k = op + "|";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) k += ',';
    k += std::to_string(shape[i]);
  }
  k += "|";
  k += dtype_name(dtype);
  char separator = '|';  // attrs are a fourth field only when there are any
  for (const auto& [name, value] : attrs) {
    k += separator;
    k += name + "=" + attr_value(name, value);
    separator = ',';
  }
  if (!expr.empty()) k += std::string("|") + kExprField + expr;
  return k;
}

Workload Workload::parse_key(const std::string& key) {
  std::vector<std::string> fields = split(key, "|");
  Workload w;
  if (fields.size() > 3 && fields.back().starts_with(kExprField)) {
    w.expr = canonical_expression(fields.back().substr(std::string_view(kExprField).size()));
    fields.pop_back();
  }
  if (fields.size() != 3 && fields.size() != 4) {
    usage_error("bad workload key " + shown_value(key) + ": expected op|shape|dtype[|attrs][|expr=EXPR]");
  }
  w.op = fields[0];
  if (!is_identifier(w.op)) usage_error("bad workload key " + shown_value(key) + ": bad op name " + shown_value(w.op));
  w.shape = parse_shape_list(fields[1]);
  w.dtype = parse_dtype(fields[2]);
  if (fields.size() == 4) w.attrs = parse_attrs(fields[3]);
  return w;
}

int64_t Workload::attr(const std::string& name, int64_t fallback) const {
  const auto it = attrs.find(name);
  return it == attrs.end() ? fallback : it->second;
}

Shape parse_shape_list(const std::string& text) {
  if (text.empty()) usage_error("bad shape '': expected sizes like 4096,4096,4096");
  Shape shape;
  for (const std::string& token : split(text, ",x")) {
    const auto size = parse_int64(token);
    if (token.empty()) usage_error("bad shape " + shown_value(text) + ": an empty size (separators are ',' and 'x')");
    if (!size || *size <= 0) {
      usage_error("bad shape " + shown_value(text) + ": " + shown_value(token) + " is not a positive integer");
    }
    shape.push_back(*size);
  }
  return shape;
}

std::map<std::string, int64_t> parse_attrs(const std::string& text) {
  std::map<std::string, int64_t> attrs;
  if (text.empty()) return attrs;
  for (const std::string& token : split(text, ",")) {
    const size_t eq = token.find('=');
    const std::string name = token.substr(0, eq);
    const std::string given = eq == std::string::npos ? "" : token.substr(eq + 1);
    std::optional<int64_t> value = eq == std::string::npos ? std::nullopt : parse_int64(given);
    if (!value && is_dtype_attr(name) && !given.empty()) value = static_cast<int64_t>(parse_dtype(given));
    if (!is_identifier(name) || !value) {
      usage_error("bad attribute " + shown_value(token) + " in " + shown_value(text) + ": expected name=integer" +
                  (is_dtype_attr(name) ? " or a dtype name" : ""));
    }
    if (!attrs.emplace(name, *value).second) {
      usage_error("attribute " + shown_value(name) + " is given twice in " + shown_value(text));
    }
  }
  return attrs;
}

}  // namespace pto
