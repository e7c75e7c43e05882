// TileConfig: what the tuner chooses, in PyPTO's own vocabulary.
//
//   {"vec":[64,512], "cube":{"m":[128,128],"k":[64,256,256],"n":[256,256],"split_k":false},
//    "nbuffer":2, "l2_group":[6,4], "fusion":[[0,1,2],[3]], "reduce":"online"}
//
// flash_attention keeps a tile set per stage, as PyPTO kernels do (a dataclass with
// c1/v1/c2/v2), and its loop tiles:
//
//   {"attention":{"q_tile":128,"kv_tile":256,"kv_split":1,"order":"bhq"},
//    "stages":{"c1":{"cube":{...}},"v1":{"vec":[32,256]},"c2":{"cube":{...}},"v2":{"vec":[32,128]}},
//    "nbuffer":2}
//
// Every key is optional; what an op does not use is absent. `cube.k` may be given in
// the two-element form [kL0,kL1] (kAL1 = kBL1 = kL1); `cube.k_view` is written only
// when set. `fusion` lists groups of graph node ids (compute nodes only) in topological
// order; absent = the compiler's default partition. `l2_group` [mDim,nDim]: each wave of the core grid covers mDim M-tiles x
// nDim N-tiles; absent = row-major tile order. JSON round-trips exactly; parse errors
// name the field.
#pragma once

#include <cstdint>
#include <map>
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
  // The matmul guide's manual K loop (手动构图方式): one matmul per K view of k_view
  // elements, the fp32 partial sums added with pypto.add. 0 = no K loop.
  int64_t k_view = 0;
  bool operator==(const CubeTile&) const = default;
};

// How a vector kernel whose tile cuts the dim it reduces over runs its reductions
// (docs/compiler.md, "Split reductions"): "online" folds a softmax's max and sum, and a
// layernorm's mean and variance, into one pass over the chunks each; "passes" makes one
// pass per reduction.
enum class ReduceForm { Online, Passes };
const char* reduce_form_name(ReduceForm f);  // "online", "passes"

// The order in which flash_attention's tasks go to the cores: "bhq" row-major over
// (batch, head, Q block), "qbh" Q blocks outermost, "heavy_first" the Q blocks with the
// most KV blocks first (causal), for an even last wave.
enum class TaskOrder { Bhq, Qbh, HeavyFirst };
const char* task_order_name(TaskOrder o);

// flash_attention's loop tiles: the Q rows a task owns, the KV columns per loop step,
// how many tasks share one row block's KV range (FlashDecoding's split, combined by a
// second kernel), the dispatch order, and how many KV blocks the Cube's QK runs ahead of
// its PV (pto-isa flash_atten's qkPreloadNum, whose Cube-vector FIFOs hold preload + 1
// blocks; absent: nbuffer - 1, the L1 ping-pong's own depth).
// At most 7: a hand-off's slot is part of its flag's event number (8 per purpose).
constexpr int kMaxAttentionPreload = 7;
// The QK preload a kernel runs: the tiles' own, else one block fewer than the buffer depth.
inline int effective_preload(std::optional<int> preload, int nbuffer) { return preload.value_or(nbuffer - 1); }
struct AttentionTiles {
  int64_t q_tile = 0, kv_tile = 0;
  int64_t kv_split = 1;
  TaskOrder order = TaskOrder::Bhq;
  std::optional<int> preload;
  bool operator==(const AttentionTiles&) const = default;
};

// One stage's tile set: what a PyPTO kernel sets before that stage's ops.
struct StageTiles {
  std::optional<CubeTile> cube;
  std::optional<Shape> vec;
  bool operator==(const StageTiles&) const = default;
};

struct TileConfig {
  std::optional<Shape> vec;                 // one size per dim, <= 4 dims
  std::optional<CubeTile> cube;
  std::optional<int> nbuffer;               // n-buffer depth, 1..4; absent = 1
  std::optional<std::pair<int64_t, int64_t>> l2_group;  // [mDim, nDim]
  std::optional<std::vector<std::vector<int>>> fusion;
  std::optional<ReduceForm> reduce;         // absent = online
  std::optional<AttentionTiles> attention;
  std::map<std::string, StageTiles> stages; // by stage name ("c1", "v1", ...)

  int nbuffer_or_default() const { return nbuffer.value_or(1); }
  // flash_attention's QK preload (effective_preload of its attention tiles and nbuffer).
  int preload_or_default() const {
    return effective_preload(attention ? attention->preload : std::nullopt, nbuffer_or_default());
  }
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
