// `pto-tune validate`: the NPU simulator against published Ascend timings
// (tests/data/ascend_measurements.json). Every point whose tiling our TileConfig can
// express is simulated with the targets as shipped; with --cross-validate, a handful of
// physical knobs are fitted per target family, leaving one source out at a time, and
// each point is also reported as predicted by the fit that did not see its source.
// Every simulated figure is labelled so.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <vector>

#include "cli/cli.h"
#include "cli/commands.h"
#include "measure/fidelity.h"

namespace pto::cli {

namespace {

std::string fixed(double value, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string signed_percent(double simulated, double measured) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%+.0f%%", 100 * (simulated / measured - 1));
  return buf;
}

std::string summary_line(const char* what, const ErrorSummary& s) {
  auto pct = [&](double log_error) { return fixed(100 * (std::exp(log_error) - 1), 0) + "%"; };
  return std::string(what) + ": " + std::to_string(s.points) + " points, median |error| " + pct(s.median_abs_log) +
         ", worst " + pct(s.worst_abs_log) + ", within +-25%: " + std::to_string(s.within_25) +
         ", +-30%: " + std::to_string(s.within_30) + ", +-50%: " + std::to_string(s.within_50) + "\n";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Per source: how many points and the median signed error (simulated / measured - 1),
// which says whether a source's points lean slow or fast as a group.
void print_source_residuals(std::ostream& out, const FidelityReport& r, bool cross_validated) {
  std::map<std::string, std::vector<const PointOutcome*>> by_source;
  for (const PointOutcome& o : r.points) by_source[o.point->source].push_back(&o);
  out << "\nResiduals per source (median of simulated / measured - 1)\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& [source, list] : by_source) {
    std::vector<double> shipped, held_out;
    for (const PointOutcome* o : list) {
      shipped.push_back(std::log(o->shipped_us / o->point->measured_us));
      held_out.push_back(std::log(o->held_out_us / o->point->measured_us));
    }
    auto pct = [](double log_error) { return signed_percent(std::exp(log_error), 1); };
    std::vector<std::string> row = {source, std::to_string(list.size()), pct(median(shipped))};
    if (cross_validated) row.push_back(pct(median(held_out)));
    rows.push_back(row);
  }
  std::vector<std::string> header = {"source", "points", "shipped"};
  if (cross_validated) header.push_back("held_out");
  print_table(out, header, rows);
}

void print_report(std::ostream& out, const FidelityReport& r, bool cross_validated) {
  out << "Published Ascend timings against the simulator (simulated figures; measured ones as published)\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const PointOutcome& o : r.points) {
    std::vector<std::string> row = {o.point->id + (o.point->in_fit ? "" : " (not fitted)"), o.point->target,
                                    mapping_name(o.point->mapping),
                                    fixed(o.point->measured_us, 2), fixed(o.shipped_us, 2),
                                    signed_percent(o.shipped_us, o.point->measured_us)};
    if (cross_validated)
      row.insert(row.end(), {fixed(o.held_out_us, 2), signed_percent(o.held_out_us, o.point->measured_us)});
    rows.push_back(row);
  }
  std::vector<std::string> header = {"point", "target", "mapping", "measured_us", "simulated_us", "error"};
  if (cross_validated) header.insert(header.end(), {"held_out_us", "held_out_error"});
  print_table(out, header, rows);

  print_source_residuals(out, r, cross_validated);

  out << "\nPer-pipe busy time, average over the cores used (us; measured / simulated with the shipped targets)\n";
  rows.clear();
  for (const PointOutcome& o : r.points) {
    if (o.point->pipes_us.empty()) continue;
    std::string cells;
    for (const auto& [pipe, measured] : o.point->pipes_us) {
      auto s = o.shipped_pipes_us.find(pipe);
      cells += pipe + " " + fixed(measured, 1) + " / " + (s == o.shipped_pipes_us.end() ? "-" : fixed(s->second, 1)) + "  ";
    }
    rows.push_back({o.point->id, cells});
  }
  print_table(out, {"point", "pipes"}, rows);

  out << "\nSame-source pairs (faster < slower as published)\n";
  rows.clear();
  for (const PairOutcome& p : r.pairs) {
    std::vector<std::string> row = {p.a + " < " + p.b, p.shipped_ok ? "same order" : "WRONG ORDER"};
    if (cross_validated) row.push_back(p.held_out_ok ? "same order" : "WRONG ORDER");
    rows.push_back(row);
  }
  std::vector<std::string> pair_header = {"pair", "shipped"};
  if (cross_validated) pair_header.push_back("held_out");
  print_table(out, pair_header, rows);

  out << "\n" << summary_line("shipped targets", r.shipped);
  if (!cross_validated) return;
  out << summary_line("fit on every source", r.fitted);
  out << summary_line("leave-one-source-out", r.held_out);
  out << "\nFitted knobs per family (all sources; then per left-out source)\n";
  rows.clear();
  auto knob_row = [](const std::string& family, const std::string& fold, const SimKnobs& k) {
    return std::vector<std::string>{family, fold, fixed(k.hbm_gbps, 0), fixed(k.gm_read_bpc, 0),
                                    fixed(k.min_burst_bytes, 0), fixed(k.launch_us, 1),
                                    fixed(k.cross_core_sync_cycles, 0), fixed(k.l2_per_hbm, 1)};
  };
  for (const auto& [family, k] : r.fit) rows.push_back(knob_row(family, "(all)", k));
  for (const auto& [family, folds] : r.fold_fit)
    for (const auto& [source, k] : folds) rows.push_back(knob_row(family, "without " + source, k));
  print_table(out, {"family", "fit", "hbm_gb/s", "gm_read_bpc", "min_burst_b", "launch_us", "xcore_sync", "l2/hbm"}, rows);
}

}  // namespace

int run_validate(const Args& args) {
  po::options_description options;
  options.add_options()("data", po::value<std::string>()->default_value("tests/data/ascend_measurements.json"),
                        "the published measurements (JSON)")(
      "cross-validate", "fit the knobs per target family, leaving one source out at a time (minutes)")(
      "json", "print the report as JSON");
  const auto vm = parse_command(
      args, options,
      {"validate", "[--data FILE] [--cross-validate] [--json]",
       "Simulates every published Ascend timing whose tiling a TileConfig can express and\n"
       "compares it with the measurement; --cross-validate also fits the simulator's\n"
       "physical knobs per target family and reports each point from the fit that did\n"
       "not see its source. All simulated figures are labelled simulated.",
       "pto-tune validate --cross-validate"});
  if (!vm) return 0;
  const std::vector<PublishedPoint> points = load_published_points((*vm)["data"].as<std::string>());
  const bool cross_validated = vm->count("cross-validate") > 0;
  const FidelityReport report = evaluate_fidelity(points, cross_validated);
  if (vm->count("json")) {
    print_json(std::cout, report.to_json());
    return 0;
  }
  print_report(std::cout, report, cross_validated);
  return 0;
}

}  // namespace pto::cli
