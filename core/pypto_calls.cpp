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

std::string cube_call(const CubeTile& c) {
  return "pypto.set_cube_tile_shapes(" + list({c.mL0, c.mL1}) + "," + list(pypto_k(c)) + "," + list({c.nL0, c.nL1}) +
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

}  // namespace

std::vector<std::pair<std::string, StageTiles>> pypto_stages(const TileConfig& config) {
  std::vector<std::pair<std::string, StageTiles>> order(config.stages.begin(), config.stages.end());
  auto key = [](const std::string& name) { return std::make_pair(name.substr(1), name); };
  std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) { return key(x.first) < key(y.first); });
  if (config.cube || config.vec) order.insert(order.begin(), {kSingleStage, StageTiles{config.cube, config.vec}});
  return order;
}

std::vector<int64_t> pypto_k(const CubeTile& c) {
  if (c.kAL1 == c.kBL1) return {c.kL0, c.kAL1};
  return {c.kL0, c.kAL1, c.kBL1};
}

std::string pypto_nbuffer_note(const TileConfig& config) {
  const std::string depth = std::to_string(config.nbuffer_or_default());
  if (config.attention)
    return "n-buffer depth " + depth + ", QK preload " + std::to_string(config.preload_or_default()) +
           ": the kernel's L1/UB buffer depth and how many KV blocks its QK runs ahead of PV, kernel arguments";
  return "n-buffer depth " + depth +
         ": pto-tune only, PyPTO has no such setter (its compiler double-buffers by itself)";
}

std::vector<std::string> pypto_calls(const TileConfig& config) {
  std::vector<std::string> lines;
  if (config.attention) {
    const AttentionTiles& a = *config.attention;
    lines.push_back("# kernel loop (non-tensor arguments): q_tile=" + std::to_string(a.q_tile) +
                    " kv_tile=" + std::to_string(a.kv_tile) + " kv_split=" + std::to_string(a.kv_split) +
                    " order=" + task_order_name(a.order));
  }
  // PyPTO users set the tiles again before each stage's ops (one tile set per stage).
  for (const auto& [name, tiles] : pypto_stages(config)) {
    if (name != kSingleStage) lines.push_back("# stage " + name + ":");
    if (tiles.cube) lines.push_back(cube_call(*tiles.cube));
    if (tiles.vec) lines.push_back(vec_call(*tiles.vec));
  }
  if (config.fusion)
    lines.push_back("# fusion " + nlohmann::json(*config.fusion).dump() +
                    " (graph node ids): pypto.set_pass_options(sg_set_scope=g) ... (sg_set_scope=-1) around "
                    "each group's ops, g from 1 (--emit pypto writes them)");
  if (config.cube && config.cube->k_view > 0)
    lines.push_back("# K loop: one pypto.matmul per K view of " + std::to_string(config.cube->k_view) +
                    ", the fp32 partial sums added with pypto.add (--emit pypto writes it)");
  if (config.nbuffer || (config.attention && config.attention->preload)) lines.push_back("# " + pypto_nbuffer_note(config));
  if (config.l2_group) {
    const std::string m = std::to_string(config.l2_group->first), n = std::to_string(config.l2_group->second);
    lines.push_back("# L2 grouping " + m + "x" + n + ": pypto.loop over m_view = mL1*" + m + ", n_view = nL1*" + n +
                    " views, runtime_options device_sched_mode=1 (--emit pypto writes them)");
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
