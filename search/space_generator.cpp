#include "search/space_generator.h"

#include <algorithm>
#include <random>
#include <unordered_set>

#include "core/analyze.h"
#include "core/error.h"
#include "core/op_library.h"
#include "search/parallel_for.h"
#include "search/tile_candidates.h"

namespace pto::search {

namespace {

// Spaces up to this many candidates are sampled by enumerating them whole first, so a
// small space yields every feasible candidate it has, not just those random draws hit.
constexpr uint64_t kEnumerateWholeLimit = 1 << 16;
// Random draws per requested sample before giving up on a mostly infeasible space.
constexpr uint64_t kDrawsPerSample = 1000;
constexpr uint64_t kMinDraws = 100000;
constexpr int kMaxNbuffer = 4;
constexpr int64_t kKLoopViewTiles[] = {2, 4, 8, 16};  // the K loop's views, in L1 K tiles

// Rules that depend on the Cube tile and the n-buffer depth alone (docs/compiler.md):
// a tile breaking one at nbuffer 1 breaks it under every other choice too.
constexpr const char* kCubeRules[] = {"cube alignment", "kL0 % 16",    "nL0 % 16",    "L0 <= L1",
                                      "L1 % L0",        "L0A capacity", "L0B capacity", "L0C capacity",
                                      "L1 capacity",    "kAL1/kBL1"};

bool breaks_cube_rule(const TilingSummary& s) {
  return std::any_of(s.violations.begin(), s.violations.end(), [](const Violation& v) {
    return std::find(std::begin(kCubeRules), std::end(kCubeRules), v.rule) != std::end(kCubeRules);
  });
}

bool breaks_rule(const TilingSummary& s, const std::string& rule) {
  return std::any_of(s.violations.begin(), s.violations.end(), [&](const Violation& v) { return v.rule == rule; });
}

// The tile sizes alone: the K split has its own axis and the k form is spelling.
CubeTile tile_sizes(CubeTile c) {
  c.split_k = false;
  c.k_view = 0;
  c.k_short_form = false;
  return c;
}

int64_t larger_k_tile(const CubeTile& c) { return std::max(c.kAL1, c.kBL1); }

void apply_k_split(CubeTile& c, const KSplit& k) {
  c.split_k = k.form == KSplit::Form::SplitK;
  c.k_view = k.form == KSplit::Form::KLoop ? k.view_tiles * larger_k_tile(c) : 0;
}

KSplit k_split_of(const CubeTile& c) {
  if (c.split_k) return {KSplit::Form::SplitK, 0};
  if (c.k_view == 0) return {};
  const int64_t tile = larger_k_tile(c);
  // A view of no whole number of tiles is on no axis value: index_of answers none.
  return {KSplit::Form::KLoop, c.k_view % tile == 0 ? c.k_view / tile : -1};
}

bool writes_fp32(const TensorGraph& g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(),
                     [](const Node& n) { return n.kind == OpKind::Matmul && n.dtype == DType::F32; });
}

template <typename T>
std::optional<size_t> position(const std::vector<T>& axis, const T& value) {
  const auto it = std::find(axis.begin(), axis.end(), value);
  if (it == axis.end()) return std::nullopt;
  return static_cast<size_t>(it - axis.begin());
}

template <typename T>
void add_if_missing(std::vector<T>& axis, const T& value) {
  if (!position(axis, value)) axis.push_back(value);
}

// FNV-1a over a stream of integers: the identity of a compiled program, as analyze sees it.
class ProgramKey {
 public:
  void add(int64_t v) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= static_cast<uint64_t>(v >> (8 * i)) & 0xff;
      hash_ *= 0x100000001b3ull;
    }
  }
  void add(const Shape& s) {
    add(static_cast<int64_t>(s.size()));
    for (int64_t v : s) add(v);
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

// Whether an L2 grouping changes the visiting order of some Cube kernel's tiles: with
// one M tile, or nDim covering every N tile, the groups are visited row-major anyway.
bool grouping_reorders(const TilingSummary& s, const std::pair<int64_t, int64_t>& group) {
  for (const KernelSummary& k : s.kernels) {
    if (!k.uses_cube || k.tile_counts.size() < 2) continue;
    const int64_t m_tiles = k.tile_counts[k.tile_counts.size() - 2];
    const int64_t n_tiles = k.tile_counts.back();
    if (m_tiles > 1 && group.second < n_tiles) return true;
  }
  return false;
}

// The epilogue's vector sub-tile of a Cube kernel: the vec tile clamped to the Cube tile.
Shape epilogue_tile(const KernelSummary& k, const std::optional<Shape>& vec) {
  Shape sub = k.tile;
  if (!vec) return sub;
  for (size_t i = 0; i < sub.size() && i < vec->size(); ++i) {
    int64_t& s = sub[sub.size() - 1 - i];
    s = std::min(s, (*vec)[vec->size() - 1 - i]);
  }
  return sub;
}

// Two configs with the same key compile to the same program: the same kernels, tiles,
// tasks, instruction counts and footprints, the same Cube sizes as given (never merged:
// they decide the L0 sub-tiling) and the same effective tile order.
uint64_t program_key(const TilingSummary& s, const TileConfig& c) {
  ProgramKey key;
  if (c.cube) {
    const CubeTile t = *c.cube;
    for (int64_t v : {t.mL0, t.mL1, t.kL0, t.kAL1, t.kBL1, t.nL0, t.nL1}) key.add(v);
  }
  const bool reorders = c.l2_group && grouping_reorders(s, *c.l2_group);
  key.add(reorders ? c.l2_group->first : 0);
  key.add(reorders ? c.l2_group->second : 0);
  for (const KernelSummary& k : s.kernels) {
    key.add(static_cast<int64_t>(k.nodes.size()));
    key.add(k.nbuffer);
    for (NodeId n : k.nodes) key.add(n);
    key.add(k.tile);
    if (k.attention)
      for (int64_t v : k.attention->fields()) key.add(v);
    key.add(k.tile_counts);
    key.add(k.tail);
    if (k.uses_cube && !k.vector_work.empty()) key.add(epilogue_tile(k, c.vec));
    for (int64_t v : {k.aic_tasks, k.aiv_tasks, k.instructions, k.k_steps, k.split_k, k.stream_chunks, k.stream_passes})
      key.add(v);
    for (const auto& [level, bytes] : k.footprint) {
      key.add(static_cast<int64_t>(level));
      key.add(bytes);
    }
  }
  return key.value();
}

}  // namespace

