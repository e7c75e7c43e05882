// TuningDb: the store against a brute-force reference (failures never best), the
// schema version and its migrations, concurrent writers in two processes, many
// processes creating, writing and reading a new database at once, a writer killed
// mid-transaction, bad files reported and left byte-identical, a WAL database read
// from a folder its reader cannot write, export/import
// and merge (best per key, idempotent, order-independent, fresh before stale); and the
// one ranking of records: best(), top_k(), best_records(), the lookup's best_configs(),
// merge and batch resume's is_tuned() agree on random databases with stale records, and
// a stale record never beats a fresh one nor counts as tuned, however fast.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_read.h"
#include "db/config_lookup.h"
#include "db/schema.h"
#include "db/sqlite.h"
#include "db/tuning_db.h"
#include "tests/core/error_testing.h"
#include "tests/db/records_testing.h"
#include "tests/temp_dir.h"

namespace pto::db {
namespace {

namespace fs = std::filesystem;
using testing::file_bytes;
using testing::make_record;
using testing::random_records;
using search::RecordKey;
using search::TuningRecord;
using pto::testing::expect_error;
using pto::testing::TempDir;

std::vector<std::string> as_json(const std::vector<TuningRecord>& records) {
  std::vector<std::string> out;
  for (const TuningRecord& r : records) out.push_back(r.to_json().dump());
  return out;
}

std::vector<std::string> sorted_json(const std::vector<TuningRecord>& records) {
  std::vector<std::string> out = as_json(records);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<RecordKey> keys_of(const std::vector<TuningRecord>& records) {
  std::vector<RecordKey> keys;
  for (const TuningRecord& r : records) keys.push_back(r.key());
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

TEST(TuningDb, BestAndTopKAgreeWithBruteForce) {
  const TempDir dir("db_store");
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::mt19937_64 rng(seed);
    const std::string path = dir.str() + "/s" + std::to_string(seed) + ".db";
    auto db = TuningDb::open(path);
    std::vector<TuningRecord> all;
    for (int batch = 0; batch < 6; ++batch) {
      std::vector<TuningRecord> records = random_records(rng, 1 + rng() % 15, 1000 * batch + 1);
      db->commit(records);
      all.insert(all.end(), records.begin(), records.end());
    }
    EXPECT_EQ(db->records().size(), all.size());
    for (const RecordKey& key : keys_of(all)) {
      for (size_t k : {1u, 3u, 100u}) {
        const std::vector<TuningRecord> got = db->top_k(key, k);
        const std::vector<TuningRecord> want = testing::brute_force_top_k(all, key, k);
        ASSERT_EQ(got.size(), want.size()) << key.workload << " k=" << k;
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_TRUE(got[i].usable());
          EXPECT_EQ(got[i].time_ns(), want[i].time_ns());
          EXPECT_EQ(got[i].config, want[i].config);
        }
      }
      const std::optional<TuningRecord> best = db->best(key);
      const auto want = testing::brute_force_top_k(all, key, 1);
      EXPECT_EQ(best.has_value(), !want.empty());
      if (best) {
        EXPECT_TRUE(best->usable());
      }
    }
  }
}

TEST(TuningDb, FailuresAreStoredButNeverBest) {
  const TempDir dir("db_fail");
  auto db = TuningDb::open(dir.str() + "/t.db");
  TuningRecord fast_but_failed = make_record("matmul|256,256,256|fp16", R"({"vec":[8,128]})", 1);
  fast_but_failed.measurement.status = measure::Status::WRONG_RESULT;
  fast_but_failed.measurement.error = "max error 3.5";
  TuningRecord zero_time = make_record("matmul|256,256,256|fp16", R"({"vec":[16,128]})", 0);
  const TuningRecord slow = make_record("matmul|256,256,256|fp16", R"({"vec":[32,128]})", 900);
  db->commit(std::vector{fast_but_failed, zero_time, slow});
  const std::vector<TuningRecord> all = db->records();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].measurement.status, measure::Status::WRONG_RESULT);
  EXPECT_EQ(all[0].measurement.error, "max error 3.5");
  EXPECT_EQ(db->best(slow.key())->config, slow.config);
  EXPECT_EQ(db->top_k(slow.key(), 10).size(), 1u);
}

TEST(TuningDb, RecordsRoundTripEveryFieldAndFilterByOp) {
  const TempDir dir("db_fields");
  auto db = TuningDb::open(dir.str() + "/t.db");
  TuningRecord r = make_record("matmul|64,128,256|fp16|transpose_b=1", R"({"cube":{"m":[16,16],"k":[16,32],"n":[16,16]}})", 123.5);
  r.measurement.simulated = true;
  r.measurement.verified = true;
  r.measurement.max_abs_err = 0.25;
  r.measurement.detail_json = R"({"bound":"cube"})";
  r.measurement.timestamp = 1700000000;
  r.versions = {"0.0.9", "0.1.0"};
  const TuningRecord other = make_record("softmax|64,128|fp16", R"({"vec":[8,128]})", 50);
  db->commit(std::vector{r, other});
  const std::vector<TuningRecord> matmuls = db->records("matmul");
  ASSERT_EQ(matmuls.size(), 1u);
  EXPECT_EQ(matmuls[0].to_json(), r.to_json());
  EXPECT_EQ(db->records("softmax").size(), 1u);
  EXPECT_EQ(db->records().size(), 2u);
  EXPECT_TRUE(db->records("gelu").empty());
}

