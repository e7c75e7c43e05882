#include "core/tile_config.h"

#include <array>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_read.h"

namespace pto {

namespace jr = json_read;
using nlohmann::json;

namespace {

constexpr size_t kMaxVecDims = 4;
constexpr int kMaxNbuffer = 4;

Shape positive_sizes(const json& value, const std::string& path, size_t min_size,
                     size_t max_size) {
  jr::array(value, path, min_size, max_size);
  Shape sizes;
  for (size_t i = 0; i < value.size(); ++i) {
    sizes.push_back(jr::positive_integer(value[i], jr::index_path(path, i)));
  }
  return sizes;
}

CubeTile cube_from_json(const json& j, const std::string& path) {
  jr::object(j, path);
  jr::reject_unknown_keys(j, path, {"m", "k", "n", "split_k", "k_view"});
  for (const char* axis : {"m", "k", "n"}) {
    if (!j.contains(axis)) usage_error(path + "." + axis + ": missing (a cube tile needs m, k and n)");
  }
  CubeTile c;
  const Shape m = positive_sizes(j.at("m"), path + ".m", 2, 2);
  const Shape k = positive_sizes(j.at("k"), path + ".k", 2, 3);
  const Shape n = positive_sizes(j.at("n"), path + ".n", 2, 2);
  c.mL0 = m[0];
  c.mL1 = m[1];
  c.kL0 = k[0];
  c.kAL1 = k[1];
  c.kBL1 = k.size() == 3 ? k[2] : k[1];
  c.k_short_form = k.size() == 2;
  c.nL0 = n[0];
  c.nL1 = n[1];
  if (j.contains("split_k")) c.split_k = jr::boolean(j.at("split_k"), path + ".split_k");
  if (j.contains("k_view")) c.k_view = jr::positive_integer(j.at("k_view"), path + ".k_view");
  return c;
}

json cube_to_json(const CubeTile& c) {
  // The short form only says what it means when both L1 K sizes agree.
  const bool short_k = c.k_short_form && c.kAL1 == c.kBL1;
  json j = {{"m", {c.mL0, c.mL1}},
            {"k", short_k ? json{c.kL0, c.kAL1} : json{c.kL0, c.kAL1, c.kBL1}},
            {"n", {c.nL0, c.nL1}},
            {"split_k", c.split_k}};
  if (c.k_view > 0) j["k_view"] = c.k_view;  // absent keeps older records' JSON as it was
  return j;
}

std::vector<std::vector<int>> fusion_from_json(const json& j) {
  jr::array(j, "fusion", 1, std::numeric_limits<size_t>::max());
  std::vector<std::vector<int>> groups;
  std::set<int> seen;
  for (size_t g = 0; g < j.size(); ++g) {
    const std::string group_path = jr::index_path("fusion", g);
    jr::array(j[g], group_path, 1, std::numeric_limits<size_t>::max());
    std::vector<int> group;
    for (size_t i = 0; i < j[g].size(); ++i) {
      const std::string path = jr::index_path(group_path, i);
      const int id = static_cast<int>(jr::integer(j[g][i], path, 0, std::numeric_limits<int>::max(),
                                                  "a node id (a non-negative integer)"));
      if (!seen.insert(id).second) {
        usage_error(path + ": node " + std::to_string(id) + " appears in more than one place");
      }
      group.push_back(id);
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

template <class Enum, size_t N>
Enum enum_from_json(const json& j, const std::string& path, const std::array<Enum, N>& values,
                    const char* (*name)(Enum)) {
  const std::string text = jr::string(j, path);
  std::string known;
  for (Enum e : values) {
    if (text == name(e)) return e;
    known += (known.empty() ? "" : ", ") + std::string(name(e));
  }
  usage_error(path + ": unknown value '" + text + "' (expected " + known + ")");
}

constexpr std::array kReduceForms = {ReduceForm::Online, ReduceForm::Passes};
constexpr std::array kTaskOrders = {TaskOrder::Bhq, TaskOrder::Qbh, TaskOrder::HeavyFirst};

AttentionTiles attention_from_json(const json& j) {
  jr::object(j, "attention");
  jr::reject_unknown_keys(j, "attention", {"q_tile", "kv_tile", "kv_split", "order", "preload"});
  for (const char* key : {"q_tile", "kv_tile"})
    if (!j.contains(key)) usage_error(std::string("attention.") + key + ": missing (the loop needs q_tile and kv_tile)");
  AttentionTiles a;
  a.q_tile = jr::positive_integer(j.at("q_tile"), "attention.q_tile");
  a.kv_tile = jr::positive_integer(j.at("kv_tile"), "attention.kv_tile");
  if (j.contains("kv_split")) a.kv_split = jr::positive_integer(j.at("kv_split"), "attention.kv_split");
  if (j.contains("order")) a.order = enum_from_json(j.at("order"), "attention.order", kTaskOrders, task_order_name);
  if (j.contains("preload")) {
    a.preload = static_cast<int>(jr::integer(j.at("preload"), "attention.preload", 0, kMaxAttentionPreload,
                                             "an integer from 0 to " + std::to_string(kMaxAttentionPreload)));
  }
  return a;
}

json attention_to_json(const AttentionTiles& a) {
  json j = {{"q_tile", a.q_tile}, {"kv_tile", a.kv_tile}, {"kv_split", a.kv_split}, {"order", task_order_name(a.order)}};
  if (a.preload) j["preload"] = *a.preload;
  return j;
}

std::map<std::string, StageTiles> stages_from_json(const json& j) {
  jr::object(j, "stages");
  std::map<std::string, StageTiles> stages;
  for (const auto& [name, value] : j.items()) {
    const std::string path = "stages." + name;
    jr::object(value, path);
    jr::reject_unknown_keys(value, path, {"cube", "vec"});
    StageTiles s;
    if (value.contains("cube")) s.cube = cube_from_json(value["cube"], path + ".cube");
    if (value.contains("vec")) s.vec = positive_sizes(value["vec"], path + ".vec", 1, kMaxVecDims);
    if (!s.cube && !s.vec) usage_error(path + ": a stage sets a cube tile, a vec tile or both");
    stages.emplace(name, std::move(s));
  }
  return stages;
}

json stages_to_json(const std::map<std::string, StageTiles>& stages) {
  json j = json::object();
  for (const auto& [name, s] : stages) {
    json& one = j[name] = json::object();
    if (s.cube) one["cube"] = cube_to_json(*s.cube);
    if (s.vec) one["vec"] = *s.vec;
  }
  return j;
}

}  // namespace

const char* reduce_form_name(ReduceForm f) { return f == ReduceForm::Online ? "online" : "passes"; }

const char* task_order_name(TaskOrder o) {
  switch (o) {
    case TaskOrder::Bhq: return "bhq";
    case TaskOrder::Qbh: return "qbh";
    case TaskOrder::HeavyFirst: return "heavy_first";
  }
  return "?";
}

json TileConfig::to_json() const {
  json j = json::object();
  if (vec) j["vec"] = *vec;
  if (cube) j["cube"] = cube_to_json(*cube);
  if (nbuffer) j["nbuffer"] = *nbuffer;
  if (l2_group) j["l2_group"] = {l2_group->first, l2_group->second};
  if (fusion) j["fusion"] = *fusion;
  if (reduce) j["reduce"] = reduce_form_name(*reduce);
  if (attention) j["attention"] = attention_to_json(*attention);
  if (!stages.empty()) j["stages"] = stages_to_json(stages);
  return j;
}

std::string TileConfig::to_string() const { return to_json().dump(); }

TileConfig TileConfig::from_json(const json& j) {
  jr::object(j, "");
  jr::reject_unknown_keys(j, "", {"vec", "cube", "nbuffer", "l2_group", "fusion", "reduce", "attention", "stages"});
  TileConfig c;
  if (j.contains("vec")) c.vec = positive_sizes(j["vec"], "vec", 1, kMaxVecDims);
  if (j.contains("cube")) c.cube = cube_from_json(j["cube"], "cube");
  if (j.contains("nbuffer")) {
    c.nbuffer = static_cast<int>(jr::integer(j["nbuffer"], "nbuffer", 1, kMaxNbuffer,
                                             "an integer from 1 to 4"));
  }
  if (j.contains("l2_group")) {
    const Shape g = positive_sizes(j["l2_group"], "l2_group", 2, 2);
    c.l2_group = {g[0], g[1]};
  }
  if (j.contains("fusion")) c.fusion = fusion_from_json(j["fusion"]);
  if (j.contains("reduce")) c.reduce = enum_from_json(j["reduce"], "reduce", kReduceForms, reduce_form_name);
  if (j.contains("attention")) c.attention = attention_from_json(j["attention"]);
  if (j.contains("stages")) c.stages = stages_from_json(j["stages"]);
  return c;
}

TileConfig TileConfig::parse(const std::string& text) {
  return from_json(jr::parse(text, "config"));
}

TileConfig TileConfig::parse_arg(const std::string& arg) {
  if (arg.empty() || arg[0] != '@') return parse(arg);
  const std::string path = arg.substr(1);
  const std::string text = jr::read_text_file(path, "config file");
  try {
    return parse(text);
  } catch (const Error& e) {
    fail(e.category(), "config file '" + path + "': " + e.what());
  }
}

}  // namespace pto
