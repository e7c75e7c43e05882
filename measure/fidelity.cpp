#include "measure/fidelity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/compile.h"
#include "core/op_library.h"
#include "measure/sim/simulator.h"

namespace pto {
namespace {

// msprof's per-pipe names and the simulator's pipes they correspond to.
struct PipeName {
  const char* msprof;
  CoreType core;
  Pipe pipe;
};
constexpr PipeName kPipeNames[] = {
    {"aic_mac", CoreType::AIC, Pipe::M},      {"aic_mte1", CoreType::AIC, Pipe::MTE1},
    {"aic_mte2", CoreType::AIC, Pipe::MTE2},  {"aic_fixpipe", CoreType::AIC, Pipe::FIX},
    {"aiv_vec", CoreType::AIV, Pipe::V},      {"aiv_mte2", CoreType::AIV, Pipe::MTE2},
    {"aiv_mte3", CoreType::AIV, Pipe::MTE3},
};

struct Simulated {
  double time_us = 0;  // without launch cost
  int launches = 0;    // kernels, each paying the launch cost once
  std::map<std::string, double> pipes_us;
};

// Busy time of a pipe averaged over the cores that ran tasks, as msprof reports it.
std::map<std::string, double> pipe_times(const sim::SimResult& r, const Target& t) {
  std::map<std::string, double> out;
  const double span_us = r.time_ns / 1e3;
  for (const PipeName& n : kPipeNames) {
    auto u = r.pipe_utilisation.find(n.core);
    if (u == r.pipe_utilisation.end()) continue;
    const double used = static_cast<double>(r.cores_used.at(n.core));
    out[n.msprof] = u->second[static_cast<int>(n.pipe)] * static_cast<double>(t.cores(n.core)) * span_us / used;
  }
  return out;
}

Simulated run_point(const Program& program, const Target& target) {
  const sim::SimResult r = sim::simulate(program, target);
  return {r.time_ns / 1e3, static_cast<int>(program.kernels.size()), pipe_times(r, target)};
}

bool has_cross_core_flags(const Program& p) {
  for (const BlockProgram& b : p.blocks)
    for (const Instr& in : b.instrs)
      if (in.flag_peer >= 0) return true;
  return false;
}

double abs_log_error(double simulated, double measured) { return std::fabs(std::log(simulated / measured)); }

// The simulated time as the point was measured: with `launch_us` per kernel where the
// published figure includes the launch.
double with_launch(const Simulated& s, double launch_us, const PublishedPoint& p) {
  return s.time_us + (p.launch_included ? launch_us * s.launches : 0);
}

// One grid point of the simulated knobs (launch cost is added afterwards).
struct GridPoint {
  SimKnobs knobs;
  std::vector<Simulated> runs;  // per family point
};

// The knobs (grid point and launch cost) with the least absolute log error on `train`.
// Absolute, not squared: a few points no knob reproduces (CL34 2048x80000x4096 at a
// fifth of its measurement whatever the knobs; results/sim_validation.md) would
// otherwise choose the knobs for all the others.
SimKnobs best_fit(const std::vector<GridPoint>& grid, const std::vector<double>& launch_us,
                  const std::vector<PointOutcome*>& members, const std::vector<bool>& train) {
  double best = std::numeric_limits<double>::infinity();
  SimKnobs out;
  for (const GridPoint& g : grid) {
    for (double launch : launch_us) {
      double loss = 0;
      for (size_t i = 0; i < members.size(); ++i)
        if (train[i])
          loss += abs_log_error(with_launch(g.runs[i], launch, *members[i]->point), members[i]->point->measured_us);
      if (loss < best) best = loss, out = g.knobs, out.launch_us = launch;
    }
  }
  return out;
}

const GridPoint& grid_point(const std::vector<GridPoint>& grid, const SimKnobs& k) {
  for (const GridPoint& g : grid)
    if (std::tie(g.knobs.hbm_gbps, g.knobs.gm_read_bpc, g.knobs.min_burst_bytes, g.knobs.cross_core_sync_cycles,
                 g.knobs.l2_per_hbm) ==
        std::tie(k.hbm_gbps, k.gm_read_bpc, k.min_burst_bytes, k.cross_core_sync_cycles, k.l2_per_hbm))
      return g;
  return grid.front();
}

// Same source, same workload, different tiling or core count: the published order
// says which is faster.
std::vector<PairOutcome> find_pairs(const std::vector<PointOutcome>& points) {
  std::vector<PairOutcome> pairs;
  for (size_t i = 0; i < points.size(); ++i) {
    for (size_t j = i + 1; j < points.size(); ++j) {
      const PublishedPoint& a = *points[i].point;
      const PublishedPoint& b = *points[j].point;
      if (a.source != b.source || a.target != b.target || a.workload.key() != b.workload.key()) continue;
      if (*a.config == *b.config && a.cores == b.cores) continue;
      const bool a_faster = a.measured_us < b.measured_us;
      const PointOutcome& fast = a_faster ? points[i] : points[j];
      const PointOutcome& slow = a_faster ? points[j] : points[i];
      pairs.push_back({fast.point->id, slow.point->id, fast.shipped_us < slow.shipped_us,
                       fast.held_out_us < slow.held_out_us});
    }
  }
  return pairs;
}

// Fits one family on every source and once per left-out source.
void cross_validate(const std::string& family, const std::vector<const Program*>& programs,
                    std::vector<PointOutcome*>& members, FidelityReport& report) {
  const KnobGrid bounds = knob_grid(family);
  std::vector<GridPoint> grid;
  for (double sync : bounds.cross_core_sync_cycles)
    for (double l2 : bounds.l2_per_hbm)
      for (double hbm : bounds.hbm_gbps)
        for (double bpc : bounds.gm_read_bpc)
          for (double burst : bounds.min_burst_bytes) grid.push_back({{hbm, bpc, burst, 0, sync, l2}, {}});
  for (GridPoint& g : grid) g.runs.resize(members.size());
  // A program without cross-core flags runs alike at every sync latency: simulated at the
  // first one only (the grid's first block), then copied.
  const size_t per_sync = grid.size() / bounds.cross_core_sync_cycles.size();
  std::vector<bool> syncs;
  for (const Program* p : programs) syncs.push_back(has_cross_core_flags(*p));
  const int jobs = static_cast<int>(grid.size() * members.size());
#pragma omp parallel for schedule(dynamic)
  for (int job = 0; job < jobs; ++job) {
    const size_t g = job / members.size(), i = job % members.size();
    if (g >= per_sync && !syncs[i]) continue;
    grid[g].runs[i] = run_point(*programs[i], grid[g].knobs.applied_to(members[i]->point->target_with_cores()));
  }
  for (size_t g = per_sync; g < grid.size(); ++g)
    for (size_t i = 0; i < members.size(); ++i)
      if (!syncs[i]) grid[g].runs[i] = grid[g % per_sync].runs[i];
  std::set<std::string> sources;
  for (PointOutcome* m : members) sources.insert(m->point->source);

  std::vector<bool> fitted;
  for (PointOutcome* m : members) fitted.push_back(m->point->in_fit);
  const SimKnobs all = best_fit(grid, bounds.launch_us, members, fitted);
  report.fit[family] = all;
  for (size_t i = 0; i < members.size(); ++i)
    members[i]->fitted_us = with_launch(grid_point(grid, all).runs[i], all.launch_us, *members[i]->point);
  for (const std::string& left_out : sources) {
    std::vector<bool> train;
    for (PointOutcome* m : members) train.push_back(m->point->source != left_out && m->point->in_fit);
    const SimKnobs fold = best_fit(grid, bounds.launch_us, members, train);
    report.fold_fit[family][left_out] = fold;
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i]->point->source == left_out) members[i]->held_out_us = with_launch(grid_point(grid, fold).runs[i], fold.launch_us, *members[i]->point);
  }
}

}  // namespace

