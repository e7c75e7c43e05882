// TileConfig: what the tuner chooses, in PyPTO's own vocabulary.
//
//   {"vec":[64,512], "cube":{"m":[128,128],"k":[64,256,256],"n":[256,256],"split_k":false},
//    "nbuffer":2, "l2_group":[6,4], "fusion":[[0,1,2],[3]]}
//
// Every key is optional; what an op does not use is absent. `cube.k` may be given in
// the two-element form [kL0,kL1] (kAL1 = kBL1 = kL1). `fusion` lists groups of graph
// node ids (compute nodes only) in topological order; absent = the compiler's default
// partition. `l2_group` [mDim,nDim]: each wave of the core grid covers mDim M-tiles x
// nDim N-tiles; absent = row-major tile order. JSON round-trips exactly; parse errors
// name the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/shape.h"

namespace pto {

struct CubeTile {
  int64_t mL0 = 0, mL1 = 0;
  int64_t kL0 = 0, kAL1 = 0, kBL1 = 0;
  int64_t nL0 = 0, nL1 = 0;
  bool split_k = false;
  bool k_short_form = false;  // parsed from [kL0,kL1]; written back the same way
  bool operator==(const CubeTile&) const = default;
};

struct TileConfig {
  std::optional<Shape> vec;                 // one size per dim, <= 4 dims
  std::optional<CubeTile> cube;
  std::optional<int> nbuffer;               // n-buffer depth, 1..4; absent = 1
  std::optional<std::pair<int64_t, int64_t>> l2_group;  // [mDim, nDim]
  std::optional<std::vector<std::vector<int>>> fusion;

  int nbuffer_or_default() const { return nbuffer.value_or(1); }
  bool operator==(const TileConfig&) const = default;

  nlohmann::json to_json() const;
  std::string to_string() const;            // compact canonical JSON
  // Usage Error naming the field ("cube.k[1]: expected a positive integer, got -3").
  static TileConfig from_json(const nlohmann::json& j);
  static TileConfig parse(const std::string& text);
  // Accepts inline JSON or "@path" to read a file (json_read::read_text_file: a missing,
  // empty, folder or over-4-MiB file is a usage Error; a failed read an io Error).
  static TileConfig parse_arg(const std::string& arg);
};

}  // namespace pto
