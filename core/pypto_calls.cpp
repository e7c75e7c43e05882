#include "core/pypto_calls.h"

#include <nlohmann/json.hpp>

namespace pto {

namespace {

std::string list(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
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
  for (size_t i = 0; i < vec.size(); ++i) args += (i ? "," : "") + std::to_string(vec[i]);
  return "pypto.set_vec_tile_shapes(" + args + ")";
}

}  // namespace

std::vector<std::string> pypto_calls(const TileConfig& config) {
  std::vector<std::string> lines;
  if (config.cube) lines.push_back(cube_call(*config.cube));
  if (config.vec) lines.push_back(vec_call(*config.vec));
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