SimKnobs SimKnobs::of_target(const Target& t) {
  return {t.hbm_gbps,
          t.gm_read_bpc,
          static_cast<double>(t.gm_min_burst_bytes),
          t.kernel_launch_cycles / t.clock_mhz,
          static_cast<double>(t.cross_core_sync_latency),
          t.l2_gbps / t.hbm_gbps};
}

Target SimKnobs::applied_to(Target t) const {
  t.l2_gbps = hbm_gbps * l2_per_hbm;
  t.hbm_gbps = hbm_gbps;
  t.gm_read_bpc = gm_read_bpc;
  t.gm_min_burst_bytes = std::llround(min_burst_bytes);
  t.kernel_launch_cycles = static_cast<int>(std::lround(launch_us * t.clock_mhz));
  t.cross_core_sync_latency = static_cast<int>(std::lround(cross_core_sync_cycles));
  return t;
}

nlohmann::json SimKnobs::to_json() const {
  return {{"hbm_gbps", hbm_gbps}, {"gm_read_bpc", gm_read_bpc}, {"min_burst_bytes", min_burst_bytes},
          {"launch_us", launch_us}, {"cross_core_sync_cycles", cross_core_sync_cycles},
          {"l2_per_hbm", l2_per_hbm}};
}

// Measured figures, not fitted. asc-devkit's data_copy moves 302 MB from GM on every
// core of the chip and nothing else, so it measures two of them directly:
//  - the effective HBM read bandwidth, from its largest tiles' aiv_mte2_time (202.657 us
//    on A2/A3: 1.49 TB/s; 185.66 us on the 950: 1.63 TB/s);
//  - the kernel's fixed cost (launch, dispatch, the first transfer's latency), Task
//    Duration minus aiv/aic_mte2_time, the median of its seven cases per chip: 16.25 us
//    on A2/A3 (12.8-17.2), 2.93 us on the 950 (2.7-3.6).
// The DMA burst is the contiguous run the same guide asks GM transfers to be aligned to
// (512 B on A2/A3, 128 B on the 950). Fitted, each of these was carried by one source
// (AD-add, AD-mm, AD-g), so the fold that left that source out lost it
// (results/sim_validation.md).
// Fitted: the per-core fill rate, from the .ini's 32 B/cycle to twice that (below the
// 110 B/cycle L2 hit rate). Every grid point simulates the whole training set.
KnobGrid knob_grid(const std::string& family) {
  const bool a950 = family == "950";
  KnobGrid g;
  g.hbm_gbps = {a950 ? 1627.0 : 1490.0};
  g.gm_read_bpc = {32, 40, 48, 56, 64};
  g.min_burst_bytes = {a950 ? 128.0 : 512.0};
  g.launch_us = {a950 ? 2.93 : 16.25};
  // Fitted: how long a flag between the Cube and a vector unit takes to arrive. No source
  // states it; only flash_attention's hand-offs wait for such flags, and the published
  // ones are PI-fa's on the 910B (none on the 950, whose figure stays 0).
  g.cross_core_sync_cycles = a950 ? std::vector<double>{0} : std::vector<double>{0, 1000, 2000, 3000, 4000, 5000, 6000, 8000};
  // Fitted: the L2's bandwidth over HBM's. The PyPTO matmul guide bounds it below ("more
  // than 3x" on A2/A3); nothing bounds it above. Of the training set only kernels whose
  // cores hand data to each other through GM (flash_attention's FIFOs) are L2-bound.
  g.l2_per_hbm = {3.5, 4.0, 4.5, 5.0, 5.5, 6.0};
  return g;
}

