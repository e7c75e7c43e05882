#include "reporting/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <span>

#include "core/format_number.h"
#include "reporting/svg_plot.h"
#include "cost_model/format_ns.h"
#include "cost_model/ranking.h"

namespace pto::reporting {
namespace {

using search::RecordKey;
using search::TuningRecord;

std::string time_text(double ns) { return format_ns(ns, MicroUnit::Micro); }

std::string label_of(const RecordKey& key, const std::string& target) { return key.workload + " @" + target + " (" + key.backend + ")"; }

// One key's records in insertion order.
struct KeyRecords {
  RecordKey key;
  std::string target;
  std::vector<const TuningRecord*> all;
};

std::vector<KeyRecords> by_key(const std::vector<TuningRecord>& records) {
  std::map<RecordKey, size_t> index;
  std::vector<KeyRecords> keys;
  for (const TuningRecord& r : records) {
    auto [it, added] = index.try_emplace(r.key(), keys.size());
    if (added) keys.push_back({r.key(), r.target_name, {}});
    keys[it->second].all.push_back(&r);
  }
  return keys;
}

const TuningRecord* best_of(const std::vector<const TuningRecord*>& records, bool defaults_only) {
  const TuningRecord* best = nullptr;
  for (const TuningRecord* r : records)
    if (r->usable() && (!defaults_only || r->strategy == "default") && (!best || search::better(*r, *best))) best = r;
  return best;
}

struct Outcome {
  const KeyRecords* key;
  const TuningRecord* winner;
  const TuningRecord* baseline;  // may be null: no default measured
  double speedup() const { return baseline ? baseline->time_ns() / winner->time_ns() : 1; }
};

std::vector<Outcome> outcomes(const std::vector<KeyRecords>& keys) {
  std::vector<Outcome> out;
  for (const KeyRecords& k : keys)
    if (const TuningRecord* w = best_of(k.all, false)) out.push_back({&k, w, best_of(k.all, true)});
  return out;
}

// A record's provenance label: sim's times are simulated, model's predicted by the cost
// model; cpu, npu (a real NPU, through a measure command or imported) and command were
// measured.
std::string backend_label(const std::string& backend) {
  if (backend == "sim") return backend + " (simulated)";
  if (backend == "model") return backend + " (predicted)";
  return backend + " (measured)";
}

// The model backend's time is the cost model's prediction: set against the prediction it
// lies on y = x and ranks with tau 1 by construction, so it is left out of both.
bool scores_the_model(const std::string& backend) { return backend != "model"; }

// At most `most` of `points`, evenly spaced, the first and last kept.
std::vector<std::pair<double, double>> spaced(std::vector<std::pair<double, double>> points, size_t most) {
  if (points.size() <= most) return points;
  std::vector<std::pair<double, double>> kept;
  for (size_t i = 0; i < most; ++i) kept.push_back(points[i * (points.size() - 1) / (most - 1)]);
  return kept;
}

std::string predicted_plot(const std::vector<TuningRecord>& records) {
  std::map<std::string, Series> by_backend;
  for (const TuningRecord& r : records) {
    const double p = r.measurement.predicted_ns;
    if (!r.usable() || !(p > 0) || !std::isfinite(p) || !scores_the_model(r.backend)) continue;
    Series& s = by_backend[r.backend];
    s.name = backend_label(r.backend);
    s.points.push_back({p, r.time_ns()});
  }
  XYPlot plot{"Cost model: predicted vs simulated or measured time", "predicted time (ns, log scale)",
              "simulated or measured time (ns, log scale)", true, true, true, {}};
  for (auto& [backend, s] : by_backend) {
    s.points = spaced(std::move(s.points), kMaxPlotPoints);
    plot.series.push_back(std::move(s));
  }
  return render_svg(plot);
}

// Runs: a key's records from one default measurement up to the next, or up to another
// strategy's records (an identical default measurement is stored once, so a run may
// lack its own); the run's strategy is its first other label. Points: best so far / the key's best ever.
std::string convergence_plot(const std::vector<KeyRecords>& keys) {
  XYPlot plot{"Search convergence: best so far", "measurements spent (count)",
              "best so far / best found for the workload (×)", false, false, false, {}};
  std::map<std::string, int> colours;
  for (const KeyRecords& k : std::span(keys).first(std::min(keys.size(), kMaxPlottedWorkloads))) {
    const TuningRecord* best = best_of(k.all, false);
    if (!best) continue;
    std::vector<std::pair<std::string, std::vector<const TuningRecord*>>> runs;  // (strategy, records)
    for (const TuningRecord* r : k.all) {
      const bool is_default = r->strategy == "default";
      if (runs.empty() || is_default || (runs.back().first != "default" && runs.back().first != r->strategy))
        runs.push_back({"default", {}});
      if (!is_default) runs.back().first = r->strategy;
      runs.back().second.push_back(r);
    }
    for (const auto& [strategy, run] : runs) {
      auto [it, added] = colours.try_emplace(strategy, static_cast<int>(colours.size()));
      Series s{strategy, {}, true, it->second, added};
      double so_far = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < run.size(); ++i) {
        if (run[i]->usable()) so_far = std::min(so_far, run[i]->time_ns());
        if (std::isfinite(so_far)) s.points.push_back({static_cast<double>(i + 1), so_far / best->time_ns()});
      }
      plot.series.push_back(std::move(s));
    }
  }
  return render_svg(plot);
}

std::string speedup_plot(const std::vector<Outcome>& results) {
  BarPlot plot{"Speedup of the winner over the default config", "speedup (× over default; 1 = no gain)", 1, {}, {}};
  std::map<std::string, int> colours;
  for (const Outcome& o : std::span(results).first(std::min(results.size(), kMaxPlottedWorkloads))) {
    auto [it, added] = colours.try_emplace(o.winner->workload.op, static_cast<int>(colours.size()));
    if (added) plot.legend.push_back({it->first, it->second});
    if (o.baseline) plot.bars.push_back({label_of(o.key->key, o.key->target), o.speedup(), it->second});
  }
  return render_svg(plot);
}

struct Ranking {
  size_t workloads = 0;
  double tau = 0, top1 = 0, top5 = 0;  // means over workloads
};

// Per backend, means over the keys with at least two usable, predicted records.
std::map<std::string, Ranking> rankings(const std::vector<KeyRecords>& keys) {
  std::map<std::string, Ranking> out;
  for (const KeyRecords& k : keys) {
    if (!scores_the_model(k.key.backend)) continue;
    std::vector<double> predicted, measured;
    for (const TuningRecord* r : k.all)
      if (r->usable() && r->measurement.predicted_ns > 0)
        predicted.push_back(r->measurement.predicted_ns), measured.push_back(r->time_ns());
    if (predicted.size() < 2) continue;
    Ranking& g = out[k.key.backend];
    ++g.workloads;
    g.tau += kendall_tau(predicted, measured);
    g.top1 += top_k_regret(predicted, measured, 1);
    g.top5 += top_k_regret(predicted, measured, 5);
  }
  for (auto& [backend, g] : out) {
    const double n = static_cast<double>(g.workloads);
    g.tau /= n, g.top1 /= n, g.top5 /= n;
  }
  return out;
}

std::string percent(double fraction) { return format_number("%.1f%%", 100 * fraction); }

// Rows of (cells); the first row is the header. Both formats share it.
using Table = std::vector<std::vector<std::string>>;

Table outcome_table(const std::vector<Outcome>& results) {
  Table t = {{"workload", "target", "backend", "winner config", "winner", "default", "speedup", "strategy"}};
  for (const Outcome& o : results)
    t.push_back({o.key->key.workload, o.key->target, backend_label(o.key->key.backend), o.winner->config.to_string(),
                 time_text(o.winner->time_ns()), o.baseline ? time_text(o.baseline->time_ns()) : "not measured",
                 o.baseline ? format_number("%.2f×", o.speedup()) : "–", o.winner->strategy});
  return t;
}

Table ranking_table(const std::map<std::string, Ranking>& ranks) {
  Table t = {{"backend", "workloads", "Kendall τ", "top-1 regret", "top-5 regret"}};
  for (const auto& [backend, g] : ranks)
    t.push_back({backend_label(backend), std::to_string(g.workloads), format_number("%.3f", g.tau), percent(g.top1), percent(g.top5)});
  return t;
}

std::string html_table(const Table& t) {
  std::string out = "<table>\n<tr>";
  for (const std::string& h : t[0]) out += "<th>" + xml_escape(h) + "</th>";
  out += "</tr>\n";
  for (size_t i = 1; i < t.size(); ++i) {
    out += "<tr>";
    for (const std::string& c : t[i]) out += "<td>" + xml_escape(c) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string markdown_table(const Table& t) {
  auto row = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (std::string c : cells) {
      std::replace(c.begin(), c.end(), '|', '/');
      out += " " + c + " |";
    }
    return out + "\n";
  };
  std::string out = row(t[0]) + "|";
  for (size_t i = 0; i < t[0].size(); ++i) out += "---|";
  out += "\n";
  for (size_t i = 1; i < t.size(); ++i) out += row(t[i]);
  return out;
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;color:#222}"
    "table{border-collapse:collapse;margin:8px 0 24px;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}td{word-break:break-word;max-width:380px}"
    "figure{margin:16px 0 32px}figcaption{font-size:13px;color:#555;max-width:720px}"
    ".note{color:#555;font-size:13px}";

std::string figure(const std::string& id, const std::string& svg, const std::string& caption) {
  return "<figure id=\"" + id + "\">\n" + svg + "<figcaption>" + xml_escape(caption) + "</figcaption>\n</figure>\n";
}

}  // namespace

Report make_report(const std::vector<TuningRecord>& records, const std::string& source) {
  const std::vector<KeyRecords> keys = by_key(records);
  const std::vector<Outcome> results = outcomes(keys);
  const Table outcome = outcome_table(results), ranking = ranking_table(rankings(keys));
  const std::string header = std::to_string(records.size()) + " records, " + std::to_string(keys.size()) +
                             " workloads (workload, target, backend) from " + source +
                             ". sim times are simulated, model times predicted by the cost model (so the model is not "
                             "scored against them); cpu times were measured on this machine, npu and command times on "
                             "the device their record names.";
  // The page's share of a large database (report.h); the Markdown has every winner.
  const Table page_outcome(outcome.begin(), outcome.begin() + static_cast<std::ptrdiff_t>(std::min(outcome.size(), kMaxPageRows + 1)));
  const std::string page_note =
      keys.size() <= kMaxPlottedWorkloads && records.size() <= kMaxPlotPoints
          ? ""
          : " This page shows the first " + std::to_string(std::min(results.size(), kMaxPageRows)) + " of " +
                std::to_string(results.size()) + " winners, plots the runs and speedups of the first " +
                std::to_string(std::min(keys.size(), kMaxPlottedWorkloads)) + " workloads and at most " +
                std::to_string(kMaxPlotPoints) + " evenly spaced points per backend; report.md lists every winner.";

  Report r;
  r.html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>pto-tune report</title>"
           "<style>" + std::string(kStyle) + "</style></head>\n<body>\n<h1>pto-tune tuning report</h1>\n<p class=\"note\">" +
           xml_escape(header + page_note) + "</p>\n<h2>Winners</h2>\n" + html_table(page_outcome) + "<h2>Plots</h2>\n" +
           figure("predicted-vs-measured", predicted_plot(records),
                  "Each point is one measured config. On the dashed diagonal the model is exact; the "
                  "tuner needs only its order to be right (see the ranking table).") +
           figure("convergence", convergence_plot(keys),
                  "One line per tuning run: the best time found so far, relative to the best ever found "
                  "for its workload, against measurements spent (the default config is measurement 1).") +
           figure("speedup", speedup_plot(results),
                  "The winner's time against the op's default config, per workload; coloured by op.") +
           "<h2>Cost model ranking quality</h2>\n<p class=\"note\">Means over workloads with at least two "
           "measured configs. Kendall τ: 1 = the model orders configs exactly as measured. Top-k regret: how "
           "much slower the best of the model's k favourites is than the best measured.</p>\n<div id=\"ranking\">" +
           html_table(ranking) + "</div>\n</body></html>\n";
  r.markdown = "# pto-tune tuning report\n\n" + header + "\n\n## Winners\n\n" + markdown_table(outcome) +
               "\n## Cost model ranking quality\n\n" + markdown_table(ranking) +
               "\nPlots: report.html (predicted vs measured, convergence, speedup).\n";
  return r;
}

}  // namespace pto::reporting