std::string SpaceTally::to_string() const {
  return "analyzed " + std::to_string(analyzed) + ": " + std::to_string(distinct) + " distinct, " +
         std::to_string(infeasible) + " infeasible, " + std::to_string(equivalent) + " equivalent";
}

struct SpaceGenerator::Impl {
  TensorGraph graph;
  Target target;
  Analyzer analyzer;
  TileConfig baseline;
  SpaceAxes axes;
  uint64_t cube_proposed = 0, cube_pruned = 0;

  Impl(const TensorGraph& g, const Target& t, const TileConfig& base, const SpaceOptions& options)
      : graph(g), target(t), analyzer(g, t), baseline(base) {
    if (options.max_nbuffer < 1 || options.max_nbuffer > kMaxNbuffer)
      usage_error("space: max_nbuffer must be 1.." + std::to_string(kMaxNbuffer) + ", got " +
                  std::to_string(options.max_nbuffer));
    if (options.min_vec_tile_elements < 1)
      usage_error("space: min_vec_tile_elements must be positive, got " +
                  std::to_string(options.min_vec_tile_elements));
    build_fusion_axis(options);
    const std::optional<MatmulExtents> mm = matmul_extents(graph);
    build_cube_axis(mm);
    build_vec_axis(options);
    build_k_split_axis();
    build_l2_group_axis(mm.has_value());
    build_nbuffer_axis(options.max_nbuffer);
    build_reduce_axis();
    build_attention_axes();
  }

