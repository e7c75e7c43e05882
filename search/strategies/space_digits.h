// SpaceDigits: a candidate as its choice on each axis of the space — the digits of its
// index in SpaceGenerator's mixed-radix product — so that a strategy can move one axis
// at a time: evolve's mutations and crossovers, ModelGuided's knob steps.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/tile_config.h"
#include "search/space_generator.h"

namespace pto::search {

// fusion, cube, vec, k_split, l2_group, nbuffer, reduce, attention, stages: index_of's order
inline constexpr size_t kAxes = 9;
inline constexpr size_t kFusionAxis = 0, kCubeAxis = 1, kVecAxis = 2, kKSplitAxis = 3, kL2GroupAxis = 4;
inline constexpr size_t kNBufferAxis = 5, kReduceAxis = 6, kAttentionAxis = 7, kStagesAxis = 8;
using Digits = std::array<uint64_t, kAxes>;

class SpaceDigits {
 public:
  explicit SpaceDigits(const SpaceGenerator& space);

  const SpaceGenerator& space() const { return space_; }
  // Choices on each axis.
  const Digits& radix() const { return radix_; }
  // The config's choice on each axis, or nullopt when one of its choices is on no axis.
  std::optional<Digits> of(const TileConfig& config) const;
  // The candidate these digits name, feasible or not.
  TileConfig at(const Digits& digits) const;

 private:
  const SpaceGenerator& space_;
  Digits radix_{};
};

}  // namespace pto::search
