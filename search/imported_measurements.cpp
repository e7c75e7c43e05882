#include "search/imported_measurements.h"

#include <array>
#include <charconv>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/shown_value.h"
#include "core/utf8.h"
#include "measure/measure_protocol.h"

namespace pto::search {

namespace {

using nlohmann::json;

// ---- CSV ---------------------------------------------------------------------------------

// One line's fields: commas split, a field in double quotes may hold commas and "" for a
// quote. mstuner writes none, but a CSV passed through a spreadsheet may.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::vector<std::string> csv_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

constexpr const char* kRequiredColumns[] = {"case_id", "task_duration(us)", "device_id", "operation",
                                            "description", "m", "n", "k"};

// A data row of the CSV, its fields by column name.
struct Row {
  const std::map<std::string, size_t>& columns;
  const std::vector<std::string>& fields;

  bool has(const std::string& column) const {
    auto it = columns.find(column);
    return it != columns.end() && !fields[it->second].empty();
  }
  const std::string& at(const std::string& column) const { return fields[columns.at(column)]; }

  double positive_number(const std::string& column) const {
    const std::string& text = at(column);
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value <= 0)
      usage_error(column + " '" + text + "' is not a positive number");
    return value;
  }
  int64_t positive_integer(const std::string& column) const {
    const std::string& text = at(column);
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value <= 0)
      usage_error(column + " '" + text + "' is not a positive integer");
    return value;
  }
};

// "64x128x32" as its three sizes, M N K. A size past int64 (std::stoll threw its
// out_of_range here: found by tests/fuzz/import_fuzz) is a usage error naming the tile.
std::array<int64_t, 3> tile_shape(const std::string& text, const std::string& what) {
  static const std::regex shape(R"((\d+)x(\d+)x(\d+))");
  std::smatch match;
  if (!std::regex_match(text, match, shape)) usage_error(what + " " + shown_value(text) + " is not MxNxK");
  std::array<int64_t, 3> sizes{};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string digits = match[i + 1];
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), sizes[i]);
    if (error != std::errc() || end != digits.data() + digits.size())
      usage_error(what + " " + shown_value(text) + ": " + shown_value(digits) + " is past a 64-bit size");
  }
  return sizes;
}

// The row's L1 and L0 tile shapes (module comment).
std::pair<std::array<int64_t, 3>, std::array<int64_t, 3>> tile_shapes(const Row& row) {
  if (row.has("l1_tile_shape") && row.has("l0_tile_shape"))
    return {tile_shape(row.at("l1_tile_shape"), "l1_tile_shape"), tile_shape(row.at("l0_tile_shape"), "l0_tile_shape")};
  static const std::regex named(R"(_(\d+x\d+x\d+)_(\d+x\d+x\d+)_swizzle)");
  std::smatch match;
  const std::string& description = row.at("description");
  if (!std::regex_search(description, match, named))
    usage_error("description '" + description + "' names no tiles (expected ..._L1MxNxK_L0MxNxK_swizzle..., or the "
                "columns l1_tile_shape and l0_tile_shape)");
  return {tile_shape(match[1], "description's L1 tile"), tile_shape(match[2], "description's L0 tile")};
}

// A, B columns ("fp16:row", "fp16:column"): the element type and the transpose flags.
void apply_operand_layouts(const Row& row, Workload& w) {
  std::optional<DType> type;
  for (const auto& [column, flag] : {std::pair{"A", "transpose_a"}, std::pair{"B", "transpose_b"}}) {
    if (!row.has(column)) continue;
    const std::string& text = row.at(column);
    const size_t colon = text.find(':');
    const DType t = parse_dtype(text.substr(0, colon));
    if (type && *type != t) usage_error("A and B have different element types ('" + row.at("A") + "', '" + text + "')");
    type = t;
    const std::string layout = colon == std::string::npos ? "row" : text.substr(colon + 1);
    if (layout == "column") w.attrs[flag] = 1;
    else if (layout != "row")
      usage_error(std::string(column) + " layout '" + layout + "' has no pto-tune matmul counterpart (row or column)");
  }
  if (type) w.dtype = *type;
}

Workload row_workload(const Row& row) {
  const std::string& operation = row.at("operation");
  if (operation != "Gemm") usage_error("unknown operation '" + operation + "' (known: Gemm, the matmul)");
  Workload w{"matmul", {row.positive_integer("m"), row.positive_integer("k"), row.positive_integer("n")}, DType::F16, {}};
  apply_operand_layouts(row, w);
  return w;
}

