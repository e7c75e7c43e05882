// The tuning report (`pto-tune report`): what a tuning database says about the tuner,
// as one self-contained HTML page with inline SVG plots (reporting/svg_plot.h; no scripts,
// nothing fetched) and a Markdown summary beside it.
//
// Per workload (key: workload, target, backend): the winner, the default config and
// the speedup. Plots: the cost model's predicted time against the measured time per
// backend (log–log, diagonal = perfect model); search convergence, best so far
// against measurements spent, per strategy (records in insertion order; a run is a
// stretch of one key's records of one strategy, from its default measurement on); the speedup over
// the default per workload, coloured by op; and the model's ranking quality per
// backend (Kendall's tau, top-1/top-5 regret, cost_model/ranking.h) as a table.
//
// The page stays a page a browser opens at once, however large the database (issue 31:
// 100,000 records made a 68 MB page that took a browser 110 s): it shows at most
// kMaxPageRows winners, the convergence lines and speedup bars of kMaxPlottedWorkloads
// workloads and kMaxPlotPoints points per backend (evenly spaced in store order), and
// says so; report.md keeps every winner.
#pragma once

#include <cstddef>

#include <string>
#include <vector>

#include "search/tuning_record.h"

namespace pto::reporting {

inline constexpr size_t kMaxPageRows = 500;
inline constexpr size_t kMaxPlottedWorkloads = 200;
inline constexpr size_t kMaxPlotPoints = 5000;

struct Report {
  std::string html;
  std::string markdown;
};

// `source` names the database in the report's header.
Report make_report(const std::vector<search::TuningRecord>& records, const std::string& source);

}  // namespace pto::reporting
