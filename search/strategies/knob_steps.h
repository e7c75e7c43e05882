// Knob steps: the configs a small step from a given one. A step changes one axis's
// choice for the nearest choice whose knobs (knob_neighbours.h's knob_table) differ in
// one place or two, both moved the same way — two, because a tile's sizes often move
// together (the Cube's K at L1 is kAL1 and kBL1 at once; M is mL0 and mL1 when they are
// equal) — with every other axis held. One step for each set of knobs moved and each
// direction: the nearest, by the sum of the moved knobs' log ratios.
//
// ModelGuided measures the promising steps around the measured best before it ends a
// search (model_guided.h says why).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tile_config.h"
#include "search/strategies/space_digits.h"

namespace pto::search {

struct KnobStep {
  size_t axis = 0;            // space_digits.h's numbering
  uint64_t choice = 0;        // the choice stepped to on that axis
  std::vector<size_t> knobs;  // the places moved in the axis's knob list
  bool up = false;            // the knobs grew
  TileConfig config;
};

// The steps from `config`, feasible or not, axis by axis (less those index_of takes for
// `config` itself: a choice listed twice); none when `config` is on no axis of the space.
std::vector<KnobStep> knob_steps(const SpaceDigits& digits, const TileConfig& config);

}  // namespace pto::search
