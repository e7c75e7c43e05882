// `pto-tune plan`: the bucket planner. For an op whose one dim ranges over LO..HI at run
// time (an LLM's M = batch x tokens), it decides which sizes a release must tune so that
// the JIT's lookup (db/config_lookup.h: exact, else the transfer of the tuned
// neighbours' configs, ranked with the default by the cost model) serves every size
// within --max-loss of what a search finds for it.
//
// The method, measured on the given backend throughout:
//   1. tune LO and HI (search::tune, as `pto-tune tune` does; every measurement is
//      stored in the database, so a rerun measures nothing again);
//   2. take the widest unchecked interval [a, b] (in log2 of the size), its geometric
//      midpoint m; ask a lookup over the buckets tuned so far what it would serve for m,
//      measure that config at m, and tune m: loss = served / tuned - 1;
//   3. loss above the bound: m becomes a bucket and [a, m], [m, b] are checked in turn,
//      unless [a, b] spans less than kNarrowestSplit octaves: then the loss is reported
//      as over the bound and the interval left as it is (the bound is not claimed);
//      within the bound, the interval is accepted (m's tune was only the check) when it
//      spans at most kWidestAccepted octaves; a wider one is checked again in its halves
//      [a, m] and [m, b], served from the same buckets (m is no bucket);
//   until every interval is accepted or --max-tunes tunes were spent (then the
//   intervals left unchecked are reported, and the bound is not claimed for them).
// One midpoint stands for its interval: a size elsewhere in it can lose more. Why
// wide intervals are checked again: over 1..8192 of a 4096x4096 matmul, the midpoint
// 91 was served within the bound from the buckets 1 and 8192, while the default they
// left for M = 300-2500 lost 8-11 % (results/jit_transfer.md).
//
// The buckets go to --out as a batch file (batch/batch_file.h's plain format, one line
// a bucket, with target=, backend= and budget=) that `pto-tune batch` runs for the
// release. Progress goes to stderr, a line per tune and check; --json prints the plan.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <queue>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/fraction.h"
#include "core/atomic_file.h"
#include "core/config_chain.h"
#include "core/error.h"
#include "core/format_number.h"
#include "core/op_library.h"
#include "core/parse_number.h"
#include "cost_model/format_ns.h"
#include "db/config_lookup.h"
#include "db/tuning_db.h"
#include "measure/runner.h"
#include "search/model_pick.h"
#include "search/tune_request.h"
#include "search/tuner.h"

namespace pto::cli {

namespace {

using nlohmann::json;

// --shapes with one dim a range: "1..8192,4096,4096" or "M=1..8192,4096,4096".
struct SizeRange {
  size_t dim = 0;
  int64_t lo = 0, hi = 0;
  std::vector<std::string> tokens;  // the --shapes words, the range's one replaced by each size