TEST(TuningDb, AnIdenticalRecordIsStoredOnce) {
  const TempDir dir("db_ident");
  auto db = TuningDb::open(dir.str() + "/t.db");
  const TuningRecord r = make_record("softmax|64,128|fp16", R"({"vec":[8,128]})", 50);
  db->commit(std::vector{r, r});
  db->commit(std::vector{r});
  EXPECT_EQ(db->records().size(), 1u);
}

TEST(TuningDb, RemembersWhatATargetFingerprintStoodFor) {
  const TempDir dir("db_target");
  const std::string path = dir.str() + "/t.db";
  const Target target = load_target("ascend910b1");
  {
    auto db = TuningDb::open(path);
    db->commit(std::vector{make_record("softmax|64,128|fp16", R"({"vec":[8,128]})", 50, target.fingerprint())});
    db->remember_target(target);
    db->remember_target(target);  // again: still one row
  }
  Connection c(path, Connection::Mode::ReadOnly);
  Statement s = c.prepare("SELECT name, json FROM targets");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.text(0), "ascend910b1");
  EXPECT_EQ(Target::from_json(nlohmann::json::parse(s.text(1))).fingerprint(), target.fingerprint());
  EXPECT_FALSE(s.step());
}

TEST(TuningDb, SchemaVersionAndMigrations) {
  const TempDir dir("db_schema");
  const std::string path = dir.str() + "/t.db";
  TuningDb::open(path)->commit(std::vector{make_record("softmax|64,128|fp16", R"({"vec":[8,128]})", 50)});
  {
    Connection c(path, Connection::Mode::ReadWrite);
    EXPECT_EQ(schema_version(c), current_schema_version());
    EXPECT_TRUE(schema_problems(c).empty());
    // A made-up next version on top of the real steps: applied once, and again a no-op.
    std::vector<Migration> steps(migrations().begin(), migrations().end());
    steps.push_back({current_schema_version(), "ALTER TABLE measurements ADD COLUMN energy_j REAL NOT NULL DEFAULT 0"});
    migrate(c, steps);
    migrate(c, steps);
    EXPECT_EQ(schema_version(c, current_schema_version() + 1), current_schema_version() + 1);
    EXPECT_EQ(c.prepare("SELECT COUNT(*) FROM measurements WHERE energy_j = 0").step(), true);
  }
  // This build does not know that version: the file is reported and left as it is.
  const std::string before = file_bytes(path);
  const std::string next = "schema version " + std::to_string(current_schema_version() + 1);
  expect_error([&] { TuningDb::open(path); }, ErrorCategory::Db, {path, next, "newer"});
  expect_error([&] { TuningDb::open(path, OpenMode::ReadOnly); }, ErrorCategory::Db, {"newer"});
  EXPECT_EQ(file_bytes(path), before);
}

TEST(TuningDb, AnEmptyFileMigratesFromVersionZero) {
  const TempDir dir("db_v0");
  const std::string path = dir.write("empty.db", "");
  {
    Connection c(path, Connection::Mode::ReadOnly);
    EXPECT_EQ(schema_version(c), 0);
  }
  auto db = TuningDb::open(path);
  EXPECT_TRUE(db->check().empty());
}

