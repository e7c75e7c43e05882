#include "core/pypto_calls.h"

#include <algorithm>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

namespace pto {

namespace {

std::string list(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(values[i]);
  }
  return out + "]";
}

// PyPTO takes k as [kL0,kL1] when both L1 sizes agree, [kL0,kAL1,kBL1] otherwise.
std::string cube_call(const CubeTile& c) {
  const std::vector<int64_t> k =
      c.kAL1 == c.kBL1 ? std::vector<int64_t>{c.kL0, c.kAL1} : std::vector<int64_t>{c.kL0, c.kAL1, c.kBL1};
  return "pypto.set_cube_tile_shapes(" + list({c.mL0, c.mL1}) + "," + list(k) + "," + list({c.nL0, c.nL1}) +
         (c.split_k ? ",enable_split_k=True" : "") + ")";
}

std::string vec_call(const Shape& vec) {
  std::string args;
  for (size_t i = 0; i < vec.size(); ++i) {
    if (i) args += ',';
    args += std::to_string(vec[i]);
  }
  return "pypto.set_vec_tile_shapes(" + args + ")";
}

// Stages in the order a kernel runs them: by their number, the Cube's before the
// vector's of the same number (c1, v1, c2, v2).
std::vector<std::pair<std::string, StageTiles>> in_run_order(const std::map<std::string, StageTiles>& stages) {
  std::vector<std::pair<std::string, StageTiles>> order(stages.begin(), stages.end());
  auto key = [](const std::string& name) { return std::make_pair(name.substr(1), name); };
  std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) { return key(x.first) < key(y.first); });
  return order;
}

}  // namespace

std::vector<std::string> pypto_calls(const TileConfig& config) {
  std::vector<std::string> lines;
  if (config.cube) lines.push_back(cube_call(*config.cube));
  if (config.vec) lines.push_back(vec_call(*config.vec));
  if (config.attention) {
    const AttentionTiles& a = *config.attention;
    lines.push_back("# kernel loop (non-tensor arguments): q_tile=" + std::to_string(a.q_tile) +
                    " kv_tile=" + std::to_string(a.kv_tile) + " kv_split=" + std::to_string(a.kv_split) +
                    " order=" + task_order_name(a.order));
  }
  // PyPTO users set the tiles again before each stage's ops (one tile set per stage).
  for (const auto& [name, tiles] : in_run_order(config.stages)) {
    lines.push_back("# stage " + name + ":");
    if (tiles.cube) lines.push_back(cube_call(*tiles.cube));
    if (tiles.vec) lines.push_back(vec_call(*tiles.vec));
  }
  if (config.fusion)
    lines.push_back("# fusion: " + nlohmann::json(*config.fusion).dump() + " (kernels as graph node ids)");
  if (config.nbuffer) lines.push_back("# n-buffer depth: " + std::to_string(*config.nbuffer));
  if (config.l2_group) {
    lines.push_back("# L2 grouping: " + std::to_string(config.l2_group->first) + "x" +
                    std::to_string(config.l2_group->second) + " tiles (M x N) per wave of the core grid");
  }
  if (lines.empty()) lines.push_back("# no tile setters: the compiler's own tiling");
  return lines;
}

std::string pypto_snippet(const TileConfig& config, const std::string& indent) {
  std::string out;
  for (const std::string& line : pypto_calls(config)) out += (out.empty() ? "" : "\n") + indent + line;
  return out;
}

}  // namespace pto
