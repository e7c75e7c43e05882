#include "search/strategies/knob_steps.h"

#include <cmath>
#include <map>
#include <utility>

#include "search/strategies/knob_neighbours.h"

namespace pto::search {

namespace {

constexpr size_t kMostMoved = 2;

// How `to` moved from `from`: the places changed and whether they grew, when one or two
// places changed the same way (and both lists are knobs of one kind: the same length).
struct Move {
  std::vector<size_t> knobs;
  bool up = false;
  double distance = 0;  // sum of |log(to / from)| over the places changed
};

std::optional<Move> move_between(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  if (from.size() != to.size()) return std::nullopt;
  Move m;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == to[i]) continue;
    const bool up = to[i] > from[i];
    if (m.knobs.size() == kMostMoved || (!m.knobs.empty() && up != m.up)) return std::nullopt;
    m.knobs.push_back(i);
    m.up = up;
    // Knobs are sizes, counts or enum values; a zero or negative one moves by its difference.
    m.distance += from[i] > 0 && to[i] > 0 ? std::abs(std::log(static_cast<double>(to[i]) / static_cast<double>(from[i])))
                                           : static_cast<double>(std::abs(to[i] - from[i]));
  }
  if (m.knobs.empty()) return std::nullopt;
  return m;
}

}  // namespace

std::vector<KnobStep> knob_steps(const SpaceDigits& digits, const TileConfig& config) {
  const std::optional<Digits> at = digits.of(config);
  if (!at) return {};
  std::vector<KnobStep> steps;
  for (size_t axis = 0; axis < kAxes; ++axis) {
    const std::vector<std::vector<int64_t>> table = knob_table(digits.space().axes(), axis);
    const std::vector<int64_t>& own = table[(*at)[axis]];
    // The nearest choice for each set of knobs moved and direction: (distance, choice).
    std::map<std::pair<std::vector<size_t>, bool>, std::pair<double, size_t>> nearest;
    for (size_t choice = 0; choice < table.size(); ++choice) {
      const std::optional<Move> m = move_between(own, table[choice]);
      if (!m) continue;
      const auto [it, added] = nearest.try_emplace({m->knobs, m->up}, m->distance, choice);
      if (!added && m->distance < it->second.first) it->second = {m->distance, choice};
    }
    for (const auto& [move, found] : nearest) {
      Digits d = *at;
      d[axis] = found.second;
      TileConfig stepped = digits.at(d);
      if (digits.of(stepped) != at) steps.push_back({axis, found.second, move.first, move.second, std::move(stepped)});
    }
  }
  return steps;
}

}  // namespace pto::search
