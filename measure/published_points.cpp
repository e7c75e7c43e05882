#include "measure/published_points.h"

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/analyze.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/json_read.h"
#include "core/op_library.h"

namespace pto {
namespace {

using nlohmann::json;
namespace jr = json_read;

Mapping parse_mapping(const json& j, const std::string& path) {
  const std::string name = jr::string(j, path);
  if (name == "exact") return Mapping::Exact;
  if (name == "approximate") return Mapping::Approximate;
  if (name == "none") return Mapping::None;
  jr::bad_value(path, "\"exact\", \"approximate\" or \"none\"", j);
}

const json& field(const json& record, const std::string& key, const std::string& where) {
  if (!record.contains(key)) usage_error(where + ": missing field '" + key + "'");
  return record.at(key);
}

// The config must compile on the target the record is simulated on.
void check_feasible(const PublishedPoint& p, const std::string& where) {
  const TensorGraph graph = build_graph(p.workload);
  const TilingSummary summary = analyze(graph, *p.config, p.target_with_cores());
  if (!summary.feasible)
    usage_error(where + ".config: " + p.config->to_string() + " is infeasible on " + p.target + ": " +
                format_violations(summary.violations));
}

PublishedPoint parse_point(const json& r, const json& sources, const std::string& where) {
  jr::object(r, where);
  PublishedPoint p;
  p.id = jr::string(field(r, "id", where), where + ".id");
  const std::string at = where + " (" + p.id + ")";
  p.source = jr::string(field(r, "source", at), at + ".source");
  if (!sources.contains(p.source)) usage_error(at + ".source: '" + p.source + "' is not in the file's sources");
  p.repo = jr::string(field(sources.at(p.source), "repo", "sources." + p.source), "sources." + p.source + ".repo");
  p.path = jr::string(field(sources.at(p.source), "path", "sources." + p.source), "sources." + p.source + ".path");
  p.verified = jr::boolean(field(r, "verified", at), at + ".verified");
  p.chip = jr::string(field(r, "chip", at), at + ".chip");
  p.target = jr::string(field(r, "target", at), at + ".target");
  try {
    load_target(p.target);
  } catch (const Error& e) {
    usage_error(at + ".target: " + e.what());
  }
  p.cores = static_cast<int>(jr::positive_integer(field(r, "cores", at), at + ".cores"));
  p.workload.op = jr::string(field(r, "op", at), at + ".op");
  for (const json& d : jr::array(field(r, "shape", at), at + ".shape", 1, 5))
    p.workload.shape.push_back(jr::positive_integer(d, at + ".shape[]"));
  p.workload.dtype = parse_dtype(jr::string(field(r, "dtype", at), at + ".dtype"));
  if (r.contains("attrs"))
    for (const auto& [key, value] : jr::object(r.at("attrs"), at + ".attrs").items())
      p.workload.attrs[key] = jr::integer(value, at + ".attrs." + key, 0, 1, "0 or 1");
  p.tiling = jr::string(field(r, "tiling", at), at + ".tiling");
  p.mapping = parse_mapping(field(r, "mapping", at), at + ".mapping");
  p.mapping_note = jr::string(field(r, "mapping_note", at), at + ".mapping_note");
  p.measured_us = jr::positive_number(field(r, "measured_us", at), at + ".measured_us");
  if (r.contains("metric")) p.metric = jr::string(r.at("metric"), at + ".metric");
  if (r.contains("launch_included")) p.launch_included = jr::boolean(r.at("launch_included"), at + ".launch_included");
  if (r.contains("fit")) p.in_fit = jr::boolean(r.at("fit"), at + ".fit");
  if (!p.in_fit) p.fit_note = jr::string(field(r, "fit_note", at), at + ".fit_note");
  if (r.contains("pipes_us"))
    for (const auto& [pipe, value] : jr::object(r.at("pipes_us"), at + ".pipes_us").items())
      p.pipes_us[pipe] = jr::positive_number(value, at + ".pipes_us." + pipe);
  const json& config = field(r, "config", at);
  if (config.is_null() != (p.mapping == Mapping::None))
    usage_error(at + ".config: a config is given exactly when mapping is not \"none\"");
  if (!config.is_null()) {
    find_op(p.workload.op);  // usage Error listing the known ops
    p.config = TileConfig::from_json(config);
    check_feasible(p, at);
  }
  return p;
}

}  // namespace

const char* mapping_name(Mapping m) {
  switch (m) {
    case Mapping::Exact: return "exact";
    case Mapping::Approximate: return "approximate";
    case Mapping::None: return "none";
  }
  return "none";
}

std::string target_family(const std::string& target) {
  return target.rfind("ascend950", 0) == 0 ? "950" : "A2/A3";
}

Target PublishedPoint::target_with_cores() const {
  Target t = load_target(target);
  const bool vector_op = !config || (!config->cube && !config->attention);  // flash_attention runs on clusters
  if (vector_op && t.split_cores) {
    t.aiv_cores = cores;
    t.aic_cores = std::max(1, cores / 2);
  } else {
    t.aic_cores = cores;
    t.aiv_cores = t.split_cores ? 2 * cores : cores;
  }
  return t;
}

std::vector<PublishedPoint> load_published_points(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(ErrorCategory::Io, "cannot read published measurements '" + path + "'");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    usage_error(path + ": not JSON: " + e.what());
  }
  jr::object(j, path);
  const json& sources = jr::object(field(j, "sources", path), "sources");
  std::vector<PublishedPoint> points;
  std::set<std::string> ids;
  const json& records = jr::array(field(j, "records", path), "records", 1, 100000);
  for (size_t i = 0; i < records.size(); ++i) {
    points.push_back(parse_point(records[i], sources, "records[" + std::to_string(i) + "]"));
    if (!ids.insert(points.back().id).second) usage_error("records[" + std::to_string(i) + "]: duplicate id '" + points.back().id + "'");
  }
  return points;
}

}  // namespace pto