ErrorSummary summarize(const std::vector<double>& simulated, const std::vector<double>& measured) {
  ErrorSummary s;
  std::vector<double> errors;
  for (size_t i = 0; i < simulated.size(); ++i) {
    const double ratio = simulated[i] / measured[i];
    errors.push_back(abs_log_error(simulated[i], measured[i]));
    s.within_25 += ratio >= 0.75 && ratio <= 1.25;
    s.within_30 += ratio >= 0.7 && ratio <= 1.3;
    s.within_50 += ratio >= 0.5 && ratio <= 1.5;
  }
  s.points = static_cast<int>(errors.size());
  if (errors.empty()) return s;
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  s.median_abs_log = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  s.worst_abs_log = errors.back();
  return s;
}

FidelityReport evaluate_fidelity(const std::vector<PublishedPoint>& points, bool cross_validate_fit) {
  FidelityReport report;
  std::vector<Program> programs;
  for (const PublishedPoint& p : points) {
    if (!p.simulated()) continue;
    const Target target = p.target_with_cores();
    programs.push_back(compile(build_graph(p.workload), *p.config, target).program);
    PointOutcome o;
    o.point = &p;
    o.family = target_family(p.target);
    const Simulated s = run_point(programs.back(), target);
    // The target's own launch cost is inside the simulation: out where the figure has none.
    const double launch_us = target.kernel_launch_cycles / target.clock_mhz;
    o.shipped_us = s.time_us - (p.launch_included ? 0 : launch_us * s.launches);
    o.shipped_pipes_us = s.pipes_us;
    report.points.push_back(o);
  }
  std::vector<double> measured, shipped, fitted, held_out;
  if (cross_validate_fit) {
    std::map<std::string, std::vector<PointOutcome*>> members;
    std::map<std::string, std::vector<const Program*>> member_programs;
    for (size_t i = 0; i < report.points.size(); ++i) {
      members[report.points[i].family].push_back(&report.points[i]);
      member_programs[report.points[i].family].push_back(&programs[i]);
    }
    for (auto& [family, list] : members) cross_validate(family, member_programs[family], list, report);
  }
  for (const PointOutcome& o : report.points) {
    measured.push_back(o.point->measured_us);
    shipped.push_back(o.shipped_us);
    fitted.push_back(o.fitted_us);
    held_out.push_back(o.held_out_us);
  }
  report.shipped = summarize(shipped, measured);
  if (cross_validate_fit) report.fitted = summarize(fitted, measured), report.held_out = summarize(held_out, measured);
  report.pairs = find_pairs(report.points);
  return report;
}