  void build_attention_axes() {
    axes.attention = {std::nullopt};
    axes.stages = {{}};
    const std::optional<AttentionExtents> e = attention_extents(graph);
    if (!e) return;
    axes.attention.clear();
    for (const AttentionTiles& a : attention_tile_candidates(*e, target.aic_cores)) axes.attention.emplace_back(a);
    axes.stages = attention_stage_candidates(*e);
    if (baseline.attention) add_if_missing(axes.attention, baseline.attention);
    if (!baseline.stages.empty()) add_if_missing(axes.stages, baseline.stages);
  }

  void build_nbuffer_axis(int most) {
    axes.nbuffer = {std::nullopt};
    if (attention_extents(graph)) {
      axes.nbuffer.clear();
      for (int n = 1; n <= most; ++n) axes.nbuffer.emplace_back(n);
    }
    if (baseline.nbuffer) add_if_missing(axes.nbuffer, baseline.nbuffer);
  }

  void build_reduce_axis() {
    axes.reduce = {std::nullopt};
    const bool reduces = std::any_of(graph.nodes().begin(), graph.nodes().end(),
                                     [](const Node& n) { return is_reduction(n.kind); });
    if (reduces) axes.reduce.emplace_back(ReduceForm::Passes);
    if (baseline.reduce && *baseline.reduce != ReduceForm::Online) add_if_missing(axes.reduce, baseline.reduce);
  }

  void build_fusion_axis(const SpaceOptions& options) {
    axes.fusion = options.fusion_variants ? fusion_candidates(graph, analyzer, baseline)
                                          : std::vector<std::optional<FusionGroups>>{std::nullopt};
    if (baseline.fusion) add_if_missing(axes.fusion, baseline.fusion);
  }

  // The proposed tiles and the baseline's, less those that break a Cube rule at nbuffer
  // 1. The capacity rules only grow with a tile's sizes, and the others concern one axis
  // each, so two axes' tiles that break a rule with the third axis at its smallest break
  // it with every choice there: the pairs are probed first (tens of thousands of
  // analyses), and only the triples whose three pairs pass are analyzed whole, not the
  // whole product (770,000 tiles on a 4096^3 matmul).
  void build_cube_axis(const std::optional<MatmulExtents>& mm) {
    if (!mm) {
      axes.cube = {std::nullopt};
      return;
    }
    const CubeAxes ca = cube_axes(*mm);
    std::vector<KTile> ks;
    for (const AxisTile& k : ca.k)
      for (const KTile& form : k_tiles(k, ca.whole_k)) ks.push_back(form);
    const size_t nm = ca.m.size(), nn = ca.n.size(), nk = ks.size();
    const std::vector<char> mk = fit_grid(nm, nk, [&](size_t i, size_t j) { return cube_tile(ca.m[i], ks[j], ca.n[0]); });
    const std::vector<char> kn = fit_grid(nk, nn, [&](size_t j, size_t l) { return cube_tile(ca.m[0], ks[j], ca.n[l]); });
    const std::vector<char> mn = fit_grid(nm, nn, [&](size_t i, size_t l) { return cube_tile(ca.m[i], ks[0], ca.n[l]); });
    std::vector<CubeTile> triples;
    for (size_t i = 0; i < nm; ++i)
      for (size_t l = 0; l < nn; ++l)
        for (size_t j = 0; mn[i * nn + l] && j < nk; ++j)
          if (mk[i * nk + j] && kn[j * nn + l]) triples.push_back(tile_sizes(cube_tile(ca.m[i], ks[j], ca.n[l])));
    if (baseline.cube) add_if_missing(triples, tile_sizes(*baseline.cube));
    const std::vector<char> fits = cube_fits(triples);
    for (size_t t = 0; t < triples.size(); ++t)
      if (fits[t]) axes.cube.emplace_back(triples[t]);
    cube_proposed = static_cast<uint64_t>(nm) * nn * nk;
    cube_pruned = cube_proposed - axes.cube.size();
  }

