// `pto-tune db` and `pto-tune lookup` as a user drives them: show, export, import,
// merge and check on real files; lookup along exact, nearest, model and default, with
// stale records marked; bad files reported with exit code 2 and left unchanged (lookup:
// a warning and the model's answer, exit 2 with --strict); a database in a folder the
// reader cannot write read by every read-only command.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/target.h"
#include "db/tuning_db.h"
#include "tests/cli/cli_driver.h"
#include "tests/db/records_testing.h"
#include "tests/temp_dir.h"

namespace pto {
namespace {

using nlohmann::json;
using namespace cli::testing;
using db::testing::file_bytes;
using search::TuningRecord;

const std::string kTiles = R"({"cube":{"m":[64,64],"k":[32,64],"n":[64,128]},"nbuffer":2})";

TuningRecord tuned(const std::string& key, double ns, const std::string& config = kTiles) {
  static const std::string fp = load_target("ascend910b1").fingerprint();
  return db::testing::make_record(key, config, ns, fp, "sim");
}

// A database holding a tuned matmul and a softmax from an older compiler.
std::string seeded_db(const testing::TempDir& dir, const std::string& name = "tune.db") {
  const std::string path = dir.str() + "/" + name;
  TuningRecord old = tuned("softmax|1024,1024|fp16", 500, R"({"vec":[8,1024]})");
  old.versions.compiler = "0.0.1";
  db::TuningDb::open(path)->commit(std::vector{tuned("matmul|256,256,256|fp16", 100), old});
  return path;
}

json lookup_json(const std::string& db, const std::string& shapes, const std::string& op = "matmul") {
  const Result r = pto_tune("lookup --target ascend910b1 --json --db " + quoted(db) + " --op " + op + " --shapes " + shapes);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

TEST(DbCli, LookupReportsEachSourceAndStaleness) {
  const testing::TempDir dir("cli_lookup");
  const std::string db = seeded_db(dir);
  const json exact = lookup_json(db, "256,256,256");
  EXPECT_EQ(exact["source"], "exact");
  EXPECT_EQ(exact["config"], TileConfig::parse(kTiles).to_json());
  EXPECT_NE(exact["pypto"][0].get<std::string>().find("pypto.set_cube_tile_shapes([64,64],[32,64],[64,128])"),
            std::string::npos);
  const json transfer = lookup_json(db, "256,256,300");
  EXPECT_EQ(transfer["source"], "transfer");
  EXPECT_EQ(transfer["from_shape"], json::parse("[256,256,256]"));
  const json stale = lookup_json(db, "1024,1024", "softmax");
  EXPECT_TRUE(stale["stale"].get<bool>());
  EXPECT_NE(stale["stale_reason"].get<std::string>().find("compiler 0.0.1"), std::string::npos);
  EXPECT_EQ(lookup_json(dir.str() + "/missing.db", "256,256,256")["source"], "model");
  EXPECT_FALSE(std::filesystem::exists(dir.str() + "/missing.db"));

  const Result text = pto_tune("lookup --op matmul --shapes 256,256,300 --target ascend910b1 --db " + quoted(db));
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("transfer 256,256,256 (the model's pick of 1 tuned neighbour's config and the default)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("pypto.set_cube_tile_shapes"), std::string::npos) << text.out;
}

// --explain: the candidates a transfer ranked (the default first, then the tuned
// neighbours), each priced for the wanted shape, the one served marked, and why; an
// exact hit says nothing was ranked; --explain does not go with --emit pypto.
TEST(DbCli, LookupExplainListsTheRankedCandidatesAndWhyTheWinnerWon) {
  const testing::TempDir dir("cli_lookup_explain");
  const std::string db = dir.str() + "/tune.db";
  db::TuningDb::open(db)->commit(std::vector{tuned("matmul|256,256,256|fp16", 100),
                                             tuned("matmul|256,256,1024|fp16", 100, R"({"cube":{"m":[16,16],"k":[16,32],"n":[16,16]}})")});
  const std::string args = "lookup --op matmul --shapes 256,256,300 --target ascend910b1 --explain --db " + quoted(db);
  const Result r = pto_tune(args + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& candidates = j["explain"]["candidates"];
  json as_tuned = json::array();  // the default and each neighbour's config as tuned (re-cut ones besides)
  for (const json& c : candidates)
    if (!c["recut"].get<bool>()) as_tuned.push_back(c);
  ASSERT_EQ(as_tuned.size(), 3u) << r.out;
  EXPECT_TRUE(as_tuned[0]["default"].get<bool>());
  EXPECT_EQ(as_tuned[1]["from_shape"], json::parse("[256,256,256]"));
  EXPECT_EQ(as_tuned[2]["from_shape"], json::parse("[256,256,1024]"));
  int served = 0;
  for (const json& c : candidates) {
    EXPECT_GT(c["predicted_ns"].get<double>(), 0);
    if (!c["served"].get<bool>()) continue;
    ++served;
    EXPECT_EQ(c["config"], j["config"]);
  }
  EXPECT_EQ(served, 1) << r.out;
  const double margin = j["explain"]["margin"].get<double>();
  const double fallback = candidates[0]["predicted_ns"].get<double>();
  EXPECT_EQ(j["source"], "transfer") << r.out;  // the first neighbour's tiles are far faster here than the default's
  EXPECT_GT(fallback, as_tuned[1]["predicted_ns"].get<double>() * (1 + margin));
  // Each neighbour's config has its own margin: the explanation's where it cuts this
  // shape as it cut its own, at least that elsewhere; the served one clears it.
  for (const json& c : candidates) {
    if (c["default"].get<bool>()) continue;
    const double own = c["margin"].get<double>();
    if (c["near"].get<bool>()) {
      EXPECT_EQ(own, margin) << c;
    } else {
      EXPECT_GE(own, margin) << c;
    }
    if (c["served"].get<bool>()) {
      EXPECT_GT(fallback / c["predicted_ns"].get<double>() - 1, own) << c;
    }
  }
  EXPECT_NE(j["reason"].get<std::string>().find("the default is predicted"), std::string::npos) << j["reason"];
  EXPECT_EQ(j["explain"]["winner"].get<std::string>().rfind("transfer 256,256,256", 0), 0u) << j["explain"]["winner"];

  const Result text = pto_tune(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* part : {"transfer candidates", "the op's default", "tuned 256,256,256", "tuned 256,256,1024", "served",
                           "winner: transfer 256,256,256"})
    EXPECT_NE(text.out.find(part), std::string::npos) << part << "\n" << text.out;
  const Result exact = pto_tune("lookup --op matmul --shapes 256,256,256 --target ascend910b1 --explain --db " + quoted(db));
  EXPECT_NE(exact.out.find("no transfer ranking took place (exact)"), std::string::npos) << exact.out;
  expect_usage_error(args + " --emit pypto", {"--explain", "--emit pypto"});
  // --transfer-margin is the lookup's margin: at 99 % the default is kept, and says why.
  const Result kept = pto_tune(args + " --json --transfer-margin 99%");
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_EQ(json::parse(kept.out)["source"], "default") << kept.out;
  EXPECT_NE(json::parse(kept.out)["reason"].get<std::string>().find("within the model's 99.0 % error margin"),
            std::string::npos)
      << kept.out;
  expect_usage_error(args + " --transfer-margin 2", {"--transfer-margin", "'2'"});
}

TEST(DbCli, ShowExportImportMergeCheck) {
  const testing::TempDir dir("cli_db");
  const std::string db = seeded_db(dir);
  const Result show = pto_tune("db show --json --db " + quoted(db));
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const json shown = json::parse(show.out);
  EXPECT_EQ(shown["measurements"], 2);
  ASSERT_EQ(shown["best"].size(), 2u);
  const Result table = pto_tune("db show --op matmul --db " + quoted(db));
  EXPECT_EQ(table.out.find("softmax"), std::string::npos) << table.out;
  EXPECT_NE(pto_tune("db show --db " + quoted(db)).out.find("stale: made by compiler 0.0.1"), std::string::npos);

  const std::string exported = dir.str() + "/configs.json";
  EXPECT_EQ(pto_tune("db export " + quoted(exported) + " --db " + quoted(db)).exit_code, 0);
  const std::string copy = dir.str() + "/copy.db";
  const Result imported = pto_tune("db import " + quoted(exported) + " --db " + quoted(copy));
  EXPECT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.out.find("imported 2"), std::string::npos) << imported.out;

  const std::string merged = dir.str() + "/merged.db";
  const Result merge = pto_tune("db merge " + quoted(db) + " " + quoted(copy) + " --into " + quoted(merged));
  EXPECT_EQ(merge.exit_code, 0) << merge.err;
  EXPECT_NE(merge.out.find("2 keys"), std::string::npos) << merge.out;
  const Result check = pto_tune("db check --db " + quoted(merged));
  EXPECT_EQ(check.exit_code, 0) << check.out;
  EXPECT_NE(check.out.find(": ok"), std::string::npos);
}

// db merge --workloads: a batch file's workloads alone (a line without a dtype takes
// its target's default, as batch tunes it); a bad file or a line naming neither a
// dtype nor a target is a usage error naming it, and nothing is written.
TEST(DbCli, MergeOfABatchFilesWorkloadsTakesTheirsAlone) {
  const testing::TempDir dir("cli_merge_some");
  const std::string db = seeded_db(dir);
  for (const std::string line : {"matmul 256,256,256 fp16", "matmul 256,256,256 target=ascend910b1"}) {
    const std::string out = dir.str() + "/only_" + std::to_string(line.size()) + ".db";
    const Result merge = pto_tune("db merge " + quoted(db) + " --workloads " + quoted(dir.write("b.txt", line + "\n")) +
                                  " --into " + quoted(out));
    ASSERT_EQ(merge.exit_code, 0) << merge.err;
    EXPECT_NE(merge.out.find("1 keys, 1 records added"), std::string::npos) << line << ": " << merge.out;
    const json shown = json::parse(pto_tune("db show --json --db " + quoted(out)).out);
    ASSERT_EQ(shown["best"].size(), 1u) << line;
    EXPECT_NE(shown["best"][0].dump().find("matmul|256,256,256|fp16"), std::string::npos) << shown.dump();
  }
  const std::string untouched = dir.str() + "/never.db";
  expect_usage_error("db merge " + quoted(db) + " --workloads " + quoted(dir.write("n.txt", "matmul 256,256,256\n")) +
                         " --into " + quoted(untouched),
                     {"n.txt", "line 1", "neither a dtype nor a target="});
  expect_usage_error("db merge " + quoted(db) + " --workloads " + quoted(dir.write("x.txt", "nosuchop 4,4 fp16\n")) +
                         " --into " + quoted(untouched),
                     {"x.txt", "line 1", "nosuchop"});
  expect_usage_error("db merge " + quoted(db) + " --workloads " + quoted(dir.str() + "/missing.txt") + " --into " +
                         quoted(untouched),
                     {"missing.txt"});
  EXPECT_FALSE(std::filesystem::exists(untouched));
}

TEST(DbCli, TheDatabaseComesFromTheEnvironmentWithoutDb) {
  const testing::TempDir dir("cli_env");
  const std::string db = seeded_db(dir);
  ::setenv("PTO_TUNE_DB", db.c_str(), 1);
  const Result set = pto_tune("db show --json");  // the child inherits PTO_TUNE_DB
  ::unsetenv("PTO_TUNE_DB");
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(json::parse(set.out)["db"], db);
}

TEST(DbCli, BadFilesExitTwoAndStayUnchanged) {
  const testing::TempDir dir("cli_bad");
  const std::string notes = dir.write("notes.db", "my notes\n");
  for (const std::string command : {"db show --db ", "db check --db ", "db import /dev/null --db ",
                                     "lookup --strict --op matmul --shapes 64,64,64 --db "}) {
    expect_usage_error(command + quoted(notes), {"notes.db", "not a SQLite database"});
  }
  expect_usage_error("db merge " + quoted(notes) + " --into " + quoted(dir.str() + "/out.db"), {"not a SQLite database"});
  EXPECT_EQ(file_bytes(notes), "my notes\n");
  EXPECT_FALSE(std::filesystem::exists(dir.str() + "/out.db"));
  expect_usage_error("db show --db " + quoted(dir.str() + "/none.db"), {"does not exist"});
  expect_usage_error("db frobnicate", {"frobnicate"});
  expect_usage_error("lookup --op matmul --shapes 64,64,64 --backend nosuch --db " + quoted(notes), {"'nosuch'", "known"});
  expect_usage_error("db export --db x.db", {"FILE.json"});
  expect_usage_error("db merge a.db", {"--into"});
}

// lookup on a database it cannot read answers as without one (the model's pick), warns
// naming the file and why, and exits 0, as the JIT must go on; --strict exits 2. The
// file is left byte for byte as it was.
TEST(DbCli, LookupOnADatabaseItCannotReadWarnsAndServesTheModelUnlessStrict) {
  const testing::TempDir dir("cli_lookup_bad");
  const std::string db = seeded_db(dir);
  db::testing::corrupt_schema_page(db);
  const std::string before = file_bytes(db);
  const std::string args = "lookup --op matmul --shapes 256,256,256 --target ascend910b1 --db " + quoted(db);
  const Result r = pto_tune(args + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["source"], "model");
  EXPECT_TRUE(r.err.starts_with("pto-tune: warning: tuning database '" + db + "'")) << r.err;
  EXPECT_NE(r.err.find("corrupt"), std::string::npos) << r.err;
  const Result module = pto_tune(args + " --emit pypto --dynamic M");
  EXPECT_EQ(module.exit_code, 0) << module.err;
  EXPECT_NE(module.out.find("def tiles_for"), std::string::npos) << module.out;
  expect_usage_error(args + " --strict", {db, "corrupt"});
  EXPECT_EQ(file_bytes(db), before);
}

// A deployed database: WAL mode, in a folder the reader may not write (root-owned,
// mode 555), where SQLite cannot create the -wal and -shm a WAL reader needs. Every
// command that only reads works, and nothing appears beside the file.
TEST(DbCli, ReadCommandsWorkOnADatabaseInAFolderTheyCannotWrite) {
  const testing::TempDir dir("cli_ro_folder");
  std::filesystem::create_directories(dir.path() / "deployed");
  const std::string db = seeded_db(dir, "deployed/tune.db");
  const std::string before = file_bytes(db);
  namespace fs = std::filesystem;
  fs::permissions(dir.path() / "deployed", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                               fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  for (const std::string& command :
       {"db show --db " + quoted(db), "db check --db " + quoted(db),
        "db export " + quoted(dir.str() + "/configs.json") + " --db " + quoted(db),
        "db merge " + quoted(db) + " --into " + quoted(dir.str() + "/merged.db"),
        "lookup --strict --op matmul --shapes 256,256,256 --target ascend910b1 --db " + quoted(db)}) {
    const Result r = pto_tune(command);
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.err;
  }
  EXPECT_EQ(lookup_json(db, "256,256,256")["source"], "exact");
  std::vector<std::string> beside;
  for (const auto& entry : fs::directory_iterator(dir.path() / "deployed")) beside.push_back(entry.path().filename());
  EXPECT_EQ(beside, std::vector<std::string>{"tune.db"});
  fs::permissions(dir.path() / "deployed", fs::perms::owner_all);
  EXPECT_EQ(file_bytes(db), before);
}

// Exporting onto the database itself (by its name or a link to it) would replace it
// with JSON; it is refused and the database keeps every record.
TEST(DbCli, AnExportOntoTheDatabaseIsRefused) {
  const testing::TempDir dir("cli_export_self");
  const std::string db = seeded_db(dir);
  const std::string before = file_bytes(db);
  std::filesystem::create_symlink(db, dir.path() / "alias.db");
  for (const std::string& target : {db, dir.str() + "/alias.db", dir.str() + "/./tune.db"})
    expect_usage_error("db export " + quoted(target) + " --db " + quoted(db), {"is the database itself"});
  EXPECT_EQ(file_bytes(db), before);
  const Result ok = pto_tune("db export /dev/null --db " + quoted(db));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null")) << "written through, not replaced";
}

// A --db that loops through symbolic links is bad input naming the file (exit 2), not
// a "filesystem error" (exit 1); lookup serves the model's pick with a warning.
TEST(DbCli, ADatabasePathThatLoopsIsExit2NamingIt) {
  const testing::TempDir dir("cli_db_loop");
  const std::string loop = dir.str() + "/loop.db";
  std::filesystem::create_symlink(loop, loop);
  for (const std::string command : {"db show --db ", "db check --db ", "db import /dev/null --db ",
                                     "lookup --strict --op matmul --shapes 64,64,64 --db ",
                                     "tune --op matmul --shapes 64,64,64 --backend model --budget 2 --db "})
    expect_usage_error(command + quoted(loop), {loop, "symbolic links"});
  const Result lookup = pto_tune("lookup --json --op matmul --shapes 64,64,64 --db " + quoted(loop));
  EXPECT_EQ(lookup.exit_code, 0) << lookup.err;
  EXPECT_NE(lookup.err.find("symbolic links"), std::string::npos) << lookup.err;
}

// JSON nested `depth` levels: one more than the reader takes.
std::string nested_json(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A sound file holding rows pto-tune would never write (another program's, or edited):
// an unparsable config, a garbage key, an unknown status, a config nested 65 deep, and
// a config that does not fit its target. Each costs its own record only: show, export,
// lookup, merge and report go on (exit 0) naming each skipped row; export and merge say
// how many; `db check` names each one and exits 2; lookup does not serve the one that
// does not fit.
TEST(DbCli, OneBadRowCostsItsOwnRecordOnlyAndCheckNamesEach) {
  const testing::TempDir dir("cli_bad_rows");
  const std::string db = seeded_db(dir);  // measurement rows 1 and 2: sound
  const std::string unparsable = R"({"cube":{"m":[32,32],"k":[32,64],"n":[64,64]}})";
  const std::string deep = R"({"cube":{"m":[16,16],"k":[32,64],"n":[64,64]}})";
  const std::string too_big = R"({"cube":{"m":[256,256],"k":[64,256],"n":[256,256]}})";
  db::TuningDb::open(db)->commit(std::vector{tuned("matmul|128,128,128|fp16", 90, unparsable),  // row 3
                                             tuned("matmul|64,64,64|fp16", 80),                 // row 4
                                             tuned("matmul|32,32,32|fp16", 70),                 // row 5
                                             tuned("matmul|48,48,48|fp16", 60, deep),           // row 6
                                             tuned("matmul|512,512,512|fp16", 50, too_big)});   // row 7
  auto canonical = [](const std::string& config) { return TileConfig::parse(config).to_string(); };
  db::testing::execute_sql(db, "UPDATE configs SET json = '{\"vec\":' WHERE json = '" + canonical(unparsable) + "';"
                               "UPDATE workloads SET key = 'garbage|x' WHERE key = 'matmul|64,64,64|fp16';"
                               "UPDATE measurements SET status = 'BOGUS' WHERE id = 5;"
                               "UPDATE configs SET json = '" + nested_json(65) + "' WHERE json = '" + canonical(deep) + "';");
  const std::vector<std::string> bad_rows = {"row 3", "row 4", "row 5", "row 6"};
  auto expect_rows_named = [&](const std::string& text) {
    for (const std::string& row : bad_rows) EXPECT_NE(text.find(row), std::string::npos) << row << " in " << text;
  };

  const Result show = pto_tune("db show --json --db " + quoted(db));
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(json::parse(show.out)["best"].size(), 3u);  // matmul 256 and 512, the stale softmax
  expect_rows_named(show.err);
  EXPECT_EQ(pto_tune("db show --db " + quoted(db)).exit_code, 0);

  const Result exported = pto_tune("db export " + quoted(dir.str() + "/out.json") + " --db " + quoted(db));
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("exported 3 records"), std::string::npos) << exported.out;
  EXPECT_NE(exported.out.find("4 unreadable rows skipped"), std::string::npos) << exported.out;
  expect_rows_named(exported.err);

  EXPECT_EQ(lookup_json(db, "256,256,256")["source"], "exact");
  EXPECT_NE(lookup_json(db, "128,128,128")["source"], "exact");
  const Result unfit = pto_tune("lookup --json --target ascend910b1 --op matmul --shapes 512,512,512 --db " + quoted(db));
  ASSERT_EQ(unfit.exit_code, 0) << unfit.err;
  EXPECT_NE(json::parse(unfit.out)["source"], "exact");
  EXPECT_NE(unfit.err.find("does not fit"), std::string::npos) << unfit.err;

  const Result merged = pto_tune("db merge " + quoted(db) + " --into " + quoted(dir.str() + "/merged.db"));
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_NE(merged.out.find("3 keys"), std::string::npos) << merged.out;
  EXPECT_NE(merged.out.find("unreadable rows skipped"), std::string::npos) << merged.out;

  const Result report = pto_tune("report --db " + quoted(db) + " --out " + quoted(dir.str() + "/report"));
  EXPECT_EQ(report.exit_code, 0) << report.err;
  expect_rows_named(report.err);

  const Result check = pto_tune("db check --db " + quoted(db));
  EXPECT_EQ(check.exit_code, 2) << check.out;
  expect_rows_named(check.out);
  for (const std::string part : {"row 7", "does not fit", "BOGUS", "garbage|x", "deeper than 64 levels"})
    EXPECT_NE(check.out.find(part), std::string::npos) << part << " in " << check.out;
  EXPECT_EQ(check.out.find("row 1:"), std::string::npos) << check.out;
  EXPECT_EQ(check.out.find("row 2:"), std::string::npos) << check.out;
}

// A trigger or view the schema does not create is another program's: `db check` names
// it, and nothing writes into the file (a trigger runs on our writes: this one would
// delete every stored row).
TEST(DbCli, AForeignTriggerOrViewIsACheckProblemAndTheFileIsNotWritten) {
  const testing::TempDir dir("cli_trigger");
  const std::string db = seeded_db(dir);
  const std::string exported = dir.str() + "/configs.json";
  ASSERT_EQ(pto_tune("db export " + quoted(exported) + " --db " + quoted(seeded_db(dir, "other.db"))).exit_code, 0);
  db::testing::execute_sql(db, "CREATE TRIGGER wipe AFTER INSERT ON measurements BEGIN DELETE FROM measurements; END;"
                               "CREATE VIEW peek AS SELECT * FROM targets;");
  const Result check = pto_tune("db check --db " + quoted(db));
  EXPECT_EQ(check.exit_code, 2) << check.out;
  EXPECT_NE(check.out.find("trigger 'wipe'"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("view 'peek'"), std::string::npos) << check.out;
  db::testing::execute_sql(db, "DELETE FROM measurements WHERE id = 2");  // the import would add it back
  expect_usage_error("db import " + quoted(exported) + " --db " + quoted(db), {db, "trigger 'wipe'"});
  EXPECT_EQ(db::TuningDb::open(db, db::OpenMode::ReadOnly)->records().size(), 1u);
}

// --op of the listing commands names an op the library knows: an unknown one is a usage
// error naming it (as tune's --op is), not "exported 0 records" with exit 0.
TEST(DbCli, AnUnknownOpToListIsAUsageErrorNamingIt) {
  const testing::TempDir dir("cli_unknown_op");
  const std::string db = seeded_db(dir);
  const std::string out = dir.str() + "/configs.json";
  for (const std::string& command : std::vector<std::string>{
           "db export " + quoted(out) + " --op nosuchop --db ", "db show --op nosuchop --db ",
           "report --op nosuchop --out " + quoted(dir.str() + "/report") + " --db "}) {
    expect_usage_error(command + quoted(db), {"unknown op 'nosuchop'", "matmul"});
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(dir.str() + "/report"));
  const Result known = pto_tune("db export " + quoted(out) + " --op matmul --db " + quoted(db));
  EXPECT_EQ(known.exit_code, 0) << known.err;
  EXPECT_NE(known.out.find("exported 1 records"), std::string::npos) << known.out;
}

// A database whose table or column was dropped after pto-tune wrote it is a Db error
// (exit 2) naming the file and what is missing, not an I/O error quoting the SQL that
// failed; the file stays as it was, and lookup serves the model with that warning.
TEST(DbCli, ADatabaseMissingATableIsADbErrorNamingIt) {
  const testing::TempDir dir("cli_missing_table");
  const std::string db = seeded_db(dir);
  db::testing::execute_sql(db, "DROP TABLE measurements");
  const std::string before = file_bytes(db);
  const std::string out = quoted(dir.str() + "/out.json");
  for (const std::string& command : std::vector<std::string>{
           "db show --db ", "db check --db ", "db export " + out + " --db ", "db import " + out + " --db ",
           "lookup --strict --op matmul --shapes 64,64,64 --db ",
           "tune --backend model --budget 2 --op matmul --shapes 64,64,64 --db "}) {
    const Result r = pto_tune(command + quoted(db));
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.err;
    for (const std::string& part : std::vector<std::string>{db, "table 'measurements' is missing"})
      EXPECT_NE(r.err.find(part), std::string::npos) << command << ": " << r.err;
    EXPECT_EQ(r.err.find("SELECT"), std::string::npos) << command << ": " << r.err;
  }
  expect_usage_error("db merge " + quoted(db) + " --into " + quoted(dir.str() + "/merged.db"), {"measurements"});
  const Result lookup = pto_tune("lookup --op matmul --shapes 64,64,64 --db " + quoted(db));
  EXPECT_EQ(lookup.exit_code, 0) << lookup.err;
  EXPECT_NE(lookup.err.find("table 'measurements' is missing"), std::string::npos) << lookup.err;
  EXPECT_EQ(file_bytes(db), before);

  const std::string dropped_column = seeded_db(dir, "column.db");
  db::testing::execute_sql(dropped_column, "ALTER TABLE targets DROP COLUMN json");
  expect_usage_error("db show --db " + quoted(dropped_column), {"table 'targets' lacks column 'json'"});
}

// A row whose text is not UTF-8 (another program's) could not be written as JSON: show
// --json and export failed with the JSON library's exception (exit 1) while check said
// ok. Now it is a bad row like any other: skipped with a warning, named by check.
TEST(DbCli, ARowWhoseTextIsNotUtf8IsSkippedAndNamedByCheck) {
  const testing::TempDir dir("cli_not_utf8");
  const std::string db = seeded_db(dir);
  db::testing::execute_sql(db, "UPDATE measurements SET host = CAST(x'ff41' AS TEXT) WHERE id = 1");
  const Result show = pto_tune("db show --json --db " + quoted(db));
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(json::parse(show.out)["best"].size(), 1u);  // the softmax
  EXPECT_NE(show.err.find("row 1"), std::string::npos) << show.err;
  const Result exported = pto_tune("db export " + quoted(dir.str() + "/out.json") + " --db " + quoted(db));
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.out.find("1 unreadable rows skipped"), std::string::npos) << exported.out;
  const Result check = pto_tune("db check --db " + quoted(db));
  EXPECT_EQ(check.exit_code, 2) << check.out;
  EXPECT_NE(check.out.find("row 1: tuning record measurement.host is not valid UTF-8"), std::string::npos) << check.out;
}

// A schema_version of 0 (or text, or negative) beside the tables made every write try to
// migrate the file again: exit 1 with "table schema_version already exists" and the SQL
// (found by scripts/probe_hostile.py). It is a damaged file: Db error, left unchanged. A
// second version row is a check problem.
TEST(DbCli, ADamagedSchemaVersionIsADbErrorAndTheFileIsLeftAlone) {
  const testing::TempDir dir("cli_schema_version");
  for (const std::string value : {"0", "'one'", "-1"}) {
    const std::string db = seeded_db(dir, "v" + std::to_string(value.size()) + ".db");
    db::testing::execute_sql(db, "UPDATE schema_version SET version = " + value);
    const std::string before = file_bytes(db);
    for (const std::string command : {"tune --backend model --budget 2 --op matmul --shapes 64,64,64 --db ", "db show --db "})
      expect_usage_error(command + quoted(db), {db, "is damaged: its schema_version holds"});
    EXPECT_EQ(file_bytes(db), before) << value;
  }
  const std::string two = seeded_db(dir, "two.db");
  db::testing::execute_sql(two, "INSERT INTO schema_version VALUES (1)");
  const Result check = pto_tune("db check --db " + quoted(two));
  EXPECT_EQ(check.exit_code, 2) << check.out;
  EXPECT_NE(check.out.find("'schema_version' has 2 rows"), std::string::npos) << check.out;
}

// A rollback journal left beside the file is "hot": a read-only open cannot roll it back.
// The read commands said "SELECT name FROM sqlite_master ...: attempt to write a readonly
// database" (found by scripts/probe_hostile.py); now they name the journal and what to
// do, and a command that writes rolls it back, after which reads work again.
// A rollback journal left beside the file: a reader that may write the file rolls it
// back as it reads (as SQLite does for a writer); one that may not names it.
TEST(DbCli, AHotJournalIsRolledBackByAReaderThatMayWriteAndNamedToOneThatMayNot) {
  namespace fs = std::filesystem;
  const testing::TempDir dir("cli_hot_journal_read");
  const std::string db = seeded_db(dir);
  const size_t seeded = json::parse(pto_tune("db show --json --db " + quoted(db)).out)["best"].size();
  ASSERT_GT(seeded, 0u);
  dir.write("tune.db-journal", std::string(4000, 'j'));
  fs::permissions(db, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove);
  expect_usage_error("db show --db " + quoted(db), {db + "-journal", "hot journal", "writes to it"});
  EXPECT_TRUE(fs::exists(db + "-journal"));
  fs::permissions(db, fs::perms::owner_write, fs::perm_options::add);
  const Result show = pto_tune("db show --json --db " + quoted(db));
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(json::parse(show.out)["best"].size(), seeded);
  EXPECT_FALSE(fs::exists(db + "-journal"));
  const Result lookup = pto_tune("lookup --op matmul --shapes 32,32,32 --target ascend910b1 --backend model --db " + quoted(db));
  EXPECT_EQ(lookup.exit_code, 0) << lookup.err;
}

TEST(DbCli, AHotJournalIsNamedAndAWriterRollsItBack) {
  namespace fs = std::filesystem;
  const testing::TempDir dir("cli_hot_journal");
  const std::string db = seeded_db(dir);
  dir.write("tune.db-journal", std::string(4000, 'j'));
  fs::permissions(db, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove);
  expect_usage_error("db show --db " + quoted(db), {db + "-journal", "hot journal", "writes to it"});
  fs::permissions(db, fs::perms::owner_write, fs::perm_options::add);
  const Result tune = pto_tune("tune --target ascend910b1 --backend model --budget 2 --op matmul --shapes 32,32,32 --db " + quoted(db));
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  const Result show = pto_tune("db show --json --db " + quoted(db));
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(json::parse(show.out)["best"].size(), 3u);
}

TEST(DbCli, EverySubcommandHasHelpWithAnExample) {
  for (const std::string sub : {"show", "export", "import", "merge", "check"}) {
    const Result r = pto_tune("db " + sub + " --help");
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("Example:\n  pto-tune db " + sub), std::string::npos) << r.out;
  }
  const Result lookup = pto_tune("lookup --help");
  EXPECT_NE(lookup.out.find("Example:\n  pto-tune lookup"), std::string::npos) << lookup.out;
}

}  // namespace
}  // namespace pto
