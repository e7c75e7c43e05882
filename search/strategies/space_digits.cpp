#include "search/strategies/space_digits.h"

namespace pto::search {

SpaceDigits::SpaceDigits(const SpaceGenerator& space) : space_(space) {
  const SpaceAxes& a = space.axes();
  radix_ = {a.fusion.size(),  a.cube.size(),   a.vec.size(),       a.k_split.size(), a.l2_group.size(),
            a.nbuffer.size(), a.reduce.size(), a.attention.size(), a.stages.size()};
}

std::optional<Digits> SpaceDigits::of(const TileConfig& config) const {
  std::optional<uint64_t> i = space_.index_of(config);
  if (!i) return std::nullopt;
  Digits d{};
  for (size_t k = kAxes; k-- > 0;) {
    d[k] = *i % radix_[k];
    *i /= radix_[k];
  }
  return d;
}

TileConfig SpaceDigits::at(const Digits& digits) const {
  uint64_t i = 0;
  for (size_t k = 0; k < kAxes; ++k) i = i * radix_[k] + digits[k];
  return space_.at(i);
}

}  // namespace pto::search