  std::string shapes_at(int64_t size) const {
    std::vector<std::string> t = tokens;
    t[dim] = std::to_string(size);
    return join(t, ",");
  }
};

int64_t parse_size(const std::string& text, const std::string& shapes) {
  const std::optional<int64_t> v = parse_int64(text);
  if (!v || *v < 1)
    usage_error("--shapes: '" + text + "' in '" + shapes + "' is not a size >= 1");
  return *v;
}

SizeRange parse_range(const std::string& shapes) {
  SizeRange r;
  for (size_t start = 0;;) {
    const size_t comma = shapes.find(',', start);
    r.tokens.push_back(shapes.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  size_t ranges = 0;
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    std::string token = r.tokens[i];
    if (const size_t eq = token.find('='); eq != std::string::npos) token = token.substr(eq + 1);
    const size_t dots = token.find("..");
    if (dots == std::string::npos) continue;
    ++ranges;
    r.dim = i;
    r.lo = parse_size(token.substr(0, dots), shapes);
    r.hi = parse_size(token.substr(dots + 2), shapes);
  }
  if (ranges != 1)
    usage_error("--shapes: expected exactly one dim as a range LO..HI (e.g. 1..8192,4096,4096), got '" + shapes +
                "' with " + std::to_string(ranges));
  if (r.hi <= r.lo)
    usage_error("--shapes: the range " + std::to_string(r.lo) + ".." + std::to_string(r.hi) + " must rise");
  return r;
}

std::string percent(double fraction) { return format_number("%.1f %%", 100 * fraction); }

struct Check {
  int64_t lo = 0, hi = 0, mid = 0;
  std::string served;  // the lookup's describe()
  TileConfig served_config;
  double served_ns = 0, tuned_ns = 0, loss = 0;
  bool split = false;
  bool over_bound = false;  // a loss above the bound on an interval too narrow to split
};

class Planner {
 public:
  Planner(const po::variables_map& vm, const SizeRange& range, const Target& target, double max_loss)
      : vm_(vm), range_(range), target_(target), max_loss_(max_loss) {
    max_tunes_ = vm["max-tunes"].as<int64_t>();
    if (max_tunes_ < 2) usage_error("--max-tunes: the range's two ends need 2 tunes at least, got " + std::to_string(max_tunes_));
    if (vm.count("transfer-margin"))
      transfer_margin_ = parse_fraction("--transfer-margin", vm["transfer-margin"].as<std::string>(), true);
    build_graph(workload(range.hi));  // a bad shape before any tune (the request checks the low end's)
    // Every tune of the plan is this job at another size: one set of runners and options.
    job_ = search::resolve(tune_request_from(vm, workload(range.lo), target), tune_flag_names());
    const std::optional<std::string> db_flag =
        vm.count("db") ? std::optional<std::string>(vm["db"].as<std::string>()) : std::nullopt;
    const std::string db_path = db::resolve_db_path(db_flag);
    // Before any tune: --out written over the database would destroy what was tuned.
    if (vm.count("out")) refuse_output_onto_input(vm["out"].as<std::string>(), db_path, "--out", "the database");
    db_ = db::TuningDb::open(db_path);
    db_->remember_target(target);
  }

  Workload workload(int64_t size) const {
    po::variables_map at = vm_;
    at.at("shapes").value() = range_.shapes_at(size);
    return workload_from(at, target_);
  }

  void run() {
    for (int64_t size : {range_.lo, range_.hi}) buckets_.emplace(size, tune(size).best);
    // Widest first (log2 width), so that a tune limit leaves the narrowest unchecked.
    auto narrower = [](const std::pair<int64_t, int64_t>& a, const std::pair<int64_t, int64_t>& b) {
      return std::log2(double(a.second) / double(a.first)) < std::log2(double(b.second) / double(b.first));
    };
    std::priority_queue<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>, decltype(narrower)>
        open(narrower);
    open.push({range_.lo, range_.hi});
    while (!open.empty()) {
      const auto [lo, hi] = open.top();
      if (hi - lo < 2) {  // nothing between two tuned sizes
        open.pop();
        continue;
      }
      if (tunes_ >= max_tunes_) break;
      open.pop();
      const Check& c = check(lo, hi);
      if (!c.split && std::log2(double(hi) / double(lo)) <= kWidestAccepted) continue;
      open.push({lo, c.mid});
      open.push({c.mid, hi});
    }
    for (; !open.empty(); open.pop())
      if (open.top().second - open.top().first >= 2) unchecked_.push_back(open.top());
    std::sort(unchecked_.begin(), unchecked_.end());
  }

  json to_json() const {
    json buckets = json::array(), checks = json::array(), unchecked = json::array();
    for (const auto& [size, best] : buckets_)
      buckets.push_back({{"size", size}, {"workload", best.workload.key()}, {"best_ns", best.time_ns()},
                         {"config", best.config.to_json()}});
    for (const Check& c : checks_)
      checks.push_back({{"interval", {c.lo, c.hi}}, {"size", c.mid}, {"served", c.served},
                        {"served_config", c.served_config.to_json()}, {"served_ns", c.served_ns},
                        {"tuned_ns", c.tuned_ns}, {"loss", c.loss}, {"split", c.split}, {"over_bound", c.over_bound}});
    for (const auto& [lo, hi] : unchecked_) unchecked.push_back({lo, hi});
    return {{"op", workload(range_.lo).op}, {"dim", range_.dim}, {"lo", range_.lo}, {"hi", range_.hi},
            {"target", target_.name}, {"backend", job_.backend}, {"max_loss", max_loss_}, {"buckets", buckets},
            {"checks", checks}, {"unchecked", unchecked},
            {"transfer_margin", transfer_margin_ ? nlohmann::json(*transfer_margin_) : nlohmann::json("learned")}, {"tunes", tunes_}, {"max_tunes", max_tunes_},
            {"bound_met", bound_met()},
            {"powers_of_two", powers_of_two()}, {"db", db_->location()}};
  }

  void print_text() const {
    std::vector<std::vector<std::string>> rows;
    for (const Check& c : checks_)
      rows.push_back({std::to_string(c.lo) + ".." + std::to_string(c.hi), std::to_string(c.mid), format_ns(c.served_ns),
                      format_ns(c.tuned_ns), percent(c.loss), verdict(c), c.served});
    std::cout << "# plan for " << workload(range_.lo).op << " " << range_.shapes_at(range_.lo) << " .. "
              << range_.shapes_at(range_.hi) << " on " << target_.name << " (" << job_.backend << "), max loss "
              << percent(max_loss_) << "\n";
    print_table(std::cout, {"interval", "midpoint", "served", "tuned", "loss", "", "lookup served"}, rows);
    std::vector<std::string> sizes;
    for (const auto& [size, best] : buckets_) sizes.push_back(std::to_string(size));
    std::cout << "buckets: " << join(sizes, ",") << " (" << buckets_.size() << "; the powers of two in the range: "
              << powers_of_two() << ")\n"
              << "tunes: " << tunes_ << " (" << buckets_.size() << " buckets, " << tunes_ - int64_t(buckets_.size())
              << " midpoint checks that made no bucket)\n";
    if (!unchecked_.empty()) {
      std::vector<std::string> gaps;
      for (const auto& [lo, hi] : unchecked_) gaps.push_back(std::to_string(lo) + ".." + std::to_string(hi));
      std::cout << "unchecked (--max-tunes " << max_tunes_ << " reached): " << join(gaps, ", ") << "\n";
    }
    std::vector<std::string> over;
    for (const Check& c : checks_)
      if (c.over_bound) over.push_back(std::to_string(c.lo) + ".." + std::to_string(c.hi) + " (" + percent(c.loss) + ")");
    if (!over.empty())
      std::cout << "over the bound, under 1/8 octave and not split (the tiling changes from size to size there): "
                << join(over, ", ") << "\n";
  }

  // batch/batch_file.h's plain format: one line a bucket.
  void write_batch(const std::string& path) const {
    std::ostringstream out;
    out << "# pto-tune plan: " << buckets_.size() << " buckets of " << workload(range_.lo).op << " "
        << range_.shapes_at(range_.lo) << " .. " << range_.shapes_at(range_.hi) << " on " << target_.name
        << ", max loss " << percent(max_loss_) << " (" << job_.backend << ")\n";
    for (const auto& [size, best] : buckets_) {
      const Workload& w = best.workload;
      out << w.op << " " << range_.shapes_at(size) << " " << dtype_name(w.dtype);
      for (const auto& [key, value] : w.attrs) out << " " << key << "=" << value;
      out << " target=" << target_.name << " backend=" << job_.backend;
      if (job_.options.budget > 0) out << " budget=" << job_.options.budget;
      out << "\n";
    }
    write_output_file(path, std::move(out).str(), "the --out batch file");
  }

 private:
  search::TuneResult tune(int64_t size) {
    const Workload w = workload(size);
    ++tunes_;
    const search::TuneResult r = search::tune(w, target_, *job_.runners.search, *db_, job_.options);
    std::cerr << "plan: tuned " << w.key() << " (" << tunes_ << " of at most " << max_tunes_
              << "): " << format_ns(r.best.time_ns()) << "\n";
    return r;
  }

  const Check& check(int64_t lo, int64_t hi) {
    Check c;
    c.lo = lo;
    c.hi = hi;
    c.mid = std::clamp<int64_t>(std::llround(std::sqrt(double(lo) * double(hi))), lo + 1, hi - 1);
    const Workload w = workload(c.mid);
    const ConfigChoice served = shipped_lookup()->choose(w, target_);
    c.served = served.describe();
    c.served_config = served.config;
    const search::TuneResult tuned = tune(c.mid);
    c.tuned_ns = tuned.best.time_ns();
    c.served_ns = served.config == tuned.best.config ? c.tuned_ns : measured_ns(w, served.config);
    c.loss = std::max(0.0, c.served_ns / c.tuned_ns - 1);
    const bool over = !(c.loss <= max_loss_);
    c.split = over && std::log2(double(hi) / double(lo)) >= kNarrowestSplit;
    c.over_bound = over && !c.split;
    if (c.split) buckets_.emplace(c.mid, tuned.best);
    std::cerr << "plan: " << w.key() << " between " << lo << " and " << hi << ": served " << format_ns(c.served_ns)
              << " (" << c.served << "), tuned " << format_ns(c.tuned_ns) << ", loss " << percent(c.loss) << ": "
              << verdict(c) << "\n";
    checks_.push_back(std::move(c));
    return checks_.back();
  }

  // The JIT's lookup on a release that ships the buckets so far: the database's records
  // of their workloads alone, with the evidence they were tuned with (the learned margin,
  // each neighbour's measured lead error), so that the plan checks what the JIT will serve.
  std::unique_ptr<ConfigChain> shipped_lookup() const {
    db::LookupOptions options;
    options.backends = {job_.backend};
    if (transfer_margin_) {
      options.transfer_margin = *transfer_margin_;
      options.learn_margin = false;
    }
    options.only_workloads.emplace();
    for (const auto& [size, best] : buckets_) options.only_workloads->insert(best.workload.key());
    const auto provider = std::make_shared<db::DbConfigProvider>(db_->location(), options);
    return std::make_unique<ConfigChain>(std::vector<std::shared_ptr<ConfigProvider>>{
        provider, std::make_shared<search::ModelPickProvider>(provider->model_sources())});
  }

  // The served config's time at `w`: the finalists' runner (the full timing on a noisy
  // backend); +infinity when it does not run.
  double measured_ns(const Workload& w, const TileConfig& config) {
    const std::vector<measure::Measurement> m = job_.runners.finalists->measure(w, {config});
    if (m.empty() || m.front().status != measure::Status::OK) return std::numeric_limits<double>::infinity();
    return m.front().stats.median_ns;
  }

  int64_t powers_of_two() const {
    int64_t n = 0;
    for (int64_t p = 1; p <= range_.hi; p *= 2) n += p >= range_.lo;
    return n;
  }

  // The widest interval (in octaves) one midpoint within the bound accepts.
  static constexpr double kWidestAccepted = 2;
  // The narrowest interval (in octaves, about 9 %) a loss over the bound splits. Closer
  // sizes than that losing more than the bound are a change of tiling from one size to
  // the next, which more buckets only chase size by size: 4096,11008 at M = 160-184 took
  // nine buckets one to six apart, each next size still 7-10 % off (results/jit_transfer.md).
  static constexpr double kNarrowestSplit = 0.125;

  static std::string verdict(const Check& c) {
    return c.split ? "split" : c.over_bound ? "over the bound, not split (under 1/8 octave)" : "within the bound";
  }

  bool bound_met() const {
    return unchecked_.empty() && std::none_of(checks_.begin(), checks_.end(), [](const Check& c) { return c.over_bound; });
  }

  const po::variables_map& vm_;
  const SizeRange& range_;
  const Target& target_;
  double max_loss_;
  search::ResolvedTune job_;  // the plan's tuning job, at every size
  int64_t max_tunes_ = 0;
  std::optional<double> transfer_margin_;  // the lookup's, when not its default
  std::unique_ptr<db::TuningDb> db_;
  int64_t tunes_ = 0;
  std::map<int64_t, search::TuningRecord> buckets_;  // by size
  std::vector<Check> checks_;
  std::vector<std::pair<int64_t, int64_t>> unchecked_;
};

}  // namespace

int run_plan(const Args& args) {
  po::options_description options;
  add_workload_options(options);
  add_target_option(options, "host");
  options.add_options()
      ("max-loss", po::value<std::string>()->default_value("2%"),
       "the most a size may lose to its own tuned best when served by the lookup: 2% or 0.02")
      ("backend", po::value<std::string>(),
       "what measures, as for 'pto-tune tune': cpu, sim, model, command or npu; default: cpu for the host, sim for "
       "an NPU target")
      ("strategy", po::value<std::string>()->default_value("auto"), "the search strategy of each tune")
      ("budget", po::value<int64_t>()->default_value(0),
       "measurements per tune, the default config's included; 0 = the strategy decides. Written into the batch file")
      ("max-tunes", po::value<int64_t>()->default_value(32),
       "tunes at most, the two ends and every midpoint check included; intervals left are reported unchecked")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of each search")
      ("transfer-margin", po::value<std::string>(),
       "the lookup's margin (default: learned per op from the records, else 3%; db::LookupOptions): how much faster than the default the "
       "cost model must predict a neighbour's config for the lookup to serve it; to plan for a JIT set up so")
      ("db", po::value<std::string>(), "tuning database file; default: $PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db")
      ("out", po::value<std::string>(), "write the buckets as a batch file for 'pto-tune batch'")
      ("json", po::bool_switch(), "print the plan as JSON: buckets, checks, unchecked, tunes, bound_met, ...");
  add_measure_options(options);
  const auto vm = parse_command(
      args, options,
      {"plan", "--op OP --shapes LO..HI,DIMS --max-loss 2% [options]",
       "Plans the buckets of a dynamic dim: which of its sizes a release must tune so that\n"
       "the JIT's lookup serves every size in LO..HI within --max-loss of that size's own\n"
       "tuned best. Tunes the ends, then checks each interval's geometric midpoint: the\n"
       "config the lookup would serve there from the buckets so far, measured, against a\n"
       "tune of the midpoint; where it loses more, the midpoint becomes a bucket and both\n"
       "halves are checked (an interval wider than two octaves is checked again in its\n"
       "halves even when its midpoint is within the bound). Every measurement is stored in\n"
       "the database. --out writes the\n"
       "buckets as a batch file for 'pto-tune batch'. Progress goes to stderr.",
       "pto-tune plan --op matmul --shapes 1..8192,4096,4096 --max-loss 2% --target ascend910b1 --backend sim "
       "--out buckets.txt"});
  if (!vm) return 0;
  const double max_loss = parse_fraction("--max-loss", (*vm)["max-loss"].as<std::string>(), false);
  const SizeRange range = parse_range((*vm)["shapes"].as<std::string>());
  const Target target = target_from(*vm);
  Planner planner(*vm, range, target, max_loss);
  planner.run();
  if (vm->count("out")) planner.write_batch((*vm)["out"].as<std::string>());
  if ((*vm)["json"].as<bool>())
    print_json(std::cout, planner.to_json());
  else
    planner.print_text();
  return 0;
}

}  // namespace pto::cli
