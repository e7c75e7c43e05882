#include "search/strategies/knob_neighbours.h"

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

}  // namespace pto::search
