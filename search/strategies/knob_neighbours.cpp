#include "search/strategies/knob_neighbours.h"

#include <string>

#include "core/error.h"
#include "search/strategies/space_digits.h"

namespace pto::search {

std::vector<int64_t> knobs_of(const std::optional<AttentionTiles>& a) {
  if (!a) return {};
  return {a->q_tile, a->kv_tile, a->kv_split, static_cast<int64_t>(a->order), a->preload.value_or(-1)};
}

std::vector<int64_t> knobs_of(const std::map<std::string, StageTiles>& stages) {
  // The L0 sizes: the space's stage tiles keep L1 = L0.
  std::vector<int64_t> k;
  for (const auto& [name, s] : stages) {
    const CubeTile c = s.cube.value_or(CubeTile{});
    for (int64_t v : {c.mL0, c.kL0, c.nL0}) k.push_back(s.cube ? v : 0);
    for (size_t i = 0; i < 2; ++i) k.push_back(s.vec && i < s.vec->size() ? (*s.vec)[i] : 0);
  }
  return k;
}

// The other axes' knobs, for knob_table (static, not in an unnamed namespace, so that
// they overload the attention and stage knobs above).
static std::vector<int64_t> knobs_of(const std::optional<CubeTile>& c) {
  if (!c) return {};
  return {c->mL0, c->mL1, c->kL0, c->kAL1, c->kBL1, c->nL0, c->nL1};
}

static std::vector<int64_t> knobs_of(const std::optional<Shape>& vec) { return vec.value_or(Shape{}); }

static std::vector<int64_t> knobs_of(const KSplit& k) { return {static_cast<int64_t>(k.form), k.view_tiles}; }

static std::vector<int64_t> knobs_of(const std::optional<std::pair<int64_t, int64_t>>& group) {
  if (!group) return {};
  return {group->first, group->second};
}

static std::vector<int64_t> knobs_of(const std::optional<int>& nbuffer) {
  if (!nbuffer) return {};
  return {*nbuffer};
}

template <typename Choice>
static std::vector<std::vector<int64_t>> table_of(const std::vector<Choice>& choices) {
  std::vector<std::vector<int64_t>> table;
  table.reserve(choices.size());
  for (const Choice& c : choices) table.push_back(knobs_of(c));
  return table;
}

namespace {

// Knobs that differ; choices of different length are never neighbours.
size_t changed(const std::vector<int64_t>& a, const std::vector<int64_t>& b, size_t stop_after) {
  if (a.size() != b.size()) return stop_after + 1;
  size_t n = 0;
  for (size_t i = 0; i < a.size() && n <= stop_after; ++i) n += a[i] != b[i];
  return n;
}

}  // namespace

std::vector<std::vector<uint32_t>> knob_neighbours(const std::vector<std::vector<int64_t>>& knobs,
                                                   size_t most_changed) {
  std::vector<std::vector<uint32_t>> out(knobs.size());
  for (size_t i = 0; i < knobs.size(); ++i)
    for (size_t j = i + 1; j < knobs.size(); ++j) {
      const size_t n = changed(knobs[i], knobs[j], most_changed);
      if (n >= 1 && n <= most_changed) {
        out[i].push_back(static_cast<uint32_t>(j));
        out[j].push_back(static_cast<uint32_t>(i));
      }
    }
  return out;
}

std::vector<std::vector<int64_t>> knob_table(const SpaceAxes& axes, size_t axis) {
  switch (axis) {
    case kCubeAxis: return table_of(axes.cube);
    case kVecAxis: return table_of(axes.vec);
    case kKSplitAxis: return table_of(axes.k_split);
    case kL2GroupAxis: return table_of(axes.l2_group);
    case kNBufferAxis: return table_of(axes.nbuffer);
    case kAttentionAxis: return table_of(axes.attention);
    case kStagesAxis: return table_of(axes.stages);
    case kFusionAxis: return std::vector<std::vector<int64_t>>(axes.fusion.size());
    case kReduceAxis: return std::vector<std::vector<int64_t>>(axes.reduce.size());
  }
  internal_error("knob_table: no axis " + std::to_string(axis));
}

}  // namespace pto::search