  // Whether each tile keeps every Cube rule at nbuffer 1, analyzed on parallel threads.
  std::vector<char> cube_fits(const std::vector<CubeTile>& tiles) const {
    TileConfig probe = baseline;
    probe.nbuffer = 1;
    probe.l2_group.reset();
    probe.fusion.reset();
    std::vector<char> fits(tiles.size());
    parallel_for(static_cast<int64_t>(tiles.size()), [&](int64_t t) {
      TileConfig c = probe;
      c.cube = tiles[t];
      fits[t] = !breaks_cube_rule(analyzer.analyze(c));
    });
    return fits;
  }

  // cube_fits over the rows x cols tiles that `tile(row, col)` makes, row-major.
  template <typename MakeTile>
  std::vector<char> fit_grid(size_t rows, size_t cols, const MakeTile& tile) const {
    std::vector<CubeTile> tiles;
    tiles.reserve(rows * cols);
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < cols; ++c) tiles.push_back(tile(r, c));
    return cube_fits(tiles);
  }

  // flash_attention's vector tiles are per stage (the stages axis), not one vec tile.
  void build_vec_axis(const SpaceOptions& options) {
    const std::optional<VecExtents> ve = attention_extents(graph) ? std::nullopt : vec_extents(graph);
    if (ve) {
      for (Shape& v : vec_tile_candidates(*ve, options.min_vec_tile_elements)) axes.vec.emplace_back(std::move(v));
    }
    if (baseline.vec) add_if_missing(axes.vec, baseline.vec);
    if (axes.vec.empty()) axes.vec = {std::nullopt};
  }

  // split_k joins when some partition lets it run (fp32/int32 output, no epilogue); the
  // K loop too where the matmul writes fp32, over views of 2 to 16 L1 K tiles (views
  // past K break rule "k_view", and those of as many parts as split_k compile to its
  // program: both are left out per candidate).
  void build_k_split_axis() {
    axes.k_split = {KSplit{}};
    if (!axes.cube.empty() && axes.cube.front() && split_k_runs()) {
      axes.k_split.push_back({KSplit::Form::SplitK, 0});
      if (writes_fp32(graph))
        for (int64_t tiles : kKLoopViewTiles) axes.k_split.push_back({KSplit::Form::KLoop, tiles});
    }
    if (baseline.cube) add_if_missing(axes.k_split, k_split_of(*baseline.cube));
  }

  bool split_k_runs() const {
    TileConfig probe = baseline;
    probe.cube = baseline.cube ? *baseline.cube : *axes.cube.front();
    apply_k_split(*probe.cube, {KSplit::Form::SplitK, 0});
    return std::any_of(axes.fusion.begin(), axes.fusion.end(), [&](const auto& f) {
      probe.fusion = f;
      return !breaks_rule(analyzer.analyze(probe), "split_k");
    });
  }

  void build_l2_group_axis(bool has_matmul) {
    axes.l2_group = {std::nullopt};
    if (has_matmul) {
      for (const auto& g : l2_group_candidates(target.aic_cores)) axes.l2_group.emplace_back(g);
    }
    if (baseline.l2_group) add_if_missing(axes.l2_group, baseline.l2_group);
  }

  uint64_t size() const {
    return static_cast<uint64_t>(axes.fusion.size()) * axes.cube.size() * axes.vec.size() * axes.k_split.size() *
           axes.l2_group.size() * axes.nbuffer.size() * axes.reduce.size() * axes.attention.size() *
           axes.stages.size();
  }

  TileConfig at(uint64_t index) const {
    if (index >= size())
      usage_error("space: index " + std::to_string(index) + " is outside the space of " + std::to_string(size()));
    auto digit = [&index](size_t radix) {
      const size_t d = static_cast<size_t>(index % radix);
      index /= radix;
      return d;
    };
    TileConfig c;
    c.stages = axes.stages[digit(axes.stages.size())];
    c.attention = axes.attention[digit(axes.attention.size())];
    c.reduce = axes.reduce[digit(axes.reduce.size())];
    c.nbuffer = axes.nbuffer[digit(axes.nbuffer.size())];
    c.l2_group = axes.l2_group[digit(axes.l2_group.size())];
    const KSplit k_split = axes.k_split[digit(axes.k_split.size())];
    c.vec = axes.vec[digit(axes.vec.size())];
    c.cube = axes.cube[digit(axes.cube.size())];
    c.fusion = axes.fusion[digit(axes.fusion.size())];
    // The deep QK preload goes with double buffers, as in the kernel it comes from: with
    // one slot its candidate is the one without it (equivalent, so skipped).
    if (c.attention && c.attention->preload && c.nbuffer_or_default() < 2) c.attention->preload.reset();
    if (c.cube) {
      apply_k_split(*c.cube, k_split);
      c.cube->k_short_form = c.cube->kAL1 == c.cube->kBL1;
    }
    return c;
  }

  std::optional<uint64_t> index_of(const TileConfig& c) const {
    std::optional<size_t> cube;
    if (c.cube) {
      const CubeTile own = tile_sizes(*c.cube);
      for (size_t i = 0; i < axes.cube.size() && !cube; ++i)
        if (axes.cube[i] && tile_sizes(*axes.cube[i]) == own) cube = i;
    } else {
      cube = position(axes.cube, std::optional<CubeTile>());
    }
    const std::optional<size_t> digits[] = {
        position(axes.fusion, c.fusion),
        cube,
        position(axes.vec, c.vec),
        position(axes.k_split, c.cube ? k_split_of(*c.cube) : KSplit{}),
        position(axes.l2_group, c.l2_group),
        position(axes.nbuffer, c.nbuffer),
        position(axes.reduce, c.reduce == ReduceForm::Online ? std::nullopt : c.reduce),
        position(axes.attention, c.attention),
        position(axes.stages, c.stages)};
    const size_t radices[] = {axes.fusion.size(),   axes.cube.size(),    axes.vec.size(),
                              axes.k_split.size(),  axes.l2_group.size(), axes.nbuffer.size(),
                              axes.reduce.size(),   axes.attention.size(), axes.stages.size()};
    uint64_t index = 0;
    for (size_t i = 0; i < std::size(digits); ++i) {
      if (!digits[i]) return std::nullopt;
      index = index * radices[i] + *digits[i];
    }
    return index;
  }

  // Analyzes one candidate, counts it, and says whether it is new and feasible.
  bool admit(const TileConfig& c, std::unordered_set<uint64_t>& programs, SpaceTally& tally) const {
    ++tally.analyzed;
    const TilingSummary s = analyzer.analyze(c);
    if (!s.feasible || !s.within_program_limits()) {  // past the limits compile refuses it
      ++tally.infeasible;
      return false;
    }
    if (!programs.insert(search::program_key(s, c)).second) {
      ++tally.equivalent;
      return false;
    }
    ++tally.distinct;
    return true;
  }

  SpaceTally for_each(const std::function<bool(const TileConfig&)>& visit, uint64_t max_produced) const {
    SpaceTally tally;
    std::unordered_set<uint64_t> programs;
    for (uint64_t i = 0, n = size(); i < n && tally.distinct < max_produced; ++i) {
      const TileConfig c = at(i);
      if (admit(c, programs, tally) && !visit(c)) break;
    }
    return tally;
  }

  std::vector<TileConfig> sample(size_t n, uint64_t seed, SpaceTally& tally) const {
    std::mt19937_64 rng(seed);  // fully specified by the standard: the same draws everywhere
    if (size() <= kEnumerateWholeLimit) {
      std::vector<TileConfig> all;
      tally = for_each([&](const TileConfig& c) { all.push_back(c); return true; }, UINT64_MAX);
      // A partial Fisher-Yates shuffle: the first n of a random permutation.
      const size_t take = std::min(n, all.size());
      for (size_t i = 0; i < take; ++i) std::swap(all[i], all[i + rng() % (all.size() - i)]);
      all.resize(take);
      return all;
    }
    std::vector<TileConfig> picked;
    std::unordered_set<uint64_t> drawn, programs;
    const uint64_t max_draws = kMinDraws + kDrawsPerSample * n;
    for (uint64_t draws = 0; picked.size() < n && draws < max_draws && drawn.size() < size(); ++draws) {
      const uint64_t index = rng() % size();
      if (!drawn.insert(index).second) continue;
      TileConfig c = at(index);
      if (admit(c, programs, tally)) picked.push_back(std::move(c));
    }
    return picked;
  }
};

