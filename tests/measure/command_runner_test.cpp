// The command backend's runner and the measure protocol, one behaviour at a time, with
// small shell commands as the measurer: what a request holds (the workload, the
// target, each feasible candidate with its config and PyPTO module; infeasible ones
// never sent), how answers become Measurements (times summarised, the measurer named),
// and how each way a command can misbehave becomes its candidates' status, never an
// exception. tests/cli/measure_command_test.cpp tunes through it end to end.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "measure/measure_protocol.h"
#include "measure/runner.h"
#include "tests/builtin_targets.h"
#include "tests/error_of.h"
#include "tests/temp_dir.h"

namespace pto::measure {
namespace {

using nlohmann::json;
using pto::testing::TempDir;
using pto::testing::npu;

const Workload kMatmul{"matmul", {64, 32, 64}, DType::F16, {}};
const TileConfig kSmall = TileConfig::parse(R"({"cube":{"m":[32,64],"k":[16,32],"n":[32,64]}})");
const TileConfig kLarge = TileConfig::parse(R"({"cube":{"m":[64,64],"k":[32,32],"n":[64,64]}})");
const TileConfig kInfeasible = TileConfig::parse(R"({"cube":{"m":[64,32],"k":[16,32],"n":[32,64]}})");  // mL0 > mL1

std::unique_ptr<Runner> command_runner(const std::string& command, double timeout_s = 10) {
  RunnerOptions options;
  options.measure_command = command;
  options.timeout_s = timeout_s;
  options.min_repetitions = 3;
  return make_runner("command", npu(), options);
}

// A command that keeps its request in `dir`/request.json and prints `answer` (from a
// file of its own: a test may make several such commands before it runs them).
std::string answering(const TempDir& dir, const json& answer) {
  static int answers = 0;
  const std::string file = dir.write("answer" + std::to_string(answers++) + ".json", answer.dump());
  return "cat > " + (dir.path() / "request.json").string() + "; cat " + file;
}

json answer_of(json results) {
  return {{"protocol", kProtocolName}, {"version", kProtocolVersion}, {"device", "npu:3"}, {"results", results}};
}

TEST(CommandRunner, SendsTheFeasibleCandidatesAndReadsTheirTimes) {
  const TempDir dir("command_runner_times");
  const json answer = answer_of({{{"id", "c0"}, {"times_s", {2e-6, 1e-6, 3e-6}}, {"verified", true}},
                                 {{"id", "c2"}, {"times_s", {5e-6, 5e-6, 5e-6}}}});
  const std::string command = answering(dir, answer);
  const std::vector<Measurement> results = command_runner(command)->measure(kMatmul, {kSmall, kInfeasible, kLarge});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].status, Status::OK);
  EXPECT_DOUBLE_EQ(results[0].stats.median_ns, 2000);
  EXPECT_EQ(results[0].stats.repetitions, 3);
  EXPECT_TRUE(results[0].verified);
  EXPECT_FALSE(results[0].simulated);
  EXPECT_EQ(results[0].backend, "command");
  EXPECT_FALSE(results[0].host.empty());
  EXPECT_GT(results[0].predicted_ns, 0);
  EXPECT_EQ(json::parse(results[0].detail_json)["device"], "npu:3");
  EXPECT_EQ(json::parse(results[0].detail_json)["measured_by"], "command: " + command);
  EXPECT_EQ(results[1].status, Status::INFEASIBLE);
  EXPECT_DOUBLE_EQ(results[2].stats.median_ns, 5000);

  std::ifstream file(dir.path() / "request.json");
  const json request = json::parse(file);
  EXPECT_EQ(request["protocol"], kProtocolName);
  EXPECT_EQ(request["workload"]["key"], kMatmul.key());
  EXPECT_EQ(request["workload"]["shape"], json({64, 32, 64}));
  EXPECT_EQ(request["target"]["fingerprint"], npu().fingerprint());
  EXPECT_EQ(request["repeats"], 3);
  EXPECT_FALSE(request["interleaved"].get<bool>());
  ASSERT_EQ(request["candidates"].size(), 2u);  // the infeasible one stayed here
  EXPECT_EQ(request["candidates"][1]["id"], "c2");
  EXPECT_EQ(TileConfig::from_json(request["candidates"][1]["config"]), kLarge);
  EXPECT_NE(request["candidates"][1]["pypto"].get<std::string>().find("set_cube_tile_shapes"), std::string::npos);
}

TEST(CommandRunner, FinalistsAreAskedForInterleaved) {
  const TempDir dir("command_runner_interleaved");
  const json answer = answer_of({{{"id", "c0"}, {"times_s", {1e-6}}}, {{"id", "c1"}, {"times_s", {2e-6}}}});
  const auto results = command_runner(answering(dir, answer))->measure_interleaved(kMatmul, {kSmall, kLarge});
  EXPECT_EQ(results.size(), 2u);
  std::ifstream file(dir.path() / "request.json");
  EXPECT_TRUE(json::parse(file)["interleaved"].get<bool>());
}

