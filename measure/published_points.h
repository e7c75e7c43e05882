// PublishedPoint: one published Ascend kernel timing from tests/data/ascend_measurements.json
// (the simulator's training set, shared/ascend-measurements.md), with the workload and,
// where the published tiling can be said in our vocabulary, the TileConfig it maps to.
//
// The loader is the one place that checks the file: every field's type, every target
// name, every config parses, is feasible on its target, and is present exactly when the
// mapping is not "none". A bad record is a usage Error naming its id and field.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/target.h"
#include "core/tile_config.h"
#include "core/workload.h"

namespace pto {

enum class Mapping { Exact, Approximate, None };

struct PublishedPoint {
  std::string id;            // "AD-mm/case3"
  std::string source;        // short key of the source ("AD-mm")
  std::string repo, path;    // where it was published
  bool verified = false;     // read in the source itself, not only copied from the training-set table
  std::string chip, target;  // as published; our target name
  int cores = 0;             // AIC (cube ops) or AIV (vector ops) cores the kernel ran on
  Workload workload;
  std::string tiling;        // as published
  std::optional<TileConfig> config;
  Mapping mapping = Mapping::None;
  std::string mapping_note;
  double measured_us = 0;
  std::string metric = "Task Duration";
  // Whether the figure includes the kernel launch (Task Duration, events around the
  // launch) or not (timers read inside the kernel): the simulated time loses the target's
  // launch cost where it does not.
  bool launch_included = true;
  // Whether the simulator's knobs are fitted on it: false for a figure its own source
  // contradicts (fit_note says how); it is still simulated and reported.
  bool in_fit = true;
  std::string fit_note;
  std::map<std::string, double> pipes_us;  // "aic_mte2" -> us

  bool simulated() const { return config.has_value(); }
  // The target with only `cores` cores of the kernel's type (and half / twice as many
  // of the other type on split-core targets).
  Target target_with_cores() const;
};

// Usage Error naming the record and field; Io Error when the file cannot be read.
std::vector<PublishedPoint> load_published_points(const std::string& path);

// "A2/A3" for the 910 family, "950" for ascend950pr: the families fitted apart.
std::string target_family(const std::string& target);

const char* mapping_name(Mapping m);

}  // namespace pto
