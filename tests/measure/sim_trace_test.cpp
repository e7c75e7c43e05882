// Simulator traces (measure/sim/trace.h): on what the compiler really emits, for random
// ops and ragged shapes on every NPU target, the trace is Chrome Trace Event JSON, its
// slices never overlap on a track, each track's slice time is the simulator's own busy
// time for that pipe, flags are flows, loads carry their L2 hits, and the cap holds.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <sstream>

#include "core/compile.h"
#include "core/op_library.h"
#include "core/target.h"
#include "measure/sim/simulator.h"
#include "measure/sim/trace.h"
#include "tests/random_attrs.h"

namespace pto::sim {
namespace {

struct Traced {
  Program program;
  SimResult result;
  nlohmann::json trace;
};

Traced traced_run(const Workload& w, const Target& target, int64_t max_slices = 0) {
  const TensorGraph graph = build_graph(w);
  Traced t{compile(graph, default_config(w, graph, target), target).program, {}, {}};
  ChromeTrace trace(t.program, target, max_slices);
  SimOptions options;
  options.trace = &trace;
  t.result = simulate(t.program, target, options);
  std::stringstream text;
  trace.write(text);
  t.trace = nlohmann::json::parse(text.str());  // throws on invalid JSON
  return t;
}

Workload random_workload(std::mt19937& rng) {
  const std::vector<OpDef>& ops = op_library();
  const OpDef& op = ops[rng() % ops.size()];
  std::uniform_int_distribution<int64_t> size(1, 300);
  Shape s;
  for (const std::string& d : op.dims) s.push_back(d == "B" || d == "H" ? size(rng) % 3 + 1 : size(rng));
  Workload w{op.name, s, rng() % 2 ? DType::F16 : DType::F32, {}};
  pto::testing::draw_attrs(op, w, rng);
  return w;
}

std::vector<Target> npu_targets() {
  std::vector<Target> targets;
  for (const std::string& name : builtin_target_names())
    if (Target t = load_target(name); t.kind == TargetKind::Npu) targets.push_back(t);
  return targets;
}

// Every event carries what the Trace Event format requires of its phase.
void expect_well_formed(const nlohmann::json& trace) {
  ASSERT_TRUE(trace.contains("traceEvents") && trace["traceEvents"].is_array());
  EXPECT_EQ(trace["metadata"]["label"], "simulated");
  for (const nlohmann::json& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid") && e.contains("name")) << e.dump();
    const std::string ph = e["ph"];
    ASSERT_TRUE(ph == "X" || ph == "M" || ph == "s" || ph == "f") << e.dump();
    if (ph == "M") continue;
    ASSERT_TRUE(e["ts"].is_number() && e["ts"].get<double>() >= 0) << e.dump();
    if (ph == "X") ASSERT_TRUE(e["dur"].is_number() && e["dur"].get<double>() > 0 && e["args"].is_object()) << e.dump();
    if (ph != "X") ASSERT_TRUE(e.contains("id")) << e.dump();
  }
}

TEST(SimTrace, IsValidDoesNotOverlapAndSumsToTheSimulatorsBusyTime) {
  std::mt19937 rng(11);
  for (const Target& target : npu_targets()) {
    for (int trial = 0; trial < 6; ++trial) {
      const Workload w = random_workload(rng);
      SCOPED_TRACE(target.name + " " + w.key());
      const Traced t = traced_run(w, target);
      expect_well_formed(t.trace);
      EXPECT_FALSE(t.trace["metadata"]["capped"].get<bool>());

      std::map<int, std::string> process;  // pid -> "AIC 3"
      std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;  // (pid, tid) -> (ts, dur)
      for (const nlohmann::json& e : t.trace["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "process_name") process[e["pid"]] = e["args"]["name"];
        if (e["ph"] == "X") slices[{e["pid"], e["tid"]}].push_back({e["ts"], e["dur"]});
      }
      std::map<std::pair<std::string, int>, double> busy_us;  // (core type, pipe)
      for (auto& [track, list] : slices) {
        std::sort(list.begin(), list.end());
        for (size_t i = 1; i < list.size(); ++i)
          ASSERT_LE(list[i - 1].first + list[i - 1].second, list[i].first + 1e-9 * (1 + list[i].first))
              << "overlap on pid " << track.first << " tid " << track.second;
        const std::string type = process.at(track.first).substr(0, 3);
        for (const auto& [ts, dur] : list) busy_us[{type, track.second}] += dur;
      }
      for (const auto& [core, pipes] : t.result.pipe_utilisation) {
        const int64_t pool = core == CoreType::AIV && target.split_cores ? target.aiv_cores : target.aic_cores;
        for (int p = 0; p < kNumPipes; ++p) {
          const double expected = pipes[p] * static_cast<double>(pool) * t.result.cycles;
          const double traced = busy_us[{core_type_name(core), p}] * target.clock_mhz;
          EXPECT_NEAR(traced, expected, 1e-6 * (1 + expected)) << core_type_name(core) << " " << pipe_name(static_cast<Pipe>(p));
        }
      }
    }
  }
}

TEST(SimTrace, FlagsAreFlowsAndLoadsCarryTheirL2Hits) {
  const Target target = load_target("ascend910b1");
  const Traced t = traced_run(Workload{"matmul", {256, 200, 300}, DType::F16, {}}, target);
  std::map<int64_t, int> flow_ends;
  int loads = 0, waits = 0;
  for (const nlohmann::json& e : t.trace["traceEvents"]) {
    if (e["ph"] == "s") ++flow_ends[e["id"]];
    if (e["ph"] == "f") --flow_ends[e["id"]];
    if (e["ph"] != "X") continue;
    if (e["cat"] == "WAIT_FLAG") ++waits;
    if (e["cat"] != "TLOAD") continue;
    ++loads;
    const std::set<std::string> verdicts = {"hit", "miss", "partial hit"};
    EXPECT_TRUE(verdicts.count(e["args"]["l2"].get<std::string>())) << e.dump();
    EXPECT_GE(e["args"]["bytes"].get<double>(), e["args"]["l2_hit_bytes"].get<double>());
    EXPECT_GT(e["args"]["bytes"].get<double>(), 0);
  }
  EXPECT_GT(loads, 0);
  EXPECT_GT(waits, 0);
  EXPECT_FALSE(flow_ends.empty());
  for (const auto& [id, balance] : flow_ends) EXPECT_EQ(balance, 0) << "flow " << id << " has no matching end";
}

TEST(SimTrace, TracingDoesNotChangeTheResultAndTheCapIsRecorded) {
  const Target target = load_target("ascend910b1");
  const Workload w{"matmul", {512, 512, 512}, DType::F16, {}};
  const Traced capped = traced_run(w, target, 50);
  EXPECT_DOUBLE_EQ(capped.result.cycles, simulate(capped.program, target).cycles);
  int slices = 0;
  for (const nlohmann::json& e : capped.trace["traceEvents"]) slices += e["ph"] == "X";
  EXPECT_EQ(slices, 50);
  EXPECT_TRUE(capped.trace["metadata"]["capped"].get<bool>());
  EXPECT_GT(capped.trace["metadata"]["dropped_slices"].get<int64_t>(), 0);
}

}  // namespace
}  // namespace pto::sim
