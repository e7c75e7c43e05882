// ListStrategy: proposes the candidates of a list in order, skipping any program already
// proposed or measured (the tuner's baseline among them) — what exhaustive and random
// share. A subclass supplies the list and may extend it when it runs out.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "search/strategy.h"

namespace pto::search {

class ListStrategy : public Strategy {
 public:
  ListStrategy(const SearchContext& context, std::string name) : context_(context), name_(std::move(name)) {}

  std::string name() const override { return name_; }
  std::vector<TileConfig> propose(size_t max) override;
  void observe(std::span<const TileConfig> configs, std::span<const measure::Measurement> results) override;
  uint64_t feasible_seen() const override { return feasible_; }

 protected:
  // Appends more candidates to `list_` when it is used up; false when there are no more.
  virtual bool extend() { return false; }

  SearchContext context_;
  std::vector<TileConfig> list_;
  uint64_t feasible_ = 0;

 private:
  // Marks the program of `config` seen; false when it was seen already.
  bool first_sight(const TileConfig& config);

  std::string name_;
  size_t next_ = 0;
  std::unordered_set<uint64_t> seen_;
};

}  // namespace pto::search
