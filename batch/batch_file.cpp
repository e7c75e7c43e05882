#include "batch/batch_file.h"

#include <cmath>
#include <sstream>
#include <string_view>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/error.h"
#include "core/shown_value.h"
#include "core/expression.h"
#include "core/json_read.h"
#include "core/op_library.h"
#include "core/parse_number.h"

namespace pto::batch {

namespace {

using nlohmann::json;

int64_t parse_int(const std::string& text, const std::string& token) {
  const std::optional<int64_t> v = parse_int64(text);
  if (!v) usage_error("bad number " + shown_value(text) + " in " + shown_value(token));
  return *v;
}

double checked_weight(double w, const std::string& text) {
  if (!(w > 0) || !std::isfinite(w)) usage_error("weight must be a finite number > 0, got " + shown_value(text));
  return w;
}

double parse_weight(const std::string& text) {
  size_t used = 0;
  double w = 0;
  try {
    w = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size()) usage_error("weight must be a finite number > 0, got " + shown_value(text));
  return checked_weight(w, text);
}

// The product of the dims' value lists, in order (the last dim varies fastest).
std::vector<Shape> expand_shapes(const std::vector<std::string>& dims, size_t max_workloads) {
  if (dims.empty()) usage_error("no shapes");
  std::vector<Shape> shapes{{}};
  for (const std::string& dim : dims) {
    const std::vector<int64_t> values = expand_dim(dim, max_workloads);
    // Checked before the product is built: two ranges of 100000 would otherwise make 10^10.
    if (shapes.size() * values.size() > max_workloads)
      usage_error("shapes expand to more than " + std::to_string(max_workloads) + " workloads");
    std::vector<Shape> next;
    for (const Shape& s : shapes)
      for (int64_t v : values) {
        next.push_back(s);
        next.back().push_back(v);
      }
    shapes = std::move(next);
  }
  return shapes;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  return parts;
}

// What one entry says before its shapes expand; both formats fill it.
struct RawEntry {
  std::string op;
  std::vector<std::string> dims;
  std::optional<std::string> dtype;
  std::map<std::string, int64_t> attrs;
  std::string expr;  // as written
  BatchEntry overrides;  // target, backend, budget, weight
};

void set_override(BatchEntry& e, const std::string& key, const std::string& value) {
  if (key == "target") e.target = value;
  else if (key == "backend") e.backend = value;
  else if (key == "weight") e.weight = parse_weight(value);
  else if (key == "budget") {
    e.budget = parse_int(value, "budget=" + value);
    if (*e.budget < 0) usage_error("budget must be >= 0, got " + value);
  }
}

bool is_override(const std::string& key) {
  return key == "target" || key == "backend" || key == "weight" || key == "budget";
}

// The parse so far: the entries, and what each entry line wrote, to drop repeats.
struct Parsed {
  size_t max_workloads = kMaxRangeValues;
  BatchFile out;
  std::unordered_set<std::string> seen;
};

// An entry's identity as written: its workload and overrides (two lines that say the same
// tune the same thing once).
std::string identity(const BatchEntry& e) {
  return e.workload.key() + "|" + (e.dtype_given ? "" : "no-dtype") + "|" + e.target.value_or("") + "|" +
         e.backend.value_or("") + "|" + (e.budget ? std::to_string(*e.budget) : "") + "|" + std::to_string(e.weight);
}

void expand(const RawEntry& raw, const std::string& where, Parsed& parsed) {
  BatchFile& out = parsed.out;
  BatchEntry e = raw.overrides;
  e.where = where;
  e.workload.op = find_op(raw.op).name;
  e.dtype_given = raw.dtype.has_value();
  if (raw.dtype) e.workload.dtype = parse_dtype(*raw.dtype);
  e.workload.attrs = raw.attrs;
  e.workload.expr = raw.expr.empty() ? "" : canonical_expression(raw.expr);
  const std::vector<Shape> shapes = expand_shapes(raw.dims, parsed.max_workloads);
  if (out.entries.size() + shapes.size() > parsed.max_workloads)
    usage_error("the batch would hold more than " + std::to_string(parsed.max_workloads) + " workloads");
  for (const Shape& shape : shapes) {
    e.workload.shape = shape;
    if (parsed.seen.insert(identity(e)).second) {
      out.entries.push_back(e);
    } else {
      ++out.repeated;
    }
  }
}

// An expression's words ("expr=mul(add(a,", "b),", "2.0)") joined until its parentheses close.
std::vector<std::string> join_expression_words(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  int open = 0;
  for (const std::string& w : words) {
    if (open > 0) out.back() += " " + w;
    else out.push_back(w);
    if (open > 0 || w.starts_with("expr="))
      for (char c : w) open += c == '(' ? 1 : c == ')' ? -1 : 0;
  }
  return out;
}

RawEntry raw_from_line(const std::string& line) {
  std::stringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  words = join_expression_words(words);
  if (words.size() < 2) usage_error("expected 'op shapes [dtype] [key=value ...]', got " + shown_value(line));
  RawEntry raw;
  raw.op = words[0];
  raw.dims = split(words[1], ',');
  for (size_t i = 2; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    if (eq == std::string::npos) {
      if (i != 2) usage_error("expected key=value, got " + shown_value(words[i]));
      if (words[i] != "-") raw.dtype = words[i];
      continue;
    }
    const std::string key = words[i].substr(0, eq), value = words[i].substr(eq + 1);
    if (is_override(key)) set_override(raw.overrides, key, value);
    else if (key == "expr") raw.expr = value;
    else raw.attrs[key] = parse_int(value, words[i]);
  }
  return raw;
}

std::string json_text(const json& j, const char* field) {
  if (!j.is_string()) usage_error(std::string(field) + " must be a string, got " + j.dump());
  return j.get<std::string>();
}

RawEntry raw_from_json(const json& j) {
  if (!j.is_object()) usage_error("expected an object, got " + j.dump());
  for (const auto& [key, value] : j.items())
    if (key != "op" && key != "shapes" && key != "dtype" && key != "attrs" && key != "expr" && !is_override(key))
      usage_error("unknown field " + shown_value(key));
  if (!j.contains("op")) usage_error("missing field 'op'");
  if (!j.contains("shapes")) usage_error("missing field 'shapes'");
  RawEntry raw;
  raw.op = json_text(j["op"], "op");
  const json& shapes = j["shapes"];
  if (shapes.is_string()) raw.dims = split(shapes.get<std::string>(), ',');
  else if (shapes.is_array())
    for (const json& d : shapes) raw.dims.push_back(d.is_number_integer() ? std::to_string(d.get<int64_t>()) : json_text(d, "a dim"));
  else usage_error("shapes must be a string or a list, got " + shapes.dump());
  if (j.contains("dtype")) raw.dtype = json_text(j["dtype"], "dtype");
  if (j.contains("expr")) raw.expr = json_text(j["expr"], "expr");
  if (j.contains("attrs")) {
    if (!j["attrs"].is_object()) usage_error("attrs must be an object, got " + j["attrs"].dump());
    for (const auto& [k, v] : j["attrs"].items()) {
      if (!v.is_number_integer()) usage_error("attr " + shown_value(k) + " must be an integer, got " + json_read::show(v));
      raw.attrs[k] = v.get<int64_t>();
    }
  }
  for (const char* key : {"target", "backend"})
    if (j.contains(key)) set_override(raw.overrides, key, json_text(j[key], key));
  if (j.contains("budget")) {
    if (!j["budget"].is_number_integer()) usage_error("budget must be an integer, got " + j["budget"].dump());
    set_override(raw.overrides, "budget", std::to_string(j["budget"].get<int64_t>()));
  }
  if (j.contains("weight")) {
    if (!j["weight"].is_number()) usage_error("weight must be a finite number > 0, got " + j["weight"].dump());
    raw.overrides.weight = checked_weight(j["weight"].get<double>(), j["weight"].dump());
  }
  return raw;
}

// Runs `parse` for one entry; a usage Error becomes a problem naming `where`.
template <class Parse>
void entry(Parsed& parsed, const std::string& where, Parse parse) {
  try {
    expand(parse(), where, parsed);
  } catch (const Error& e) {
    if (e.category() != ErrorCategory::Usage) throw;
    parsed.out.problems.push_back({where, e.what()});
  }
}

}  // namespace

std::vector<int64_t> expand_dim(const std::string& token, size_t max_values) {
  std::string text = token;
  if (const size_t eq = text.find('='); eq != std::string::npos) text = text.substr(eq + 1);
  const size_t dots = text.find("..");
  if (dots == std::string::npos) {
    const int64_t v = parse_int(text, token);
    if (v <= 0) usage_error("a dim must be > 0, got " + shown_value(token));
    return {v};
  }
  const size_t colon = text.find(':', dots);
  if (colon == std::string::npos) usage_error("range " + shown_value(token) + " needs a step: LO..HI:pow2 or LO..HI:stepS");
  const int64_t lo = parse_int(text.substr(0, dots), token);
  const int64_t hi = parse_int(text.substr(dots + 2, colon - dots - 2), token);
  const std::string step = text.substr(colon + 1);
  if (lo <= 0 || hi < lo) usage_error("range " + shown_value(token) + " must have 0 < LO <= HI");
  std::vector<int64_t> values;
  if (step == "pow2") {
    for (int64_t v = 1;; v *= 2) {  // stops before doubling past HI: no overflow near 2^63
      if (v >= lo) values.push_back(v);
      if (v > hi / 2) break;
    }
  } else if (step.starts_with("step")) {
    const int64_t s = parse_int(step.substr(4), token);
    if (s <= 0) usage_error("range " + shown_value(token) + " needs a step > 0");
    const int64_t count = (hi - lo) / s + 1;
    if (count > static_cast<int64_t>(max_values))
      usage_error("range " + shown_value(token) + " has more than " + std::to_string(max_values) + " values");
    for (int64_t i = 0; i < count; ++i) values.push_back(lo + i * s);  // <= HI: never past it
  } else {
    usage_error("range " + shown_value(token) + ": unknown step " + shown_value(step) + " (pow2 or stepS)");
  }
  if (values.empty()) usage_error("range " + shown_value(token) + " holds no value");
  return values;
}

BatchFile parse_batch(const std::string& given, const std::string& name, size_t max_workloads) {
  Parsed parsed;
  parsed.max_workloads = max_workloads;
  BatchFile& out = parsed.out;
  // A UTF-8 byte order mark (as some editors save) is not part of the first entry.
  const std::string_view bom = "\xEF\xBB\xBF";
  const std::string text = given.starts_with(bom) ? given.substr(bom.size()) : given;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    // json_read::parse: every library error (a number past a double's range, nesting
    // past kMaxDepth) is a usage error, as for every JSON input.
    const json j = json_read::parse(text, name);
    if (!j.is_array()) usage_error(name + ": expected a JSON list of entries");
    for (size_t i = 0; i < j.size(); ++i)
      entry(parsed, "entry " + std::to_string(i), [&] { return raw_from_json(j[i]); });
  } else {
    const std::vector<std::string> lines = split(text, '\n');
    for (size_t i = 0; i < lines.size(); ++i) {
      std::string line = lines[i].substr(0, lines[i].find('#'));
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      entry(parsed, "line " + std::to_string(i + 1), [&] { return raw_from_line(line); });
    }
  }
  if (out.entries.empty() && out.problems.empty()) usage_error(name + ": no entries");
  return std::move(parsed.out);
}

BatchFile read_batch_file(const std::string& path) {
  return parse_batch(json_read::read_text_file(path, "batch file", kMaxBatchFileBytes), path);
}

}  // namespace pto::batch
