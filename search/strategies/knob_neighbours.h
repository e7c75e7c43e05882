// Knob neighbours: which choices of one space axis are a small step from each other.
// flash_attention's attention axis (Q and KV blocks, KV split, order, preload) and its
// stages axis (c1/c2 Cube tiles and v1/v2 rows, one list of their product) hold many
// knobs in one list, so a step to the next index moves only the knob that varies
// fastest (v2's rows), and a random jump almost never changes one knob alone. evolve
// steps through these neighbours instead: choices that differ in one knob or two (so
// the Cube's M, c1's and c2's both, moves in one step).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tile_config.h"

namespace pto::search {

// The knobs of a choice as numbers, in a fixed order (absent ones as 0; no knobs for an
// absent attention choice).
std::vector<int64_t> knobs_of(const std::optional<AttentionTiles>& a);
std::vector<int64_t> knobs_of(const std::map<std::string, StageTiles>& stages);

// For each choice, the choices whose knobs differ from its own in 1..most_changed
// places (choices with another number of knobs never match). Quadratic in the choices:
// an axis holds at most a few thousand.
std::vector<std::vector<uint32_t>> knob_neighbours(const std::vector<std::vector<int64_t>>& knobs,
                                                   size_t most_changed = 2);

}  // namespace pto::search
