// Reading user-supplied JSON (tile configs, target descriptions) with errors that name
// the field path and the bad value: "cube.k[1]: expected a positive integer, got -3".
//
// The parsers of TileConfig and Target share these so that every input file reports
// mistakes the same way; each throws a usage Error.
//
// Outside input is bounded before anything recurses over it or holds it whole: files
// are read up to kMaxFileBytes, JSON nests at most kMaxDepth levels (a deeper value
// would overflow the stack of any recursive walk, the library's own dump included),
// and messages show a bounded prefix of a value without serialising all of it.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace pto::json_read {

using nlohmann::json;

constexpr int kMaxDepth = 64;                   // nesting levels of a JSON document
constexpr size_t kMaxFileBytes = 4 << 20;      // 4 MiB: a config or target file
constexpr size_t kMaxExportBytes = size_t{1} << 30;  // 1 GiB: a release export (~450 B a record)

// The value as it would appear in the input, shortened when long; only the part shown
// is ever serialised.
std::string show(const json& value);

[[noreturn]] void bad_value(const std::string& path, std::string_view expected, const json& got);

// An integer in [min, max]; `expected` describes the range ("a positive integer").
int64_t integer(const json& value, const std::string& path, int64_t min, int64_t max,
                std::string_view expected);
inline int64_t positive_integer(const json& value, const std::string& path) {
  return integer(value, path, 1, std::numeric_limits<int64_t>::max(), "a positive integer");
}

// Any finite number, integer or not, that is > 0 (or >= 0 when `allow_zero`).
double positive_number(const json& value, const std::string& path, bool allow_zero = false);

bool boolean(const json& value, const std::string& path);
std::string string(const json& value, const std::string& path);

// Checks the kind of a container and returns it, so calls chain.
const json& object(const json& value, const std::string& path);
const json& array(const json& value, const std::string& path, size_t min_size, size_t max_size);

// Usage error naming the first key of `obj` not in `known` (and listing the known ones).
void reject_unknown_keys(const json& obj, const std::string& path,
                         const std::vector<std::string_view>& known);

// "cube" + "k" -> "cube.k"; "" + "vec" -> "vec"; "cube.k" + 1 -> "cube.k[1]".
std::string member_path(const std::string& parent, std::string_view key);
std::string index_path(const std::string& parent, size_t index);

// Parses JSON text; usage Error "<what> is not valid JSON: <where and why>", also for
// nesting deeper than kMaxDepth. A key given twice in one object is a warning
// (core/warning.h): the last one wins, as in every JSON library, but it is rarely meant.
json parse(const std::string& text, std::string_view what);

// The whole content of a file the user named. Usage Error when it is missing, a
// folder, empty or larger than `max_bytes` (the path is the input's fault); io
// Error when reading it fails midway.
std::string read_text_file(const std::string& path, std::string_view what, size_t max_bytes = kMaxFileBytes);

}  // namespace pto::json_read
