// SpaceGenerator: the search space of one (graph, target) — every candidate TileConfig a
// tuner may try, in PyPTO's vocabulary — the first piece of search/, in the sense of TVM
// MetaSchedule's space generator.
//
// The space is a product of axes: fusion partition x Cube tile x vector tile x split-K
// x L2 grouping x n-buffer depth x reduction form x flash_attention's loop tiles x its
// stage tiles (an axis the graph has no use for has one choice, "absent"). The per-axis lists come from search/tile_candidates.h and
// search/fusion_candidates.h; the baseline config's own choices (the op's default,
// what a user hand-picks) are always on their axes, so the tuner can only do better.
// Feasibility is core's analyze's call, never guessed here: Cube tiles that break a
// Cube rule even without n-buffering are pruned from their axis up front (no other
// axis can make them fit), and every other candidate is analyzed as it is produced.
// Candidates that analyze shows would compile to the same program as one already
// produced (split-K that finds one chunk, an L2 grouping that leaves the tile order
// row-major, vector tiles clamped to the same extents) are skipped as equivalent, so
// enumeration and sampling yield distinct programs.
//
// Enumeration is deterministic (index order, with a cap); sampling draws distinct
// feasible candidates, deterministic per seed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/analyze.h"
#include "core/shape.h"
#include "core/target.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"
#include "core/workload.h"
#include "search/fusion_candidates.h"

namespace pto::search {

struct SpaceOptions {
  // flash_attention's n-buffer axis (its QK preload depth, a kernel argument) is
  // 1..max_nbuffer (at most 4). Other ops have no such axis: PyPTO has no buffer-depth
  // setter, so the compiler picks it as PyPTO's does (absent nbuffer).
  int max_nbuffer = 2;
  int64_t min_vec_tile_elements = 256;  // smaller vector tiles are left out (tile_candidates.h)
  bool fusion_variants = true;          // false: the default partition only
};

// How a matmul splits K across cores, as PyPTO writes it (matmul_performance_guide.md,
// 多核切K): not at all, enable_split_k (one part per L1 K tile), or the manual K loop
// over views of `view_tiles` of the larger L1 K tile (CubeTile::k_view).
struct KSplit {
  enum class Form { None, SplitK, KLoop } form = Form::None;
  int64_t view_tiles = 0;
  bool operator==(const KSplit&) const = default;
};

// The choices of each axis, in enumeration order (the last axis varies fastest).
struct SpaceAxes {
  std::vector<std::optional<FusionGroups>> fusion;
  std::vector<std::optional<CubeTile>> cube;  // no K split; the k_split axis sets it
  std::vector<std::optional<Shape>> vec;
  std::vector<KSplit> k_split;
  std::vector<std::optional<std::pair<int64_t, int64_t>>> l2_group;
  std::vector<std::optional<int>> nbuffer;  // {absent} but for flash_attention
  // How a vector tile that cuts a reduced dim runs (absent = online); the passes form
  // joins when the graph reduces. A tile that cuts no reduced dim compiles to the same
  // program under both, and the second is skipped as equivalent.
  std::vector<std::optional<ReduceForm>> reduce;
  // flash_attention's loop tiles and stage tiles (absent for other ops).
  std::vector<std::optional<AttentionTiles>> attention;
  std::vector<std::map<std::string, StageTiles>> stages;
};

// What one enumeration or sampling pass saw: every candidate analyzed is exactly one of
// distinct, infeasible or equivalent. Enumeration hands the caller every distinct one;
// sampling picks its n among them.
struct SpaceTally {
  uint64_t analyzed = 0;
  uint64_t distinct = 0;     // feasible, and a program no earlier candidate compiles to
  uint64_t infeasible = 0;   // analyze reported a violated rule, or a program past the size limits
  uint64_t equivalent = 0;   // feasible, but the same program as a distinct one before
  std::string to_string() const;  // "analyzed 120: 40 distinct, 70 infeasible, 10 equivalent"
};

class SpaceGenerator {
 public:
  // `baseline`: the config the tuner must beat, usually default_config(); its choices
  // join their axes.
  SpaceGenerator(const TensorGraph& graph, const Target& target, const TileConfig& baseline,
                 const SpaceOptions& options = {});
  // The workload's graph, with the op's default config as the baseline.
  static SpaceGenerator for_workload(const Workload& w, const Target& target, const SpaceOptions& options = {});
  ~SpaceGenerator();
  SpaceGenerator(SpaceGenerator&&) noexcept;
  SpaceGenerator& operator=(SpaceGenerator&&) noexcept;

  const SpaceAxes& axes() const;
  const TileConfig& baseline() const;
  // Candidates in the product of the axes: an upper bound on the feasible ones.
  uint64_t size() const;
  // Cube tiles the per-axis lists proposed, and how many broke a Cube rule.
  uint64_t cube_tiles_proposed() const;
  uint64_t cube_tiles_pruned() const;
  // One line per axis with its choice count, then the product and what was pruned.
  std::string describe() const;

  // The candidate at `index` < size() (mixed radix over the axes), feasible or not.
  TileConfig at(uint64_t index) const;
  // Where `config` sits in the space, or nullopt when one of its choices is on no axis.
  // An absent nbuffer counts as 1, an absent reduce as online and the [kL0,kL1] /
  // [kL0,kAL1,kBL1] forms as equal.
  std::optional<uint64_t> index_of(const TileConfig& config) const;
  // The identity of the program `config` compiles to — equal for the equivalent
  // candidates enumeration skips — or nullopt when it is infeasible. For strategies that
  // make candidates of their own (mutations) and must not propose one program twice.
  std::optional<uint64_t> program_key(const TileConfig& config) const;
  // The same for a config already analyzed feasible (`summary` is its analysis).
  static uint64_t program_key(const TilingSummary& summary, const TileConfig& config);

  // Visits the feasible, distinct candidates in index order until `visit` returns false
  // or `max_produced` were visited.
  SpaceTally for_each(const std::function<bool(const TileConfig&)>& visit,
                      uint64_t max_produced = UINT64_MAX) const;
  std::vector<TileConfig> enumerate(uint64_t max_produced, SpaceTally* tally = nullptr) const;

  // Up to `n` feasible, distinct candidates drawn at random, the same ones for the same
  // seed. Fewer only when the space holds fewer (small spaces are enumerated whole
  // before drawing) or when the draws ran out on a space that is mostly infeasible.
  std::vector<TileConfig> sample(size_t n, uint64_t seed, SpaceTally* tally = nullptr) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pto::search
