#include "core/tile_config.h"

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

CubeTile cube_from_json(const json& j) {
  jr::object(j, "cube");
  jr::reject_unknown_keys(j, "cube", {"m", "k", "n", "split_k"});
  for (const char* axis : {"m", "k", "n"}) {
    if (!j.contains(axis)) usage_error(std::string("cube.") + axis + ": missing (a cube tile needs m, k and n)");
  }
  CubeTile c;
  const Shape m = positive_sizes(j.at("m"), "cube.m", 2, 2);
  const Shape k = positive_sizes(j.at("k"), "cube.k", 2, 3);
  const Shape n = positive_sizes(j.at("n"), "cube.n", 2, 2);
  c.mL0 = m[0];
  c.mL1 = m[1];
  c.kL0 = k[0];
  c.kAL1 = k[1];
  c.kBL1 = k.size() == 3 ? k[2] : k[1];
  c.k_short_form = k.size() == 2;
  c.nL0 = n[0];
  c.nL1 = n[1];
  if (j.contains("split_k")) c.split_k = jr::boolean(j.at("split_k"), "cube.split_k");
  return c;
}

json cube_to_json(const CubeTile& c) {
  // The short form only says what it means when both L1 K sizes agree.
  const bool short_k = c.k_short_form && c.kAL1 == c.kBL1;
  return {{"m", {c.mL0, c.mL1}},
          {"k", short_k ? json{c.kL0, c.kAL1} : json{c.kL0, c.kAL1, c.kBL1}},
          {"n", {c.nL0, c.nL1}},
          {"split_k", c.split_k}};
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

}  // namespace

json TileConfig::to_json() const {
  json j = json::object();
  if (vec) j["vec"] = *vec;
  if (cube) j["cube"] = cube_to_json(*cube);
  if (nbuffer) j["nbuffer"] = *nbuffer;
  if (l2_group) j["l2_group"] = {l2_group->first, l2_group->second};
  if (fusion) j["fusion"] = *fusion;
  return j;
}

std::string TileConfig::to_string() const { return to_json().dump(); }

TileConfig TileConfig::from_json(const json& j) {
  jr::object(j, "");
  jr::reject_unknown_keys(j, "", {"vec", "cube", "nbuffer", "l2_group", "fusion"});
  TileConfig c;
  if (j.contains("vec")) c.vec = positive_sizes(j["vec"], "vec", 1, kMaxVecDims);
  if (j.contains("cube")) c.cube = cube_from_json(j["cube"]);
  if (j.contains("nbuffer")) {
    c.nbuffer = static_cast<int>(jr::integer(j["nbuffer"], "nbuffer", 1, kMaxNbuffer,
                                             "an integer from 1 to 4"));
  }
  if (j.contains("l2_group")) {
    const Shape g = positive_sizes(j["l2_group"], "l2_group", 2, 2);
    c.l2_group = {g[0], g[1]};
  }
  if (j.contains("fusion")) c.fusion = fusion_from_json(j["fusion"]);
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
