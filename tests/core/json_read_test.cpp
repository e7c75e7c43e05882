// Outside JSON is bounded before anything walks it: nesting depth at parse time (a
// 60,000-level value used to overflow the stack in the error-message helper), file
// size when read (/dev/zero used to be read whole), and messages serialise only what
// they show. Duplicate keys are accepted with a warning. Bad paths are usage errors.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/json_read.h"
#include "core/target.h"
#include "core/tile_config.h"
#include "core/warning.h"
#include "tests/core/error_testing.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using testing::expect_error;
using testing::TempDir;

// `depth` nested containers, objects and arrays mixed at random, around `leaf`.
std::string nested(int depth, std::mt19937& rng, const std::string& leaf = "1") {
  std::string open, close;
  for (int i = 0; i < depth; ++i) {
    if (rng() % 2) {
      open += "{\"k\":";
      close += "}";
    } else {
      open += "[";
      close += "]";
    }
  }
  return open + leaf + std::string(close.rbegin(), close.rend());
}

// Collects warnings for the life of the object.
struct WarningLog {
  std::vector<std::string> messages;
  WarningSink previous;
  WarningLog() : previous(set_warning_sink([this](const std::string& m) { messages.push_back(m); })) {}
  ~WarningLog() { set_warning_sink(previous); }
};

TEST(JsonRead, NestingIsAcceptedUpToTheLimitAndRejectedPastIt) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int depth = std::uniform_int_distribution<int>(1, 2 * json_read::kMaxDepth)(rng);
    const std::string text = nested(depth, rng);
    if (depth <= json_read::kMaxDepth) {
      EXPECT_NO_THROW(json_read::parse(text, "doc")) << depth;
    } else {
      expect_error([&] { json_read::parse(text, "doc"); }, ErrorCategory::Usage,
                   {"doc", "nested deeper than 64 levels"}, std::to_string(depth));
    }
  }
}

TEST(JsonRead, SixtyThousandLevelsAreAUsageErrorInEveryParserOfOutsideInput) {
  std::mt19937 rng(1);
  const std::string deep = nested(60000, rng);
  expect_error([&] { TileConfig::parse(deep); }, ErrorCategory::Usage, {"config", "nested deeper"});
  expect_error([&] { TileConfig::parse("{\"vec\":" + deep + "}"); }, ErrorCategory::Usage, {"nested deeper"});
  TempDir dir("json_deep");
  const std::string file = dir.write("deep.json", deep);
  expect_error([&] { TileConfig::parse_arg("@" + file); }, ErrorCategory::Usage, {file, "nested deeper"});
  expect_error([&] { load_target(file); }, ErrorCategory::Usage, {"target file", "nested deeper"});
}

TEST(JsonRead, ShowIsShortForAnyValueAndSerialisesOnlyWhatItShows) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 100; ++trial) {
    const json value = json_read::parse(nested(std::uniform_int_distribution<int>(1, 64)(rng), rng), "doc");
    const std::string shown = json_read::show(value);
    EXPECT_LE(shown.size(), 60u) << shown;
    EXPECT_FALSE(shown.empty());
  }
  // A huge array and a huge string: shown cut short.
  const json big_array(std::vector<int>(1'000'000, 12345));
  EXPECT_EQ(json_read::show(big_array).size(), 60u);
  EXPECT_TRUE(json_read::show(big_array).ends_with("..."));
  const json big_string(std::string(1'000'000, 'x'));
  EXPECT_EQ(json_read::show(big_string).size(), 60u);
  // Short values are shown exactly as JSON writes them.
  for (const char* text : {R"([1,2,3])", R"({"a":[true,null]})", R"("x")", "-3", "2.5"}) {
    EXPECT_EQ(json_read::show(json::parse(text)), json::parse(text).dump()) << text;
  }
  // The error message of a bad value at the depth limit stays one short line.
  const std::string at_limit = nested(json_read::kMaxDepth - 1, rng);
  expect_error([&] { TileConfig::parse("{\"nbuffer\":" + at_limit + "}"); }, ErrorCategory::Usage,
               {"nbuffer: expected an integer from 1 to 4"});
}