TEST(TuningDb, TwoProcessesWritingAtOnceLoseNothing) {
  const TempDir dir("db_procs");
  const std::string path = dir.str() + "/t.db";
  TuningDb::open(path);  // created before the writers race to create it
  constexpr int kBatches = 40, kPerBatch = 5;
  std::vector<pid_t> children;
  for (int child = 0; child < 2; ++child) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = 0;
      try {
        auto db = TuningDb::open(path);
        std::mt19937_64 rng(child);
        for (int b = 0; b < kBatches; ++b)
          db->commit(random_records(rng, kPerBatch, (child + 1) * 1000000 + b * kPerBatch));
      } catch (...) {
        code = 1;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto db = TuningDb::open(path);
  EXPECT_EQ(db->records().size(), size_t{2 * kBatches * kPerBatch});
  EXPECT_TRUE(db->check().empty());
}

// Whether another process sees a lock on SQLite's shared byte range of the file at
// `path` (SQLite's unix locking: the SHARED lock every open WAL connection holds).
bool locked_for_another_process(const std::string& path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    struct flock probe = {};
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    probe.l_start = 0x40000000 + 2;  // PENDING_BYTE + 2: the shared range
    probe.l_len = 510;
    ::_exit(fd >= 0 && ::fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A process holds SQLite's locks as POSIX locks, which it loses on any close of the file
// (sqlite.org/howtocorrupt.html, 2.2): an open of a database the process has open
// already (the planner's check beside its writer, the JIT's lookup beside a tuner) must
// not read the file through a descriptor of its own. With the lock gone, another
// process closing its last connection checkpoints and deletes the WAL this one still
// writes into: a plan and a rerun of it on one database left it malformed.
TEST(TuningDb, OpeningADatabaseAgainKeepsTheProcesssLockOnIt) {
  const TempDir dir("db_lock");
  const std::string path = dir.str() + "/t.db";
  const std::unique_ptr<TuningDb> writer = TuningDb::open(path);
  std::mt19937_64 rng(7);
  writer->commit(random_records(rng, 3, 0));
  ASSERT_TRUE(locked_for_another_process(path));
  TuningDb::open(path, OpenMode::ReadOnly)->records();
  EXPECT_TRUE(locked_for_another_process(path)) << "a read-only open released the writer's lock";
  TuningDb::open(path)->commit(random_records(rng, 3, 100));
  EXPECT_TRUE(locked_for_another_process(path)) << "a second writer's open released the first one's lock";
  DbConfigProvider lookup(path);
  EXPECT_TRUE(locked_for_another_process(path)) << "the lookup's open released the writer's lock";
}

TEST(TuningDb, AWriterKilledMidTransactionLeavesASoundDatabase) {
  const TempDir dir("db_kill");
  const std::string path = dir.str() + "/t.db";
  TuningDb::open(path);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto db = TuningDb::open(path);
    std::mt19937_64 rng(7);
    for (int64_t b = 0;; ++b) {
      db->commit(random_records(rng, 200, b * 200));
      if (b == 2) (void)!::write(ready[1], "x", 1);  // some batches are in
    }
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::usleep(20000);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  auto db = TuningDb::open(path);
  EXPECT_EQ(db->check(), std::vector<std::string>{});
  const size_t stored = db->records().size();
  EXPECT_GE(stored, 600u);
  EXPECT_EQ(stored % 200, 0u) << "a batch was stored in part";
  std::mt19937_64 rng(8);
  db->commit(random_records(rng, 3, -100));  // and the database takes writes again
  EXPECT_EQ(db->records().size(), stored + 3);
}

TEST(TuningDb, BadFilesAreReportedAndLeftByteIdentical) {
  const TempDir dir("db_bad");
  const std::string text = dir.write("notes.db", "these are my notes, not a database\n");
  const std::string other_sqlite = dir.str() + "/other.db";
  {
    Connection c(other_sqlite, Connection::Mode::ReadWrite);
    c.exec("CREATE TABLE mine (x INTEGER); INSERT INTO mine VALUES (1)");
  }
  const std::string corrupt = dir.str() + "/corrupt.db";
  {
    auto db = TuningDb::open(corrupt);
    std::mt19937_64 rng(3);
    db->commit(random_records(rng, 50));
  }
  testing::corrupt_schema_page(corrupt);
  const std::vector<std::tuple<std::string, std::string>> cases = {
      {text, "not a SQLite database"}, {other_sqlite, "not a pto-tune tuning database"}, {corrupt, "corrupt"}};
  for (const auto& [path, why] : cases) {
    const std::string before = file_bytes(path);
    for (OpenMode mode : {OpenMode::ReadWrite, OpenMode::ReadOnly})
      expect_error([&] { TuningDb::open(path, mode); }, ErrorCategory::Db, {path, why}, path);
    expect_error([&] { TuningDb::merge({path}, dir.str() + "/out.db"); }, ErrorCategory::Db, {why}, path);
    EXPECT_EQ(file_bytes(path), before) << path;
    EXPECT_FALSE(fs::exists(path + "-wal")) << path;
  }
  EXPECT_FALSE(fs::exists(dir.str() + "/out.db")) << "merge wrote its output despite a bad input";
}

TEST(TuningDb, CorruptDataPagesAreFoundByCheck) {
  const TempDir dir("db_pages");
  const std::string path = dir.str() + "/t.db";
  {
    auto db = TuningDb::open(path);
    std::mt19937_64 rng(4);
    db->commit(random_records(rng, 400));
  }
  std::string bytes = file_bytes(path);
  ASSERT_GT(bytes.size(), 5 * 4096u);
  for (size_t i = 3 * 4096 + 8; i < 5 * 4096; ++i) bytes[i] = static_cast<char>(i * 7);
  std::ofstream(path, std::ios::binary) << bytes;
  std::vector<std::string> problems;
  try {
    problems = TuningDb::open(path, OpenMode::ReadOnly)->check();
  } catch (const Error& e) {
    problems.push_back(e.what());
  }
  EXPECT_FALSE(problems.empty());
  EXPECT_EQ(file_bytes(path), bytes);
}

TEST(TuningDb, ReadOnlyFileOrFolderIsAClearError) {
  const TempDir dir("db_ro");
  const std::string path = dir.str() + "/t.db";
  TuningDb::open(path)->commit(std::vector{make_record("softmax|64,128|fp16", R"({"vec":[8,128]})", 50)});
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string before = file_bytes(path);
  expect_error([&] { TuningDb::open(path); }, ErrorCategory::Db, {path, "read-only"});
  EXPECT_EQ(TuningDb::open(path, OpenMode::ReadOnly)->records().size(), 1u);
  EXPECT_EQ(file_bytes(path), before);

  const fs::path locked = dir.path() / "locked";
  fs::create_directories(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  expect_error([&] { TuningDb::open((locked / "new.db").string()); }, ErrorCategory::Db, {"read-only"});
  EXPECT_FALSE(fs::exists(locked / "new.db"));
  fs::permissions(locked, fs::perms::owner_all);
}

// Runs `read` in a child process as a user who may not write what root made (root
// reads as nobody: permissions do not stop root); its exit code, 0 when `read` held.
int exit_code_reading_as_another_user(const std::function<bool()>& read) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    try {
      ::_exit(read() ? 0 : 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "reader: %s\n", e.what());
      ::_exit(2);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A deployed database: WAL mode, in a folder its reader may not write, so that SQLite
// cannot create the -wal and -shm a WAL reader needs; read-only opens once failed
// with "attempt to write a readonly database". Everything a reader does works, for
// another user and for the owner of a folder marked read-only, nothing appears beside
// the file, and the file is unchanged.
TEST(TuningDb, AWalDatabaseInAFolderItsReaderCannotWriteIsRead) {
  const TempDir dir("db_ro_folder");
  const fs::path folder = dir.path() / "deployed";
  fs::create_directories(folder);
  const std::string path = (folder / "t.db").string();
  std::mt19937_64 rng(5);
  TuningDb::open(path)->commit(random_records(rng, 30));
  const std::string before = file_bytes(path);
  const fs::perms r_x = fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                        fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(folder, r_x);
  auto read = [&] {
    auto db = TuningDb::open(path, OpenMode::ReadOnly);
    return db->records().size() == 30 && db->check().empty() &&
           db->best_configs().entries.size() == db->best_records().size();
  };
  EXPECT_TRUE(read());
  EXPECT_EQ(exit_code_reading_as_another_user(read), 0);
  const std::string out = dir.str() + "/merged.db";
  EXPECT_EQ(TuningDb::merge({path}, out).inputs, 1u);
  EXPECT_EQ(TuningDb::open(out, OpenMode::ReadOnly)->best_records().size(),
            TuningDb::open(path, OpenMode::ReadOnly)->best_records().size());
  EXPECT_EQ(names_in(folder), std::vector<std::string>{"t.db"});
  fs::permissions(folder, fs::perms::owner_all);
  EXPECT_EQ(file_bytes(path), before);
}

// Eight processes race to create one new database and write records into it, each
// opening and closing it per batch (so checkpoints run all along), while readers open
// it read-only and load the lookup from the moment the file appears, maybe before it
// has a schema. Once some failed with "database disk image is malformed" (an unlocked
// read of pages being checkpointed, taken for corruption) or "has an older schema" (a
// schema being created): nothing may fail now, and no record may be lost.
TEST(TuningDb, ProcessesCreatingWritingAndReadingANewDatabaseAtOnceLoseNothing) {
  const TempDir dir("db_race");
  const std::string path = dir.str() + "/t.db";
  constexpr int kWriters = 8, kReaders = 4, kBatches = 12, kPerBatch = 4, kReads = 12;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  auto spawn = [&](const std::function<void()>& work) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      char c;
      (void)!::read(go[0], &c, 1);  // all start at once, when the parent closes the pipe
      try {
        work();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "process %d: %s\n", ::getpid(), e.what());
        ::_exit(1);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  };
  for (int w = 0; w < kWriters; ++w) {
    spawn([&, w] {
      std::mt19937_64 rng(w);
      for (int b = 0; b < kBatches; ++b)
        TuningDb::open(path)->commit(random_records(rng, kPerBatch, (w + 1) * 1000000 + b * kPerBatch));
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    spawn([&] {
      while (!fs::exists(path)) ::usleep(100);
      LookupOptions strict;
      strict.strict = true;
      for (int i = 0; i < kReads; ++i) {
        TuningDb::open(path, OpenMode::ReadOnly)->best_records();
        DbConfigProvider lookup(path, strict);
      }
    });
  }
  ::close(go[0]);
  ::close(go[1]);
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "process " << pid << " failed";
  }
  auto db = TuningDb::open(path, OpenMode::ReadOnly);
  EXPECT_EQ(db->records().size(), size_t{kWriters * kBatches * kPerBatch});
  EXPECT_TRUE(db->check().empty());
}

TEST(TuningDb, AMissingFileOpenedReadOnlyIsAnError) {
  const TempDir dir("db_missing");
  expect_error([&] { TuningDb::open(dir.str() + "/none.db", OpenMode::ReadOnly); }, ErrorCategory::Db,
               {"none.db", "does not exist"});
  EXPECT_FALSE(fs::exists(dir.path() / "none.db"));
}

TEST(TuningDb, ResolvePathPrefersFlagThenEnvironmentThenHome) {
  ::setenv("PTO_TUNE_DB", "/env/tune.db", 1);
  EXPECT_EQ(resolve_db_path("/flag/tune.db"), "/flag/tune.db");
  EXPECT_EQ(resolve_db_path(), "/env/tune.db");
  ::unsetenv("PTO_TUNE_DB");
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(resolve_db_path(), "/home/someone/.cache/pto-tune/tune.db");
  ::unsetenv("HOME");
  expect_error([] { resolve_db_path(); }, ErrorCategory::Usage, {"--db", "PTO_TUNE_DB"});
}

TEST(TuningDb, ExportImportRoundTrip) {
  const TempDir dir("db_export");
  auto a = TuningDb::open(dir.str() + "/a.db");
  std::mt19937_64 rng(11);
  a->commit(random_records(rng, 120));
  const size_t exported = a->export_json(dir.str() + "/configs.json");
  EXPECT_GE(exported, a->best_records().size());
  const nlohmann::json j = nlohmann::json::parse(file_bytes(dir.str() + "/configs.json"));
  EXPECT_EQ(j["format"], "pto-tune-configs");
  EXPECT_EQ(j["version"], kExportFormatVersion);

  auto b = TuningDb::open(dir.str() + "/b.db");
  EXPECT_EQ(b->import_json(dir.str() + "/configs.json"), exported);
  EXPECT_EQ(as_json(b->best_records()), as_json(a->best_records()));
  EXPECT_EQ(b->import_json(dir.str() + "/configs.json"), 0u) << "a second import adds nothing";
  EXPECT_GE(a->export_json(dir.str() + "/softmax.json", "softmax"), a->best_records("softmax").size());
  EXPECT_EQ(TuningDb::open(dir.str() + "/c.db")->import_json(dir.str() + "/softmax.json"),
            a->export_json(dir.str() + "/softmax.json", "softmax"));
}

// A release of thousands of workloads exports past the 4 MiB that config files may
// hold; its import reads it whole (up to json_read::kMaxExportBytes).
TEST(TuningDb, AnExportPastFourMebibytesImports) {
  const TempDir dir("db_big_export");
  auto a = TuningDb::open(dir.str() + "/a.db");
  std::vector<search::TuningRecord> records;
  for (int m = 1; m <= 12000; ++m)
    records.push_back(make_record("matmul|" + std::to_string(m) + ",4096,4096|fp16",
                                  R"({"cube":{"m":[64,64],"k":[64,256],"n":[128,256]}})", 1000.0 + m));
  a->commit(records);
  const std::string file = dir.str() + "/release.json";
  ASSERT_EQ(a->export_json(file), 12000u);
  ASSERT_GT(std::filesystem::file_size(file), json_read::kMaxFileBytes);
  EXPECT_EQ(TuningDb::open(dir.str() + "/b.db")->import_json(file), 12000u);
}

TEST(TuningDb, BadImportsStoreNothing) {
  const TempDir dir("db_import");
  auto db = TuningDb::open(dir.str() + "/t.db");
  nlohmann::json good = nlohmann::json::parse(R"({"format":"pto-tune-configs","version":1,"records":[]})");
  good["records"].push_back(make_record("softmax|64,128|fp16", R"({"vec":[8,128]})", 50).to_json());
  nlohmann::json bad_record = good;
  bad_record["records"].push_back(make_record("softmax|64,256|fp16", R"({"vec":[8,128]})", 50).to_json());
  bad_record["records"][1]["config"]["vec"] = "wide";
  nlohmann::json newer = good;
  newer["version"] = kExportFormatVersion + 1;
  expect_error([&] { db->import_json(dir.write("bad.json", bad_record.dump())); }, ErrorCategory::Usage,
               {"records[1]", "vec"});
  expect_error([&] { db->import_json(dir.write("newer.json", newer.dump())); }, ErrorCategory::Db, {"newer"});
  expect_error([&] { db->import_json(dir.write("other.json", "{\"a\":1}")); }, ErrorCategory::Usage,
               {"not a pto-tune export"});
  expect_error([&] { db->import_json(dir.write("broken.json", "{")); }, ErrorCategory::Usage, {"not valid JSON"});
  EXPECT_TRUE(db->records().empty());
}

// An export without "version" was read through a const json's operator[] on a missing
// key (undefined behaviour: a crash, or whatever the bytes said); now a usage error.
TEST(TuningDb, AnExportWithoutAVersionIsAUsageError) {
  const TempDir dir("db_import_no_version");
  auto db = TuningDb::open(dir.str() + "/t.db");
  const std::string text = R"({"format":"pto-tune-configs","records":[]})";
  expect_error([&] { db->import_json(dir.write("no_version.json", text)); }, ErrorCategory::Usage, {"no export format \"version\""});
  expect_error([&] { records_from_export(text, "x.json"); }, ErrorCategory::Usage, {"x.json", "version"});
  EXPECT_TRUE(db->records().empty());
}

// An import is checked as the tuner's own records are made: a record it could not have
// written is refused, naming the record, and nothing of the file is stored.
TEST(TuningDb, ImportedRecordsAreCheckedAsTunedOnesAre) {
  const TempDir dir("db_import_checked");
  auto db = TuningDb::open(dir.str() + "/t.db");
  const std::string real = load_target("ascend910b1").fingerprint();
  const std::string huge = R"({"cube":{"m":[4096,4096],"k":[4096,4096],"n":[4096,4096]}})";
  const struct {
    search::TuningRecord record;
    std::vector<std::string_view> parts;
  } cases[] = {
      {make_record("nosuchop|64,128|fp16", R"({"vec":[8,128]})", 50), {"workload", "nosuchop"}},
      {make_record("softmax|64,128,4|fp16", R"({"vec":[8,128]})", 50), {"workload", "3 sizes, expected 2"}},
      {make_record("softmax|64,128|fp16", R"({"vec":[8,128]})", 50, "fp-a", "nosuch"), {"backend", "nosuch"}},
      {make_record("softmax|64,128|fp16", R"({"vec":[8,128]})", 0), {"status OK", "0"}},
      {make_record("matmul|4096,4096,4096|fp16", huge, 50, real), {"does not fit ascend910b1", "capacity"}},
  };
  for (const auto& c : cases) {
    nlohmann::json file = nlohmann::json::parse(R"({"format":"pto-tune-configs","version":1,"records":[]})");
    file["records"].push_back(make_record("softmax|64,128|fp16", R"({"vec":[8,128]})", 50).to_json());
    file["records"].push_back(c.record.to_json());
    std::vector<std::string_view> parts = c.parts;
    parts.push_back("records[1]");
    expect_error([&] { db->import_json(dir.write("bad.json", file.dump())); }, ErrorCategory::Usage, parts);
    EXPECT_TRUE(db->records().empty());
  }
  // The same config from another version of the target, or a custom one, is not judged here.
  nlohmann::json other = nlohmann::json::parse(R"({"format":"pto-tune-configs","version":1,"records":[]})");
  other["records"].push_back(make_record("matmul|4096,4096,4096|fp16", huge, 50, "fp-other").to_json());
  EXPECT_EQ(db->import_json(dir.write("other.json", other.dump())), 1u);
}

TEST(TuningDb, MergeIsTheUnionOfItsInputsIdempotentAndInAnyOrder) {
  const TempDir dir("db_merge");
  std::vector<TuningRecord> all;
  std::vector<std::string> inputs;
  for (int shard = 0; shard < 3; ++shard) {
    std::mt19937_64 rng(100 + shard);
    const std::string path = dir.str() + "/shard" + std::to_string(shard) + ".db";
    const std::vector<TuningRecord> records = random_records(rng, 60, shard * 1000);
    TuningDb::open(path)->commit(records);
    all.insert(all.end(), records.begin(), records.end());
    inputs.push_back(path);
  }
  const MergeSummary first = TuningDb::merge(inputs, dir.str() + "/out1.db");
  const MergeSummary again = TuningDb::merge(inputs, dir.str() + "/out1.db");
  const std::vector<std::string> reversed(inputs.rbegin(), inputs.rend());
  TuningDb::merge(reversed, dir.str() + "/out2.db");
  TuningDb::merge({inputs[2]}, dir.str() + "/out3.db");
  TuningDb::merge({inputs[0], inputs[1]}, dir.str() + "/out3.db");

  auto out1 = TuningDb::open(dir.str() + "/out1.db");
  EXPECT_EQ(first.inputs, 3u);
  EXPECT_EQ(first.added, all.size());
  EXPECT_EQ(again.added, 0u);
  EXPECT_EQ(sorted_json(out1->records()), sorted_json(all)) << "every record of every input, once";
  EXPECT_EQ(sorted_json(out1->records()), sorted_json(TuningDb::open(dir.str() + "/out2.db")->records()));
  EXPECT_EQ(sorted_json(out1->records()), sorted_json(TuningDb::open(dir.str() + "/out3.db")->records()));
  EXPECT_EQ(first.keys, out1->best_records().size());
  for (const RecordKey& key : keys_of(all)) {
    const auto want = testing::brute_force_top_k(all, key, 1);
    const auto got = out1->best(key);
    ASSERT_EQ(got.has_value(), !want.empty()) << key.workload;
    if (got) {
      EXPECT_EQ(got->time_ns(), want[0].time_ns());
    }
  }
}

// --workloads: the records of the workloads named, all of them, and nothing else.
TEST(TuningDb, MergeOfSomeWorkloadsTakesTheirRecordsAlone) {
  const TempDir dir("db_merge_some");
  std::mt19937_64 rng(7);
  const std::vector<TuningRecord> all = random_records(rng, 120);
  TuningDb::open(dir.str() + "/in.db")->commit(all);
  const std::set<std::string> only = {"matmul|256,256,256|fp16", "softmax|64,128|fp16"};
  const MergeSummary s = TuningDb::merge({dir.str() + "/in.db"}, dir.str() + "/out.db", only);
  std::vector<TuningRecord> want;
  std::copy_if(all.begin(), all.end(), std::back_inserter(want),
               [&](const TuningRecord& r) { return only.contains(r.workload.key()); });
  ASSERT_FALSE(want.empty());
  ASSERT_LT(want.size(), all.size()) << "the test needs records of another workload";
  EXPECT_EQ(sorted_json(TuningDb::open(dir.str() + "/out.db")->records()), sorted_json(want));
  EXPECT_EQ(s.added, want.size());
  EXPECT_EQ(s.keys, TuningDb::open(dir.str() + "/out.db")->best_records().size());
}

// Three shards of four matmul keys each: a default's record and three others, each
// measured and predicted with a random spread, so that every key has lead errors
// (BestConfigs::Entry::lead_errors), and one key an unpredicted record that is its best.
std::vector<std::vector<TuningRecord>> lead_evidence_shards(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> spread(0.8, 1.2);
  std::vector<std::vector<TuningRecord>> shards(3);
  for (size_t shard = 0; shard < shards.size(); ++shard) {
    for (size_t m = 1; m <= 4; ++m) {
      const std::string key = "matmul|" + std::to_string(64 * (4 * shard + m)) + ",256,256|fp16";
      TuningRecord base = make_record(key, R"({"vec":[8,128]})", 1000);
      base.strategy = "default";
      base.measurement.predicted_ns = 1000 * spread(rng);
      shards[shard].push_back(base);
      for (const char* config : {R"({"vec":[16,128]})", R"({"vec":[32,128],"nbuffer":2})", R"({"vec":[64,64]})"}) {
        TuningRecord r = make_record(key, config, 900 * spread(rng));
        r.measurement.predicted_ns = 900 * spread(rng);
        shards[shard].push_back(r);
      }
    }
  }
  // A measurement imported without a prediction, the fastest of its key: its best, but
  // no evidence of the model's lead (LeadTally counts the others against their best).
  TuningRecord imported = make_record(shards[0].front().workload.key(), R"({"vec":[8,64]})", 500);
  imported.measurement.predicted_ns = 0;
  shards[0].push_back(imported);
  return shards;
}

// What the lookup learns from, per workload key: each best's lead errors (sorted: the
// lookup takes a percentile of them, in whatever order they were stored) and own error.
std::map<std::string, std::pair<std::vector<float>, std::optional<float>>> lookup_evidence(const std::string& path) {
  const BestConfigs c = TuningDb::open(path)->best_configs();
  std::map<std::string, std::pair<std::vector<float>, std::optional<float>>> by_key;
  for (const BestConfigs::Entry& e : c.entries) {
    std::vector<float> errors = e.lead_errors;
    std::sort(errors.begin(), errors.end());
    by_key[c.workload_keys[e.workload]] = {errors, e.own_lead_error};
  }
  return by_key;
}

// The lookup learns its margin and its corrections from each key's default and
// near-best records (BestConfigs::Entry::lead_errors, own_lead_error): the merge of
// shards gives it the same evidence as one database holding every record, and so does
// an export imported elsewhere.
TEST(TuningDb, AMergeOfShardsAndAnExportKeepWhatTheLookupLearnsFrom) {
  const TempDir dir("db_merge_evidence");
  std::vector<std::string> shards;
  auto one = TuningDb::open(dir.str() + "/one.db");
  for (const std::vector<TuningRecord>& part : lead_evidence_shards(11)) {
    shards.push_back(dir.str() + "/shard" + std::to_string(shards.size()) + ".db");
    TuningDb::open(shards.back())->commit(part);
    one->commit(part);
  }
  TuningDb::merge(shards, dir.str() + "/merged.db");
  one->export_json(dir.str() + "/release.json");
  TuningDb::open(dir.str() + "/imported.db")->import_json(dir.str() + "/release.json");
  const auto want = lookup_evidence(dir.str() + "/one.db");
  ASSERT_EQ(want.size(), 12u);
  EXPECT_TRUE(std::all_of(want.begin(), want.end(), [](const auto& k) { return !k.second.first.empty(); }))
      << "a key without lead errors: the test shows nothing";
  EXPECT_EQ(lookup_evidence(dir.str() + "/merged.db"), want);
  EXPECT_EQ(lookup_evidence(dir.str() + "/imported.db"), want);
}

TEST(TuningDb, MergeNeverLetsAStaleRecordDisplaceAFreshOne) {
  const TempDir dir("db_stale");
  const std::string key = "matmul|256,256,256|fp16";
  TuningRecord fresh_slow = make_record(key, R"({"vec":[8,128]})", 900);
  TuningRecord stale_fast = make_record(key, R"({"vec":[16,128]})", 100);
  stale_fast.versions.compiler = "0.0.1";
  TuningRecord only_stale = make_record("softmax|64,128|fp16", R"({"vec":[8,128]})", 70);
  only_stale.versions.cost_model = "0.0.1";
  TuningDb::open(dir.str() + "/a.db")->commit(std::vector{fresh_slow});
  TuningDb::open(dir.str() + "/b.db")->commit(std::vector{stale_fast, only_stale});
  for (const auto& order : {std::vector<std::string>{"a", "b"}, std::vector<std::string>{"b", "a"}}) {
    const std::string out = dir.str() + "/out_" + order[0] + ".db";
    const MergeSummary s = TuningDb::merge({dir.str() + "/" + order[0] + ".db", dir.str() + "/" + order[1] + ".db"}, out);
    EXPECT_EQ(s.keys, 2u);
    EXPECT_EQ(s.stale, 1u);
    auto db = TuningDb::open(out);
    const std::vector<TuningRecord> best = db->best_records();
    ASSERT_EQ(best.size(), 2u);
    EXPECT_EQ(best[0].config, fresh_slow.config);
    EXPECT_EQ(best[0].stale_reason(), "");
    EXPECT_EQ(best[1].stale_reason(), "made by cost model 0.0.1 (now " + std::string(search::Versions::current().cost_model) + ")");
  }
}

// The database and the in-memory store, each holding `records`.
std::vector<std::unique_ptr<search::TuningStore>> both_stores(const std::string& path,
                                                              const std::vector<TuningRecord>& records) {
  std::vector<std::unique_ptr<search::TuningStore>> stores;
  stores.push_back(TuningDb::open(path));
  stores.push_back(std::make_unique<search::MemoryStore>());
  for (const auto& store : stores) store->commit(records);
  return stores;
}

TEST(TuningDb, AStaleRecordNeverBeatsAFreshOneNorCountsAsTuned) {
  const TempDir dir("db_stale_best");
  TuningRecord stale_fast = make_record("matmul|256,256,256|fp16", R"({"vec":[16,128]})", 100);
  stale_fast.versions.compiler = "0.0.1";
  const TuningRecord fresh_slow = make_record("matmul|256,256,256|fp16", R"({"vec":[8,128]})", 900);
  const RecordKey key = fresh_slow.key();
  for (const auto& store : both_stores(dir.str() + "/stale.db", {stale_fast})) {
    SCOPED_TRACE(store->location());
    ASSERT_TRUE(store->best(key));
    EXPECT_FALSE(store->best(key)->fresh()) << "a stale record is still the key's best when it is all there is";
    EXPECT_FALSE(search::is_tuned(*store, key)) << "batch resume would skip a workload only a stale record tuned";
    store->commit(std::vector{fresh_slow});
    EXPECT_EQ(store->best(key)->config, fresh_slow.config) << "the faster stale record won";
    EXPECT_EQ(store->top_k(key, 2).back().config, stale_fast.config);
    EXPECT_TRUE(search::is_tuned(*store, key));
  }
}

// best() of the database and of memory, best_records(), best_configs() (the JIT
// lookup), merge and is_tuned() (batch resume) on random record sets with stale ones
// among them: each is the first record of its key in search::better's ranking, found
// here by brute force.
TEST(TuningDb, BestLookupMergeAndResumeAgreeOnOneRanking) {
  const TempDir dir("db_one_ranking");
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::vector<TuningRecord> all = random_records(rng, 20 + rng() % 60);
    for (TuningRecord& r : all) {
      if (rng() % 3 == 0) (rng() % 2 ? r.versions.compiler : r.versions.cost_model) = "0.0." + std::to_string(rng() % 3);
    }
    const std::string prefix = dir.str() + "/s" + std::to_string(seed);
    std::vector<std::string> shards;
    for (size_t i = 0; i < 3; ++i) {
      shards.push_back(prefix + "_shard" + std::to_string(i) + ".db");
      std::vector<TuningRecord> part;
      for (size_t j = i; j < all.size(); j += 3) part.push_back(all[j]);
      TuningDb::open(shards.back())->commit(part);
    }
    TuningDb::merge(shards, prefix + "_merged.db");
    auto merged = TuningDb::open(prefix + "_merged.db");
    auto db = TuningDb::open(prefix + ".db");
    db->commit(all);
    search::MemoryStore memory;
    memory.commit(all);

    std::map<RecordKey, TuningRecord> listed;
    for (TuningRecord& r : db->best_records()) listed.emplace(r.key(), std::move(r));
    std::map<RecordKey, BestConfigs::Entry> served;
    const BestConfigs configs = db->best_configs();
    for (const BestConfigs::Entry& e : configs.entries)
      served.emplace(RecordKey{configs.workload_keys[e.workload], configs.targets[e.target].fingerprint, e.backend}, e);
    for (const RecordKey& key : keys_of(all)) {
      SCOPED_TRACE(key.workload + " " + key.target_fingerprint + " " + key.backend);
      const std::vector<TuningRecord> want = testing::brute_force_top_k(all, key, 1);
      const bool fresh_usable = std::any_of(all.begin(), all.end(), [&](const TuningRecord& r) {
        return r.key() == key && r.usable() && r.fresh();
      });
      EXPECT_EQ(search::is_tuned(*db, key), fresh_usable);
      EXPECT_EQ(search::is_tuned(memory, key), fresh_usable);
      EXPECT_EQ(search::is_tuned(*merged, key), fresh_usable);
      if (want.empty()) {
        EXPECT_FALSE(db->best(key) || memory.best(key) || merged->best(key) || listed.contains(key) || served.contains(key));
        continue;
      }
      const std::string expected = want[0].to_json().dump();
      EXPECT_EQ(db->best(key)->to_json().dump(), expected);
      EXPECT_EQ(memory.best(key)->to_json().dump(), expected);
      EXPECT_EQ(merged->best(key)->to_json().dump(), expected);
      ASSERT_TRUE(listed.contains(key));
      EXPECT_EQ(listed.at(key).to_json().dump(), expected);
      ASSERT_TRUE(served.contains(key));
      EXPECT_EQ(configs.configs[served.at(key).config], want[0].config);
      EXPECT_EQ(served.at(key).versions, want[0].versions);
    }
  }
}

}  // namespace
}  // namespace pto::db