SpaceGenerator::SpaceGenerator(const TensorGraph& graph, const Target& target, const TileConfig& baseline,
                               const SpaceOptions& options)
    : impl_(std::make_unique<Impl>(graph, target, baseline, options)) {}

SpaceGenerator SpaceGenerator::for_workload(const Workload& w, const Target& target, const SpaceOptions& options) {
  const TensorGraph graph = build_graph(w);
  return SpaceGenerator(graph, target, default_config(w, graph, target), options);
}

SpaceGenerator::~SpaceGenerator() = default;
SpaceGenerator::SpaceGenerator(SpaceGenerator&&) noexcept = default;
SpaceGenerator& SpaceGenerator::operator=(SpaceGenerator&&) noexcept = default;

const SpaceAxes& SpaceGenerator::axes() const { return impl_->axes; }
const TileConfig& SpaceGenerator::baseline() const { return impl_->baseline; }
uint64_t SpaceGenerator::size() const { return impl_->size(); }
uint64_t SpaceGenerator::cube_tiles_proposed() const { return impl_->cube_proposed; }
uint64_t SpaceGenerator::cube_tiles_pruned() const { return impl_->cube_pruned; }
TileConfig SpaceGenerator::at(uint64_t index) const { return impl_->at(index); }
std::optional<uint64_t> SpaceGenerator::index_of(const TileConfig& config) const { return impl_->index_of(config); }