TileConfig row_config(const Row& row) {
  const auto [l1, l0] = tile_shapes(row);  // each M, N, K
  return TileConfig::from_json(
      json{{"cube", {{"m", {l0[0], l1[0]}}, {"k", {l0[2], l1[2]}}, {"n", {l0[1], l1[1]}}}}});
}

TuningRecord imported_record(Workload w, TileConfig config, const std::string& target_name,
                             const std::string& fingerprint, measure::Measurement m, const json& detail) {
  m.backend = "npu";
  m.timestamp = static_cast<int64_t>(std::time(nullptr));
  m.detail_json = detail.dump();
  return {std::move(w), std::move(config), target_name, fingerprint, "npu", std::move(m), Versions::current(),
          kImportedStrategy};
}

// Runs `read` for one row or result, prefixing a Usage Error with where it is.
template <typename Read>
auto at_place(const std::string& file, const std::string& where, Read&& read) {
  try {
    return read();
  } catch (const Error& e) {
    fail(e.category(), "'" + file + "' " + where + ": " + e.what());
  }
}

}  // namespace

ImportedRecords records_from_mstuner_csv(const std::string& csv, const std::string& file, const Target& target,
                                         const std::string& host) {
  const std::vector<std::string> lines = csv_lines(csv);
  const std::vector<std::string> header = csv_fields(lines.front());
  std::map<std::string, size_t> columns;
  for (size_t i = 0; i < header.size(); ++i) columns.emplace(header[i], i);
  for (const char* column : kRequiredColumns)
    if (!columns.contains(column))
      usage_error("'" + file + "' line 1: the header has no column '" + column +
                  "' (an mstuner_catlass CSV has case_id,task_duration(us),device_id,operation,description,m,n,k,...)");
  ImportedRecords out;
  const std::string fingerprint = target.fingerprint();
  for (size_t line = 1, row_number = 0; line < lines.size(); ++line) {
    if (lines[line].find_first_not_of(" \t") == std::string::npos) continue;
    ++row_number;
    const std::string where = "row " + std::to_string(row_number) + " (line " + std::to_string(line + 1) + ")";
    const std::vector<std::string> fields = csv_fields(lines[line]);
    at_place(file, where, [&] {
      // Its fields go into the record's detail, which is JSON.
      if (!valid_utf8(lines[line])) usage_error("not valid UTF-8 text");
      if (fields.size() != header.size())
        usage_error(std::to_string(fields.size()) + " fields, the header has " + std::to_string(header.size()));
      const Row row{columns, fields};
      measure::Measurement m;
      const double ns = row.positive_number("task_duration(us)") * 1e3;
      m.stats = {ns, ns, ns, 1};
      m.host = host;
      const json detail{{"imported_from", file}, {"format", "mstuner-csv"}, {"row", row_number},
                        {"case_id", row.at("case_id")}, {"device_id", row.at("device_id")},
                        {"description", row.at("description")}};
      out.records.push_back(imported_record(row_workload(row), row_config(row), target.name, fingerprint, m, detail));
      return 0;
    });
    out.where.push_back(where);
  }
  return out;
}

ImportedRecords records_from_protocol_answer(const json& request_json, const json& answer_json,
                                             const std::string& file, const std::string& host) {
  const measure::ProtocolRequest request = measure::parse_protocol_request(request_json);
  std::vector<std::string> ids;
  for (const measure::ExternalCandidate& c : request.batch.candidates) ids.push_back(c.id);
  const std::vector<measure::ExternalAnswer> answers =
      at_place(file, "answer", [&] { return measure::parse_protocol_answer(answer_json, ids, measure::AnswerReading::Strict); });
  ImportedRecords out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string where = "candidate " + ids[i];
    measure::Measurement m;
    measure::apply_answer(answers[i], m);
    if (answers[i].status == measure::Status::OK && !m.ok())
      fail(ErrorCategory::Usage, "'" + file + "' " + where + ": " + m.error);
    m.host = host;
    json detail{{"imported_from", file}, {"format", "json"}, {"candidate", ids[i]}};
    if (!answers[i].device.empty()) detail["device"] = answers[i].device;
    out.records.push_back(imported_record(request.batch.workload, request.batch.candidates[i].config,
                                          request.target_name, request.target_fingerprint, m, detail));
    out.where.push_back(where);
  }
  return out;
}

}  // namespace pto::search