TEST(JsonRead, DuplicateKeysWarnAndTheLastOneWins) {
  WarningLog log;
  const TileConfig c = TileConfig::parse(R"({"nbuffer":1,"nbuffer":2})");
  EXPECT_EQ(c.nbuffer, 2);
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_NE(log.messages[0].find("\"nbuffer\" is given more than once"), std::string::npos) << log.messages[0];
  // The same key in different objects is no duplicate.
  log.messages.clear();
  TileConfig::parse(R"({"cube":{"m":[16,16],"k":[16,16],"n":[16,16]},"vec":[1]})");
  json_read::parse(R"([{"m":1},{"m":2}])", "doc");
  EXPECT_TRUE(log.messages.empty());
  // Nested objects each keep their own keys.
  json_read::parse(R"({"a":{"m":1,"m":2},"m":3})", "doc");
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_NE(log.messages[0].find("\"m\""), std::string::npos);
}

TEST(JsonRead, FilesThatAreMissingAFolderEmptyOrTooLargeAreUsageErrors) {
  TempDir dir("json_files");
  expect_error([&] { json_read::read_text_file(dir.str() + "/missing.json", "config file"); },
               ErrorCategory::Usage, {"config file", "missing.json", "no such file"});
  expect_error([&] { json_read::read_text_file(dir.str(), "config file"); }, ErrorCategory::Usage,
               {"it is a folder"});
  const std::string empty = dir.write("empty.json", "");
  expect_error([&] { json_read::read_text_file(empty, "target file"); }, ErrorCategory::Usage, {"is empty"});
  const std::string at_cap = dir.write("cap.json", std::string(json_read::kMaxFileBytes, ' '));
  EXPECT_EQ(json_read::read_text_file(at_cap, "config file").size(), json_read::kMaxFileBytes);
  const std::string past_cap = dir.write("big.json", std::string(json_read::kMaxFileBytes + 1, ' '));
  expect_error([&] { json_read::read_text_file(past_cap, "config file"); }, ErrorCategory::Usage,
               {"larger than 4 MiB"});
  if (std::filesystem::exists("/dev/zero")) {
    expect_error([] { TileConfig::parse_arg("@/dev/zero"); }, ErrorCategory::Usage, {"/dev/zero", "larger than 4 MiB"});
    expect_error([] { load_target("/dev/zero"); }, ErrorCategory::Usage, {"/dev/zero", "larger than 4 MiB"});
  }
  expect_error([&] { load_target(dir.str()); }, ErrorCategory::Usage, {"it is a folder"});
  expect_error([&] { load_target(empty); }, ErrorCategory::Usage, {"is empty"});
}

// A FIFO nobody writes made every reader of a named file (batch, target, config, import
// files) wait forever in open(2) (found by scripts/probe_hostile.py: `batch FIFO` hung):
// now it is an empty file. A pipe that has a writer (`batch <(generate)`, /dev/stdin) is
// read whole. The read runs in a child under an alarm, so the test fails, not hangs.
TEST(JsonRead, AFifoNobodyWritesIsEmptyNotAHang) {
  TempDir dir("json_fifo");
  const std::string fifo = dir.str() + "/list";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(10);
    try {
      json_read::read_text_file(fifo, "batch file");
    } catch (const Error& e) {
      ::_exit(std::string(e.what()).find("is empty") != std::string::npos ? 0 : 1);
    }
    ::_exit(2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << " (14: SIGALRM, it hung)";

  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  ASSERT_EQ(::write(ends[1], "softmax 32,64\n", 14), 14);
  ::close(ends[1]);
  EXPECT_EQ(json_read::read_text_file("/proc/self/fd/" + std::to_string(ends[0]), "batch file"), "softmax 32,64\n");
  ::close(ends[0]);
}

}  // namespace
}  // namespace pto