std::optional<uint64_t> SpaceGenerator::program_key(const TileConfig& config) const {
  const TilingSummary s = impl_->analyzer.analyze(config);
  if (!s.feasible || !s.within_program_limits()) return std::nullopt;
  return search::program_key(s, config);
}

uint64_t SpaceGenerator::program_key(const TilingSummary& summary, const TileConfig& config) {
  return search::program_key(summary, config);
}

std::string SpaceGenerator::describe() const {
  const SpaceAxes& a = impl_->axes;
  std::string cube = std::to_string(a.cube.size());
  if (impl_->cube_proposed > 0) {
    cube += " (of " + std::to_string(impl_->cube_proposed) + " proposed; " + std::to_string(impl_->cube_pruned) +
            " break a Cube rule)";
  }
  return "fusion    " + std::to_string(a.fusion.size()) + "\ncube      " + cube + "\nvec       " +
         std::to_string(a.vec.size()) + "\nk_split   " + std::to_string(a.k_split.size()) + "\nl2_group  " +
         std::to_string(a.l2_group.size()) + "\nnbuffer   " + std::to_string(a.nbuffer.size()) + "\nreduce    " +
         std::to_string(a.reduce.size()) + "\nattention " + std::to_string(a.attention.size()) + "\nstages    " +
         std::to_string(a.stages.size()) + "\nspace     " +
         std::to_string(size()) + " candidates before analyze\n";
}

SpaceTally SpaceGenerator::for_each(const std::function<bool(const TileConfig&)>& visit, uint64_t max_produced) const {
  return impl_->for_each(visit, max_produced);
}

std::vector<TileConfig> SpaceGenerator::enumerate(uint64_t max_produced, SpaceTally* tally) const {
  std::vector<TileConfig> out;
  const SpaceTally t = impl_->for_each([&](const TileConfig& c) { out.push_back(c); return true; }, max_produced);
  if (tally) *tally = t;
  return out;
}

std::vector<TileConfig> SpaceGenerator::sample(size_t n, uint64_t seed, SpaceTally* tally) const {
  SpaceTally t;
  std::vector<TileConfig> out = impl_->sample(n, seed, t);
  if (tally) *tally = t;
  return out;
}

}  // namespace pto::search