nlohmann::json FidelityReport::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const PointOutcome& o : points) {
    nlohmann::json j = {{"id", o.point->id},        {"source", o.point->source},  {"target", o.point->target},
                        {"family", o.family},       {"mapping", mapping_name(o.point->mapping)},
                        {"measured_us", o.point->measured_us}, {"simulated_us", o.shipped_us},
                        {"simulated_pipes_us", o.shipped_pipes_us}, {"measured_pipes_us", o.point->pipes_us}};
    if (o.held_out_us > 0) j["held_out_us"] = o.held_out_us, j["fitted_us"] = o.fitted_us;
    list.push_back(j);
  }
  auto summary = [](const ErrorSummary& s) {
    return nlohmann::json{{"points", s.points},       {"median_abs_log_error", s.median_abs_log},
                          {"worst_abs_log_error", s.worst_abs_log}, {"within_25", s.within_25},
                          {"within_30", s.within_30}, {"within_50", s.within_50}};
  };
  nlohmann::json pair_list = nlohmann::json::array();
  for (const PairOutcome& p : pairs)
    pair_list.push_back({{"faster", p.a}, {"slower", p.b}, {"shipped_ok", p.shipped_ok}, {"held_out_ok", p.held_out_ok}});
  nlohmann::json fits = nlohmann::json::object(), folds = nlohmann::json::object();
  for (const auto& [family, k] : fit) fits[family] = k.to_json();
  for (const auto& [family, by_source] : fold_fit)
    for (const auto& [source, k] : by_source) folds[family][source] = k.to_json();
  return {{"label", "simulated"}, {"points", list}, {"pairs", pair_list}, {"shipped", summary(shipped)},
          {"fitted", summary(fitted)}, {"held_out", summary(held_out)}, {"fit", fits}, {"fold_fit", folds}};
}

}  // namespace pto
