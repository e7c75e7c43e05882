// Test helper for search/: the configs a run measured, as a multiset of their canonical
// text, so that tests can say "nothing was measured twice" and compare two runs' choices.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "search/tuning_record.h"

namespace pto::testing {

inline std::multiset<std::string> configs_of(const std::vector<search::TuningRecord>& records) {
  std::multiset<std::string> out;
  for (const search::TuningRecord& r : records) out.insert(r.config.to_string());
  return out;
}

inline bool no_duplicates(const std::multiset<std::string>& configs) {
  return std::set<std::string>(configs.begin(), configs.end()).size() == configs.size();
}

}  // namespace pto::testing
