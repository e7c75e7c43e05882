// ScoredPool: the candidates a model-guided strategy (topk, evolve) knows of, each with
// its program identity, the analytical prediction and its features, and what became of
// it (fresh, proposed, measured) — plus the residual model refitted on every
// measurement, whose correction re-ranks the candidates not yet measured.
//
// The ranking a strategy proposes from is the corrected prediction:
// log(analytical prediction) + residual(features). A candidate is worth measuring while
// it is predicted to beat the best measured time by more than the context's noise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/tile_config.h"
#include "measure/measurement.h"
#include "search/residual_model.h"
#include "search/strategy.h"

namespace pto::search {

class ScoredPool {
 public:
  explicit ScoredPool(const SearchContext& context) : context_(context) {}

  // Adds a candidate unless it is infeasible or a program the pool already holds;
  // returns its index when added.
  std::optional<size_t> add(const TileConfig& config);
  size_t size() const { return entries_.size(); }
  const TileConfig& config(size_t i) const { return entries_[i].config; }
  bool fresh(size_t i) const { return entries_[i].state == State::Fresh; }
  size_t fresh_count() const { return fresh_; }
  // Corrected log prediction, or the log of the measured time once measured.
  double log_time(size_t i) const;

  // Marks candidates proposed, so they are never proposed again.
  void mark_proposed(size_t i);
  // Records measurements (of candidates in the pool or not: the tuner's baseline joins
  // here) and refits the residual model on every successful one.
  void observe(std::span<const TileConfig> configs, std::span<const measure::Measurement> results);

  // Up to `max` fresh candidates worth measuring: the best by corrected prediction,
  // with about a quarter drawn at random among the other fresh ones (exploration feeds
  // the residual model candidates unlike the ones it already knows). Empty when no
  // fresh candidate could beat the measured best by more than the noise margin, once at
  // least `min_measured` were measured: "could" is the corrected prediction less the
  // residual model's leave-one-out error, so a model that has been wrong keeps looking.
  std::vector<size_t> pick(size_t max, size_t min_measured, std::mt19937_64& rng) const;
  // Fresh candidates by corrected prediction, best first (at most `max`).
  std::vector<size_t> best_fresh(size_t max) const;
  // Indices of all candidates ordered by log_time, best first (at most `max`).
  std::vector<size_t> best_overall(size_t max) const;

 private:
  enum class State { Fresh, Proposed, Measured };
  struct Entry {
    TileConfig config;
    double log_predicted = 0;
    std::vector<double> features;
    double residual = 0;
    State state = State::Fresh;
    double log_measured = 0;
  };

  std::optional<size_t> find_or_add(const TileConfig& config);
  // The `max` best of `ids` by log_time, best first; ties by index.
  std::vector<size_t> best_of(std::vector<size_t> ids, size_t max) const;
  void refit();

  SearchContext context_;
  std::vector<Entry> entries_;
  std::unordered_map<uint64_t, size_t> by_program_;
  size_t fresh_ = 0;
  size_t measured_ok_ = 0;
  std::optional<double> best_log_measured_;
  ResidualModel residual_;
};

}  // namespace pto::search
