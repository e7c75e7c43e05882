// Every `pto-tune ...` command line in README.md works as written: the test extracts
// them from the code blocks (joining '\' continuations, dropping '# comments') and
// runs each, expecting exit code 0.
//
// Each subcommand the README may show has an explicit rule below: run as written,
// run with a smaller budget (the figures may differ, the command must work), or skip
// with a reason. A README example whose subcommand has no rule fails the test, so a
// new example needs a decision here, not silence. Every command runs with PTO_TUNE_HOME,
// PTO_TUNE_DB and HOME in a temporary folder: nothing the user has is read or changed.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cli/cli_driver.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using testing::TempDir;

// How this test runs the README's examples of one subcommand.
struct Rule {
  // Options set to these values (replacing the README's own, else appended): a fast
  // budget for commands whose full run takes minutes.
  std::vector<std::pair<std::string, std::string>> overrides;
  std::string skip_reason;  // non-empty: not run, listed with this reason
  std::string setup;        // a shell command run first, in the examples' folder
};

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> all = {
      {"ops", {}},
      {"targets", {}},
      {"compile", {}},
      {"explain", {}},
      {"run", {}},
      {"calibrate", {{{"--samples", "12"}}, ""}},
      // The tuner (pto-tune tune, and its one-line form pto-tune --op ...): a budget of
      // a few candidates into the temporary database; lookup and db read that database.
      {"tune", {{{"--budget", "4"}}, ""}},
      {"--op", {{{"--budget", "4"}}, ""}},
      {"lookup", {}},
      // The README's batch file is described in comments; a small one stands in for it.
      {"batch", {{{"--budget", "4"}}, "", "printf 'matmul 64,64,64 fp16\\nsoftmax 16..48:step16,128\\n' > release.txt"}},
      // The shards the README's merge names are copies of the database the tune
      // examples filled; the mstuner CSV its import names is one row of CATLASS's README.
      {"db", {{}, "", "cp -f tune.db shard-0.db && cp -f tune.db shard-1.db && "
                      "printf 'case_id,task_duration(us),device_id,operation,description,m,n,k\\n"
                      "489,12.74,7,Gemm,catlass_gemm_basic_matmul_64x128x128_64x128x64_swizzle3x1,256,512,1024\\n' "
                      "> results.csv"}},
      // The report of the database the tune examples filled.
      {"report", {}},
  };
  return all;
}

// Examples for hardware this machine lacks, by a phrase they hold: listed, not run.
const std::vector<std::pair<std::string, std::string>> kNeedsHardware = {
    {"--backend npu", "needs an Ascend NPU with PyPTO and torch_npu; tests/cli/npu_bridge_test.cpp runs its runner "
                      "on stand-ins"}};

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") + 1 - begin);
}

// The line without a trailing "# comment" (a '#' outside single quotes, after a space).
std::string strip_comment(const std::string& line) {
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\'') quoted = !quoted;
    if (line[i] == '#' && !quoted && (i == 0 || line[i - 1] == ' ')) return trim(line.substr(0, i));
  }
  return trim(line);
}

// The command lines of the README's code blocks (fenced or indented) that start with
// "pto-tune ", continuations joined.
std::vector<std::string> readme_commands(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> commands;
  bool fenced = false;
  std::string pending;
  for (std::string line; std::getline(in, line);) {
    if (trim(line).starts_with("```")) {
      fenced = !fenced;
      continue;
    }
    const bool code = fenced || line.starts_with("    ");
    if (!pending.empty()) {  // a continuation of the previous line
      pending += " " + strip_comment(line);
    } else if (code && trim(line).starts_with("pto-tune ")) {
      pending = strip_comment(line);
    } else {
      continue;
    }
    if (!pending.empty() && pending.back() == '\\') {
      pending.pop_back();
      pending = trim(pending);
      continue;
    }
    commands.push_back(pending);
    pending.clear();
  }
  return commands;
}

