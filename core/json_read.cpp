#include "core/json_read.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"

namespace pto::json_read {

namespace {
constexpr size_t kMaxShown = 60;
}  // namespace

std::string show(const json& value) {
  // `replace` keeps a message printable even for strings that are not valid UTF-8.
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kMaxShown) text = text.substr(0, kMaxShown - 3) + "...";
  return text;
}

void bad_value(const std::string& path, std::string_view expected, const json& got) {
  usage_error(path + ": expected " + std::string(expected) + ", got " + show(got));
}

int64_t integer(const json& value, const std::string& path, int64_t min, int64_t max,
                std::string_view expected) {
  if (!value.is_number_integer()) bad_value(path, expected, value);
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    bad_value(path, expected, value);
  }
  const int64_t v = value.get<int64_t>();
  if (v < min || v > max) bad_value(path, expected, value);
  return v;
}

double positive_number(const json& value, const std::string& path, bool allow_zero) {
  const char* expected = allow_zero ? "a non-negative number" : "a positive number";
  if (!value.is_number()) bad_value(path, expected, value);
  const double v = value.get<double>();
  if (!std::isfinite(v) || v < 0 || (v == 0 && !allow_zero)) bad_value(path, expected, value);
  return v;
}

bool boolean(const json& value, const std::string& path) {
  if (!value.is_boolean()) bad_value(path, "true or false", value);
  return value.get<bool>();
}

std::string string(const json& value, const std::string& path) {
  if (!value.is_string()) bad_value(path, "a string", value);
  return value.get<std::string>();
}

const json& object(const json& value, const std::string& path) {
  if (!value.is_object()) bad_value(path.empty() ? "config" : path, "an object", value);
  return value;
}

const json& array(const json& value, const std::string& path, size_t min_size, size_t max_size) {
  std::string expected = "an array of ";
  if (min_size == max_size) {
    expected += std::to_string(min_size);
  } else if (max_size == std::numeric_limits<size_t>::max()) {
    expected += "at least " + std::to_string(min_size);
  } else {
    expected += std::to_string(min_size) + " to " + std::to_string(max_size);
  }
  expected += (max_size == 1 ? " element" : " elements");
  if (!value.is_array() || value.size() < min_size || value.size() > max_size) {
    bad_value(path, expected, value);
  }
  return value;
}

void reject_unknown_keys(const json& obj, const std::string& path,
                         const std::vector<std::string_view>& known) {
  for (const auto& [key, unused] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    usage_error((path.empty() ? std::string("config") : path) + ": unknown key " +
                show(json(key)) + " (known keys: " + list + ")");
  }
}

std::string member_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string index_path(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

json parse(const std::string& text, std::string_view what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse errors, and numbers too large for a double
    // Drop the library's "[json.exception.parse_error.101] " tag; keep where and why.
    std::string why = e.what();
    if (const size_t tag_end = why.find("] "); why.starts_with("[json.exception") && tag_end != std::string::npos) {
      why = why.substr(tag_end + 2);
    }
    usage_error(std::string(what) + " is not valid JSON: " + why);
  }
}

std::string read_text_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  // A directory opens fine as a stream on Linux and then reads nothing.
  if (!in || std::filesystem::is_directory(path, ec)) {
    fail(ErrorCategory::Io, "cannot read " + std::string(what) + " '" + path + "'");
  }
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) fail(ErrorCategory::Io, "cannot read " + std::string(what) + " '" + path + "'");
  return text;
}

}  // namespace pto::json_read