TEST(CommandRunner, EachMisbehaviourIsItsCandidatesStatus) {
  const TempDir dir("command_runner_misbehaviour");
  struct Case {
    std::string command;
    Status status;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"echo 'device lost' >&2; exit 4", Status::RUNTIME_ERROR, "exited with code 4: device lost"},
      {"echo not json", Status::RUNTIME_ERROR, "not JSON: 'not json"},
      {"sleep 30", Status::TIMEOUT, "its process group was killed"},
      {"echo '{\"protocol\":\"pto-tune-measure\",\"version\":2,\"results\":[]}'", Status::RUNTIME_ERROR,
       "version 2, newer"},
      {"echo '{\"protocol\":\"other\",\"version\":1,\"results\":[]}'", Status::RUNTIME_ERROR, "not a pto-tune-measure"},
      {answering(dir, answer_of(json::array())), Status::RUNTIME_ERROR, "no result for candidate c0"},
      {answering(dir, answer_of({{{"id", "c0"}, {"times_s", {1e-6}}}, {{"id", "c0"}, {"times_s", {1e-6}}}})),
       Status::RUNTIME_ERROR, "answered candidate c0 2 times"},
      {answering(dir, answer_of({{{"id", "c0"}, {"times_s", {0}}}})), Status::RUNTIME_ERROR, "= 0, not a positive"},
      {answering(dir, answer_of({{{"id", "c0"}, {"times_s", json::array()}}})), Status::RUNTIME_ERROR, "times_s"},
      {answering(dir, answer_of({{{"id", "c0"}, {"status", "wrong_result"}, {"message", "off by 3"}}})),
       Status::WRONG_RESULT, "off by 3"},
      {answering(dir, answer_of({{{"id", "c0"}, {"status", "timeout"}}})), Status::TIMEOUT, "reported timeout"},
      {answering(dir, answer_of({{{"id", "c0"}, {"status", "exploded"}}})), Status::RUNTIME_ERROR,
       "unknown status 'exploded'"},
  };
  for (const Case& c : cases) {
    const std::vector<Measurement> results = command_runner(c.command, 0.5)->measure(kMatmul, {kSmall});
    ASSERT_EQ(results.size(), 1u) << c.command;
    EXPECT_EQ(results[0].status, c.status) << c.command << ": " << results[0].error;
    EXPECT_NE(results[0].error.find(c.error), std::string::npos) << c.command << ": " << results[0].error;
  }
}

TEST(CommandRunner, AStopAfterAResultEndsTheList) {
  const TempDir dir("command_runner_stop");
  const json answer = answer_of({{{"id", "c0"}, {"times_s", {1e-6}}}, {{"id", "c1"}, {"times_s", {2e-6}}}});
  const auto results = command_runner(answering(dir, answer))->measure(kMatmul, {kSmall, kLarge},
                                                                       [](size_t, const Measurement&) { return false; });
  EXPECT_EQ(results.size(), 1u);
}

TEST(CommandRunner, OptionsAreChecked) {
  RunnerOptions options;
  EXPECT_NE(pto::testing::error_of([&] { make_runner("command", npu(), options); }).find("--measure-cmd"),
            std::string::npos);
  options.measure_command = "true";
  options.timeout_s = -1;
  EXPECT_NE(pto::testing::error_of([&] { make_runner("command", npu(), options); }).find("timeout"), std::string::npos);
  options.timeout_s = 1;
  EXPECT_NE(pto::testing::error_of([&] { make_runner("cpu", pto::testing::host(), options); }).find("not 'cpu'"),
            std::string::npos);
}

TEST(MeasureProtocol, ARequestReadsBackAsItsBatch) {
  ExternalBatch batch{kMatmul, {{"c0", kSmall}, {"c4", kLarge}}, 1, 7, true};
  const ProtocolRequest r = parse_protocol_request(protocol_request(batch, npu(), 30));
  EXPECT_EQ(r.batch.workload.key(), kMatmul.key());
  EXPECT_EQ(r.batch.repeats, 7);
  ASSERT_EQ(r.batch.candidates.size(), 2u);
  EXPECT_EQ(r.batch.candidates[1].id, "c4");
  EXPECT_EQ(r.batch.candidates[1].config, kLarge);
  EXPECT_EQ(r.target_fingerprint, npu().fingerprint());
}

TEST(MeasureProtocol, AStrictReadingRefusesWhatATolerantOneMarksFailed) {
  const json missing = answer_of({{{"id", "c0"}, {"times_s", {1e-6}}}});
  EXPECT_EQ(parse_protocol_answer(missing, {"c0", "c1"})[1].status, Status::RUNTIME_ERROR);
  EXPECT_NE(pto::testing::error_of([&] { parse_protocol_answer(missing, {"c0", "c1"}, AnswerReading::Strict); })
                .find("0 results for candidate c1"),
            std::string::npos);
  const json unreadable = answer_of({{{"id", "c0"}, {"times_s", {"fast"}}}});
  EXPECT_NE(pto::testing::error_of([&] { parse_protocol_answer(unreadable, {"c0"}, AnswerReading::Strict); })
                .find("answer.results[0] (candidate c0).times_s[0]"),
            std::string::npos);
}

}  // namespace
}  // namespace pto::measure