std::vector<std::string> words(const std::string& command) {
  std::istringstream in(command);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// `command` with each override's option set to its value: "--budget 24" becomes
// "--budget 4"; an option the command lacks is appended. (Options are plain words in
// the README's examples; quoted JSON never holds one.)
std::string with_overrides(const std::string& command, const Rule& rule) {
  std::string out = command;
  for (const auto& [option, value] : rule.overrides) {
    const size_t at = out.find(" " + option + " ");
    if (at == std::string::npos) {
      out += " " + option + " " + value;
      continue;
    }
    const size_t value_begin = at + option.size() + 2;
    const size_t value_end = out.find(' ', value_begin);
    out.replace(value_begin, value_end == std::string::npos ? std::string::npos : value_end - value_begin, value);
  }
  return out;
}

TEST(ReadmeExamples, EveryPtoTuneCommandInTheReadmeWorks) {
  const std::vector<std::string> commands = readme_commands(std::string(PTO_SOURCE_DIR) + "/README.md");
  ASSERT_GE(commands.size(), 5u) << "README.md lost its examples, or this test cannot find them";
  TempDir home("readme_examples");
  const std::string env = "PTO_TUNE_HOME=" + home.str() + " PTO_TUNE_DB=" + home.str() + "/tune.db HOME=" +
                          home.str() + " ";
  std::vector<std::string> skipped;
  int ran = 0;
  for (const std::string& command : commands) {
    const std::vector<std::string> w = words(command);
    ASSERT_GE(w.size(), 2u) << command;
    const auto rule = rules().find(w[1]);
    ASSERT_NE(rule, rules().end()) << "README example '" << command << "': subcommand '" << w[1]
                                   << "' has no rule in tests/cli/readme_examples_test.cpp; add one";
    if (!rule->second.skip_reason.empty()) {
      skipped.push_back(command + "  -- " + rule->second.skip_reason);
      continue;
    }
    const auto hardware = std::find_if(kNeedsHardware.begin(), kNeedsHardware.end(),
                                       [&](const auto& need) { return command.find(need.first) != std::string::npos; });
    if (hardware != kNeedsHardware.end()) {
      skipped.push_back(command + "  -- " + hardware->second);
      continue;
    }
    const std::string args = with_overrides(command, rule->second).substr(std::string("pto-tune ").size());
    // Every example runs in the temporary folder, where the files it names are made.
    const std::string setup = rule->second.setup.empty() ? "" : rule->second.setup + " && ";
    const std::string line = "cd " + home.str() + " && " + setup + env + PTO_TUNE_BIN + " " + args +
                             " > /dev/null 2> " + home.str() + "/err";
    const int status = std::system(line.c_str());
    std::ifstream err(home.str() + "/err");
    const std::string message{std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>()};
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "README example failed: " << command << "\n(run as: pto-tune " << args << ")\n" << message;
    ++ran;
  }
  std::cout << "README examples: " << ran << " run, " << skipped.size() << " skipped\n";
  for (const std::string& s : skipped) std::cout << "  skipped: " << s << "\n";
  EXPECT_GT(ran, 0);
}

// The extraction itself, on a README of known content.
TEST(ReadmeExamples, ExtractionJoinsContinuationsAndDropsComments) {
  TempDir dir("readme_extract");
  const std::string path = dir.write("README.md",
                                     "text pto-tune ops in prose\n"
                                     "```\n"
                                     "pto-tune ops                  # the operators\n"
                                     "pto-tune compile --op add \\\n"
                                     "    --config '{\"vec\":[1,2]}' --emit tile   # stage\n"
                                     "```\n"
                                     "    pto-tune targets --json\n"
                                     "    scripts/run.sh\n");
  const std::vector<std::string> commands = readme_commands(path);
  ASSERT_EQ(commands.size(), 3u);
  EXPECT_EQ(commands[0], "pto-tune ops");
  EXPECT_EQ(commands[1], "pto-tune compile --op add --config '{\"vec\":[1,2]}' --emit tile");
  EXPECT_EQ(commands[2], "pto-tune targets --json");
  Rule budget{{{"--budget", "4"}}, ""};
  EXPECT_EQ(with_overrides("pto-tune tune --budget 24 --json", budget), "pto-tune tune --budget 4 --json");
  EXPECT_EQ(with_overrides("pto-tune tune --op add", budget), "pto-tune tune --op add --budget 4");
  EXPECT_EQ(with_overrides("pto-tune tune --budget 24", budget), "pto-tune tune --budget 4");
}

}  // namespace
}  // namespace pto
