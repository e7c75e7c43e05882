// TuningDb (see db/tuning_db.h). The map: open() checks a file before anything may
// write to it (check_existing_file, then the schema version), then sets WAL and
// migrates; insert_records() is the one write path (commit, import and merge all go
// through it); kSelectRecord + read_record() the one read path.
#include "db/tuning_db.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/jit.h"
#include "core/json_list_writer.h"
#include "core/json_read.h"
#include "core/warning.h"
#include "db/export_file.h"
#include "db/schema.h"
#include "db/sqlite.h"

namespace pto::db {

namespace fs = std::filesystem;
using nlohmann::json;
using search::RecordKey;
using search::TuningRecord;
using search::Versions;

namespace {

[[noreturn]] void db_error(const std::string& path, const std::string& what) {
  fail(ErrorCategory::Db, "tuning database '" + path + "' " + what);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Unwritable for us, or marked read-only by its owner: root may write anything, but a
// file whose owner took away the write bit is not ours to change.
bool read_only(const fs::path& path) {
  const fs::perms p = fs::status(path).permissions();
  return ::access(path.c_str(), W_OK) != 0 || (p & fs::perms::owner_write) == fs::perms::none;
}

// The checks that need no SQLite: the file must be readable, and a file that will be
// written must be writable, as must its folder (WAL files live beside it). Its bytes
// are read by SQLite alone (validated_version): this process may hold SQLite's locks on
// the file through another connection, and POSIX drops every lock a process holds on a
// file when it closes any descriptor of it (sqlite.org/howtocorrupt.html, 2.2).
void check_existing_file(const std::string& path, OpenMode mode) {
  std::error_code ec;
  if (fs::file_size(path, ec) == static_cast<std::uintmax_t>(-1)) db_error(path, "cannot be read: " + ec.message());
  if (mode == OpenMode::ReadOnly) return;
  if (read_only(path)) db_error(path, "is read-only: cannot store records in it");
}

void prepare_folder(const std::string& path) {
  const fs::path folder = fs::absolute(path).parent_path();
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) db_error(path, "cannot be created: folder '" + folder.string() + "': " + ec.message());
  if (read_only(folder))
    db_error(path, "cannot be written: its folder '" + folder.string() + "' is read-only");
}

// How a database is read: under SQLite's locks, beside its WAL, as usual; but when its
// folder cannot be written and no writer left a WAL there, SQLite could not create the
// -wal and -shm files a WAL reader needs ("attempt to write a readonly database"), and
// the file is all there is: it is read as immutable. A deployed, root-owned database.
// A rollback journal left beside it (a writer that stopped mid-transaction) must be
// rolled back before anyone reads, which a read-only open cannot do: where the file and
// its folder may be written, the reader opens it for writing and SQLite rolls the
// journal back as it reads, as it would for any writer.
bool hot_journal_to_roll_back(const std::string& path) {
  std::error_code ec;
  return fs::exists(path + "-journal", ec) && !read_only(fs::absolute(path).parent_path()) && !read_only(path);
}

Connection::Mode read_mode(const std::string& path) {
  if (hot_journal_to_roll_back(path)) return Connection::Mode::RollBack;
  std::error_code ec;
  if (fs::exists(path + "-wal", ec) || !read_only(fs::absolute(path).parent_path())) return Connection::Mode::ReadOnly;
  return Connection::Mode::Immutable;
}

// Sleeps a little longer on each attempt, up to 200 ms.
void back_off(int attempt) { std::this_thread::sleep_for(std::chrono::milliseconds(std::min(5 << attempt, 200))); }

// A read that SQLite finds corrupt is believed after this many tries.
constexpr int kCorruptReadTries = 4;

// A file of the current version lacking a table or column (dropped by hand) would fail
// at its first statement, naming the SQL: refused here, naming what is missing.
void check_tables(const std::string& path, Connection& c) {
  if (const std::vector<std::string> missing = missing_schema(c); !missing.empty())
    db_error(path, "is damaged: " + joined(missing) + ": left unchanged");
}

// Opens an existing file read-only and reads its schema version: every way a file
// can fail to be a pto-tune database of a version this build understands is found
// here, before the file is opened for writing. The first look is immutable (nothing is
// created beside a file that may not be ours); but beside a live WAL, another process
// may be checkpointing into the very pages an unlocked read sees, so then the file is
// read under the lock, and a corrupt verdict of an immutable read is only believed
// when it holds on every try. Beside a hot journal that this process may roll back, it
// is opened to do so (read_mode): an immutable read would see the half-written pages.
int validated_version(const std::string& path) {
  for (int attempt = 1;; ++attempt) {
    std::error_code ec;
    const bool live = fs::exists(path + "-wal", ec);
    try {
      Connection c(path, hot_journal_to_roll_back(path) ? Connection::Mode::RollBack
                         : live                            ? Connection::Mode::ReadOnly
                                                           : Connection::Mode::Immutable);
      const int version = schema_version(c);
      if (version == current_schema_version()) check_tables(path, c);
      return version;
    } catch (const SqliteError& e) {
      if (!e.corrupt()) throw;
      if (live || attempt == kCorruptReadTries) {
        if (e.not_a_database()) db_error(path, "is not a SQLite database: left unchanged");
        db_error(path, "is corrupt: left unchanged (" + std::string(e.what()) + ")");
      }
    }
    back_off(attempt);
  }
}

// Puts the file in WAL mode. Processes creating a new database at once switch it
// together, and the switch, which needs the file to itself for a moment, fails with
// SQLITE_BUSY at once rather than through the busy handler: retried with backoff, for
// as long as the busy timeout would wait.
void use_wal(Connection& c) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (int attempt = 1;; ++attempt) {
    try {
      c.exec("PRAGMA journal_mode = WAL");
      return;
    } catch (const SqliteError& e) {
      if (!e.busy() || std::chrono::steady_clock::now() > deadline) throw;
    }
    back_off(attempt);
  }
}

// How long a reader waits for a database another process has just created to get its
// schema (the file is there, the first migration's transaction not yet committed).
constexpr auto kSchemaWait = std::chrono::seconds(5);

// The schema version a reader sees, waiting while it is 0 (an empty database: its
// creator is probably still migrating it) for at most kSchemaWait.
int settled_version(Connection& c) {
  const auto deadline = std::chrono::steady_clock::now() + kSchemaWait;
  for (int attempt = 1;; ++attempt) {
    const int version = schema_version(c);
    if (version != 0 || std::chrono::steady_clock::now() > deadline) return version;
    back_off(attempt);
  }
}

// The columns read_record() reads, in its order.
constexpr const char* kSelectRecord = R"sql(
SELECT w.key, c.json, t.name, m.target_fingerprint, m.backend, m.status, m.error,
       m.median_ns, m.p10_ns, m.p90_ns, m.repetitions, m.predicted_ns, m.simulated, m.verified,
       m.max_abs_err, m.detail, m.host, m.timestamp, m.compiler_version, m.cost_model_version,
       m.strategy, m.id
FROM measurements m
JOIN workloads w ON w.id = m.workload_id
JOIN configs c ON c.id = m.config_id
JOIN targets t ON t.fingerprint = m.target_fingerprint
)sql";

// The rows the reads of one open database skipped because they cannot be made records
// (written by another program, or damaged: a config or key that does not parse, an
// unknown status, a detail that is not JSON): each named in one warning, however often
// it is read, so that one bad row costs its own record only.
class BadRows {
 public:
  explicit BadRows(std::string path) : path_(std::move(path)) {}

  // parse(), or nullopt after the warning naming `row` and why it could not be read.
  template <typename Parse>
  auto parsed(const std::string& row, Parse&& parse) -> std::optional<decltype(parse())> {
    try {
      return parse();
    } catch (const Error& e) {
      if (seen_.insert(row).second) warn("tuning database '" + path_ + "': " + row + " skipped: " + e.what());
      return std::nullopt;
    }
  }
  size_t count() const { return seen_.size(); }

 private:
  std::string path_;
  std::set<std::string> seen_;
};

std::string row_name(std::string_view table, int64_t id) { return std::string(table) + " row " + std::to_string(id); }

// Reading many records parses each distinct config once.
class RecordReader {
 public:
  // The record of a kSelectRecord row; Usage Error naming the column that cannot be read.
  TuningRecord parse(const Statement& s) {
    TuningRecord r;
    r.workload = Workload::parse_key(s.text(0));
    r.config = config(s.text_view(1));
    r.target_name = s.text(2);
    r.target_fingerprint = s.text(3);
    r.backend = s.text(4);
    measure::Measurement& m = r.measurement;
    m.status = measure::parse_status(s.text(5));
    m.error = s.text(6);
    m.stats = {s.real(7), s.real(8), s.real(9), static_cast<int>(s.integer(10))};
    m.predicted_ns = s.real(11);
    m.backend = r.backend;
    m.simulated = s.integer(12) != 0;
    m.verified = s.integer(13) != 0;
    m.max_abs_err = s.real(14);
    m.detail_json = s.text(15);
    m.host = s.text(16);
    m.timestamp = s.integer(17);
    r.versions = {s.text(18), s.text(19)};
    r.strategy = s.text(20);
    if (!m.detail_json.empty()) json_read::parse(m.detail_json, "the measurement's detail");
    r.check_text();  // what export and --json would write
    return r;
  }
  static int64_t row_id(const Statement& s) { return s.integer(21); }
  std::optional<TuningRecord> read(const Statement& s, BadRows& bad) {
    return bad.parsed(row_name("measurement", row_id(s)), [&] { return parse(s); });
  }

 private:
  const TileConfig& config(std::string_view text) {
    auto it = configs_.find(text);
    if (it == configs_.end()) it = configs_.emplace(std::string(text), TileConfig::parse(std::string(text))).first;
    return it->second;
  }
  std::map<std::string, TileConfig, std::less<>> configs_;
};

std::vector<TuningRecord> read_all(Statement& s, BadRows& bad) {
  RecordReader reader;
  std::vector<TuningRecord> out;
  while (s.step())
    if (auto r = reader.read(s, bad)) out.push_back(std::move(*r));
  return out;
}

std::string attrs_text(const std::map<std::string, int64_t>& attrs) {
  std::string out;
  for (const auto& [name, value] : attrs) out += (out.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return out;
}

// The one ranking of records (search::ranks_before) per key (workload, target
// fingerprint, backend), in one pass over the usable measurements: what best_records(),
// export, merge and the JIT lookup (best_configs) keep. It reads a row's ranking
// columns only, and a config's text only when two rows of a key tie on time; rows equal
// in every ranked field go to the first stored, so each database has one answer.
class BestScan {
 public:
  // The columns consider() reads, in its order; ?1 is an op, or '' for every op.
  static constexpr const char* kColumns =
      "SELECT id, workload_id, config_id, target_fingerprint, backend, median_ns, timestamp, host, strategy, "
      "compiler_version, cost_model_version, predicted_ns FROM measurements WHERE usable = 1 "
      "AND (?1 = '' OR workload_id IN (SELECT id FROM workloads WHERE op = ?1)) ORDER BY id";

  BestScan(Connection& c, Versions now) : now_(std::move(now)), config_text_(c.prepare("SELECT json FROM configs WHERE id = ?")) {}

  struct Row {
    int64_t id, workload_id, config_id;
    size_t target, backend;  // indexes in fingerprints() / backends()
    bool fresh;
    double median_ns;
    int64_t timestamp;
    std::string host, strategy;
    Versions versions;
  };

  // A key: a workload id and, by index in fingerprints() / backends(), target and backend.
  struct Key {
    int64_t workload_id;
    size_t target, backend;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<int64_t>()(k.workload_id) ^ (k.target << 48) ^ (k.backend << 56);
    }
  };

  // Keeps row `s` if it ranks before its key's kept row; returns its key.
  Key consider(const Statement& s) {
    const Key key{s.integer(1), intern(fingerprints_, s.text_view(3)), intern(backends_, s.text_view(4))};
    const auto [it, added] = best_.try_emplace(key);
    if (added || before(s, it->second)) it->second = row(s, key);
    return key;
  }
  // Whether row `s` was made by this pto-tune's versions.
  bool fresh(const Statement& s) const { return s.text_view(9) == now_.compiler && s.text_view(10) == now_.cost_model; }

  const std::vector<std::string>& fingerprints() const { return fingerprints_; }
  const std::vector<std::string>& backends() const { return backends_; }
  template <typename F>
  void for_each(F&& visit) const {
    for (const auto& [key, r] : best_) visit(r);
  }
  // The config's canonical JSON; empty when the row is missing.
  const std::string& config_text(int64_t id) {
    auto it = config_texts_.find(id);
    if (it != config_texts_.end()) return it->second;
    config_text_.bind(1, id);
    std::string text = config_text_.step() ? config_text_.text(0) : std::string();
    config_text_.reset();
    return config_texts_.emplace(id, std::move(text)).first->second;
  }

 private:
  static size_t intern(std::vector<std::string>& names, std::string_view name) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) return static_cast<size_t>(it - names.begin());
    names.emplace_back(name);
    return names.size() - 1;
  }

  search::RankFields fields(const Statement& s) const {
    return {true, fresh(s), s.real(5), s.integer(6), s.text_view(7), s.text_view(8), s.text_view(9), s.text_view(10)};
  }

  static search::RankFields fields(const Row& r) {
    return {true, r.fresh, r.median_ns, r.timestamp, r.host, r.strategy, r.versions.compiler, r.versions.cost_model};
  }

  Row row(const Statement& s, const Key& key) const {
    return {s.integer(0), key.workload_id, s.integer(2), key.target, key.backend, fields(s).fresh, s.real(5),
            s.integer(6), s.text(7), s.text(8), {s.text(9), s.text(10)}};
  }

  // Whether row `s` ranks before `best`, the kept row of its key.
  bool before(const Statement& s, const Row& best) {
    const int64_t config = s.integer(2);
    return search::ranks_before(fields(s), fields(best), [&] {
      return config == best.config_id ? std::weak_ordering::equivalent
                                      : config_text(config) <=> config_text(best.config_id);
    });
  }

  Versions now_;
  Statement config_text_;
  std::unordered_map<int64_t, std::string> config_texts_;
  std::vector<std::string> fingerprints_, backends_;
  std::unordered_map<Key, Row, KeyHash> best_;
};

// The model's error on each key's lead over the op's default (BestConfigs::Entry's
// lead_errors), from the rows BestScan reads: the default's row (strategy "default",
// which the tuner measures first) and the other fresh ones of the key measured within
// kNearBest of its best. A transfer chooses among tuned bests, and the model's error on
// configs that good is what decides it; the explored ones far from the best, most of
// what a search measures, are mispriced by far more (the 90th percentile of all of
// them on the LLM matmuls of results/jit_transfer.md: 21-73 %, of these: 2-4 %).
class LeadTally {
 public:
  // Whether a usable record says something of the model's lead: fresh, measured and
  // predicted (an imported measurement has no prediction).
  static bool counts(bool fresh, double measured, double predicted) {
    return fresh && measured > 0 && predicted > 0 && std::isfinite(predicted);
  }

  // Row `s` of `key` (BestScan::consider's), when `fresh`.
  void consider(const Statement& s, const BestScan::Key& key, bool fresh) {
    const double measured = s.real(5), predicted = s.real(11);
    if (!counts(fresh, measured, predicted)) return;
    Leads& leads = keys_[key];
    if (s.text_view(8) == kDefaultStrategy) leads.baseline = {measured, predicted};
    else leads.others.push_back({s.integer(0), measured, predicted});
  }

  // log(measured / default's) - log(predicted / default's), per other record near the
  // key's best; none without a default's row.
  std::vector<float> errors(const BestScan::Key& key) const {
    const auto it = keys_.find(key);
    std::vector<float> out;
    if (it == keys_.end() || !it->second.baseline) return out;
    double best = std::numeric_limits<double>::infinity();
    for (const Other& o : it->second.others) best = std::min(best, o.measured);
    for (const Other& o : it->second.others)
      if (o.measured <= kNearBest * best) out.push_back(error(o, *it->second.baseline));
    return out;
  }

  // The error of row `id` of `key` alone (BestConfigs::Entry::own_lead_error); none for
  // the default's row, or without one.
  std::optional<float> error_of(const BestScan::Key& key, int64_t id) const {
    const auto it = keys_.find(key);
    if (it == keys_.end() || !it->second.baseline) return std::nullopt;
    for (const Other& o : it->second.others)
      if (o.id == id) return error(o, *it->second.baseline);
    return std::nullopt;
  }

  static constexpr double kNearBest = 1.05;
  // The strategy label of the default's record, which the tuner measures first.
  static constexpr std::string_view kDefaultStrategy = "default";

 private:
  struct Other {
    int64_t id;
    double measured, predicted;
  };
  struct Leads {
    std::optional<std::pair<double, double>> baseline;  // measured, predicted
    std::vector<Other> others;
  };
  static float error(const Other& o, const std::pair<double, double>& baseline) {
    return static_cast<float>(std::log(o.measured / baseline.first) - std::log(o.predicted / baseline.second));
  }
  std::unordered_map<BestScan::Key, Leads, BestScan::KeyHash> keys_;
};

}  // namespace

std::string resolve_db_path(const std::optional<std::string>& flag) {
  // SQLite's in-memory name would keep nothing past the process: not a tuning database.
  if (flag == ":memory:") usage_error("--db: ':memory:' keeps nothing after the run; name a file");
  if (flag && !flag->empty()) return *flag;
  if (const char* env = std::getenv("PTO_TUNE_DB"); env && *env) return env;
  const char* home = std::getenv("HOME");
  if (!home || !*home) usage_error("no tuning database given: pass --db PATH or set PTO_TUNE_DB (HOME is not set)");
  return (fs::path(home) / ".cache" / "pto-tune" / "tune.db").string();
}

struct TuningDb::Impl {
  Impl(const std::string& path, bool writable)
      : connection(path, writable ? Connection::Mode::ReadWrite : read_mode(path)), bad_rows(path) {}
  std::mutex mutex;  // one statement sequence at a time on the connection
  Connection connection;
  BadRows bad_rows;
  bool writable = false;
  // Below current_schema_version() only for a file opened read-only: it then lacks the
  // later versions' tables (v1: no corrections).
  int version = current_schema_version();

  // The stored correction of `key` when it was made under `now`'s versions and its
  // layout is today's; the caller holds the mutex. A row that cannot be read is a
  // warning (BadRows) and nothing: a correction sharpens predictions, it must not stop
  // a tune.
  std::optional<Correction> read_correction(const CorrectionKey& key, const Versions& now) {
    if (version < 2) return std::nullopt;
    Statement s = connection.prepare(
        "SELECT json, rowid FROM corrections WHERE op = ? AND target_fingerprint = ? AND backend = ? "
        "AND compiler_version = ? AND cost_model_version = ?");
    s.bind(1, key.op).bind(2, key.target_fingerprint).bind(3, key.backend).bind(4, now.compiler).bind(5, now.cost_model);
    if (!s.step()) return std::nullopt;
    const std::string text = s.text(0);
    return bad_rows
        .parsed(row_name("correction", s.integer(1)),
                [&] { return Correction::from_json(json_read::parse(text, "the correction")); })
        .value_or(std::nullopt);
  }

  int64_t id_of(std::string_view select, std::string_view value) {
    Statement s = connection.prepare(select);
    s.bind(1, value);
    if (!s.step()) internal_error("tuning database: row for '" + std::string(value) + "' vanished");
    return s.integer(0);
  }

  // The one write path; the caller holds the mutex and a transaction. Returns how
  // many rows were new.
  size_t insert_records(std::span<const TuningRecord> records) {
    Statement target = connection.prepare(
        "INSERT OR IGNORE INTO targets (fingerprint, name, json) VALUES (?, ?, '')");
    Statement workload = connection.prepare(
        "INSERT OR IGNORE INTO workloads (key, op, shape, dtype, attrs) VALUES (?, ?, ?, ?, ?)");
    Statement config = connection.prepare("INSERT OR IGNORE INTO configs (json) VALUES (?)");
    Statement measurement = connection.prepare(R"sql(
      INSERT OR IGNORE INTO measurements (workload_id, config_id, target_fingerprint, backend,
        status, error, usable, median_ns, p10_ns, p90_ns, repetitions, predicted_ns, simulated,
        verified, max_abs_err, detail, compiler_version, cost_model_version, host, strategy, timestamp)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))sql");
    size_t added = 0;
    for (const TuningRecord& r : records) {
      const std::string key = r.workload.key();
      target.bind(1, r.target_fingerprint).bind(2, r.target_name).run();
      workload.bind(1, key).bind(2, r.workload.op).bind(3, shape_dims(r.workload.shape))
          .bind(4, std::string(dtype_name(r.workload.dtype))).bind(5, attrs_text(r.workload.attrs)).run();
      const std::string config_text = r.config.to_string();
      config.bind(1, config_text).run();
      const int64_t workload_id = id_of("SELECT id FROM workloads WHERE key = ?", key);
      const int64_t config_id = id_of("SELECT id FROM configs WHERE json = ?", config_text);
      const measure::Measurement& m = r.measurement;
      measurement.bind(1, workload_id).bind(2, config_id).bind(3, r.target_fingerprint).bind(4, r.backend)
          .bind(5, std::string(measure::status_name(m.status))).bind(6, m.error)
          .bind(7, int64_t{r.usable()}).bind(8, m.stats.median_ns).bind(9, m.stats.p10_ns)
          .bind(10, m.stats.p90_ns).bind(11, int64_t{m.stats.repetitions}).bind(12, m.predicted_ns)
          .bind(13, int64_t{m.simulated}).bind(14, int64_t{m.verified}).bind(15, m.max_abs_err)
          .bind(16, m.detail_json).bind(17, r.versions.compiler).bind(18, r.versions.cost_model)
          .bind(19, m.host).bind(20, r.strategy).bind(21, m.timestamp);
      measurement.step();
      added += static_cast<size_t>(connection.changes());
      measurement.reset();
    }
    return added;
  }
};

TuningDb::TuningDb(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TuningDb::~TuningDb() = default;

bool database_exists(const std::string& path) {
  std::error_code ec;
  const bool there = fs::exists(path, ec);
  if (ec) db_error(path, "cannot be reached: " + ec.message());
  return there;
}

std::unique_ptr<TuningDb> TuningDb::open(const std::string& path, OpenMode mode) {
  const bool writable = mode == OpenMode::ReadWrite;
  if (database_exists(path)) {
    check_existing_file(path, mode);
    validated_version(path);
  } else if (!writable) {
    db_error(path, "does not exist");
  }
  if (writable) prepare_folder(path);
  auto impl = std::make_unique<Impl>(path, writable);
  impl->writable = writable;
  if (writable) {
    // Another program's trigger would run on each of our writes (one that deletes rows
    // would silently empty the database).
    if (const std::vector<std::string> foreign = foreign_objects(impl->connection); !foreign.empty()) {
      db_error(path, "has objects pto-tune does not create (" + joined(foreign) + "): not written to (drop them, or use another file)");
    }
    use_wal(impl->connection);
    impl->connection.exec("PRAGMA synchronous = NORMAL");
    migrate(impl->connection);
  } else if (impl->version = settled_version(impl->connection); impl->version == 0) {
    db_error(path, "has no schema yet (an empty file): open it for writing once to create it");
  }
  return std::unique_ptr<TuningDb>(new TuningDb(std::move(impl)));
}

void TuningDb::commit(std::span<const TuningRecord> records) {
  std::lock_guard lock(impl_->mutex);
  Transaction t(impl_->connection);
  impl_->insert_records(records);
  t.commit();
}

std::vector<TuningRecord> TuningDb::records_of(const RecordKey& key) {
  std::lock_guard lock(impl_->mutex);
  Statement s = impl_->connection.prepare(std::string(kSelectRecord) + R"sql(
    WHERE m.workload_id = (SELECT id FROM workloads WHERE key = ?)
      AND m.target_fingerprint = ? AND m.backend = ? ORDER BY m.id)sql");
  s.bind(1, key.workload).bind(2, key.target_fingerprint).bind(3, key.backend);
  return read_all(s, impl_->bad_rows);
}

std::string TuningDb::location() const { return impl_->connection.path(); }

std::optional<Correction> TuningDb::correction(const CorrectionKey& key) {
  std::lock_guard lock(impl_->mutex);
  return impl_->read_correction(key, Versions::current());
}

void TuningDb::add_correction(const CorrectionKey& key, const Correction& session) {
  const Versions now = Versions::current();
  std::lock_guard lock(impl_->mutex);
  Transaction t(impl_->connection);  // the read and the write under one lock: no job's rows are lost
  const Correction kept = merge_corrections(impl_->read_correction(key, now), session);
  impl_->connection
      .prepare("INSERT OR REPLACE INTO corrections (op, target_fingerprint, backend, compiler_version, "
               "cost_model_version, json, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .bind(1, key.op).bind(2, key.target_fingerprint).bind(3, key.backend).bind(4, now.compiler)
      .bind(5, now.cost_model).bind(6, kept.to_json().dump()).bind(7, static_cast<int64_t>(std::time(nullptr)))
      .run();
  t.commit();
}

std::map<CorrectionKey, Correction> TuningDb::corrections() {
  std::lock_guard lock(impl_->mutex);
  std::map<CorrectionKey, Correction> out;
  if (impl_->version < 2) return out;
  const Versions now = Versions::current();
  std::vector<CorrectionKey> keys;
  for (Statement s = impl_->connection.prepare("SELECT op, target_fingerprint, backend FROM corrections ORDER BY rowid");
       s.step();)
    keys.push_back({s.text(0), s.text(1), s.text(2)});
  for (const CorrectionKey& key : keys)
    if (std::optional<Correction> c = impl_->read_correction(key, now)) out.emplace(key, std::move(*c));
  return out;
}

void TuningDb::remember_target(const Target& target) {
  std::lock_guard lock(impl_->mutex);
  Transaction t(impl_->connection);
  impl_->connection
      .prepare("INSERT INTO targets (fingerprint, name, json) VALUES (?1, ?2, ?3) "
               "ON CONFLICT (fingerprint) DO UPDATE SET name = ?2, json = ?3")
      .bind(1, target.fingerprint()).bind(2, target.name).bind(3, target.to_json().dump())
      .run();
  t.commit();
}

std::vector<TuningRecord> TuningDb::records(const std::string& op) {
  std::lock_guard lock(impl_->mutex);
  Statement s = impl_->connection.prepare(std::string(kSelectRecord) +
                                          "WHERE ?1 = '' OR w.op = ?1 ORDER BY m.id");
  s.bind(1, op);
  return read_all(s, impl_->bad_rows);
}

size_t TuningDb::count_records(const std::string& op) {
  std::lock_guard lock(impl_->mutex);
  Statement s = impl_->connection.prepare(
      "SELECT count(*) FROM measurements WHERE ?1 = '' OR workload_id IN (SELECT id FROM workloads WHERE op = ?1)");
  s.bind(1, op).step();
  return static_cast<size_t>(s.integer(0));
}

std::vector<TuningRecord> TuningDb::best_records(const std::string& op) {
  std::lock_guard lock(impl_->mutex);
  Connection& c = impl_->connection;
  BestScan scan(c, Versions::current());
  Statement rows = c.prepare(BestScan::kColumns);
  for (rows.bind(1, op); rows.step();) scan.consider(rows);
  Statement winner = c.prepare(std::string(kSelectRecord) + "WHERE m.id = ?");
  RecordReader reader;
  std::vector<TuningRecord> best;
  scan.for_each([&](const BestScan::Row& r) {
    // A winner whose workload, config or target row is missing (no database pto-tune
    // wrote has one) is left out by the joins.
    if (winner.bind(1, r.id).step())
      if (auto record = reader.read(winner, impl_->bad_rows)) best.push_back(std::move(*record));
    winner.reset();
  });
  std::sort(best.begin(), best.end(), [](const TuningRecord& a, const TuningRecord& b) { return a.key() < b.key(); });
  return best;
}

BestConfigs TuningDb::best_configs() {
  std::lock_guard lock(impl_->mutex);
  Connection& c = impl_->connection;
  BestScan scan(c, Versions::current());
  LeadTally leads;
  Statement rows = c.prepare(BestScan::kColumns);
  for (rows.bind(1, std::string_view("")); rows.step();) {  // every op
    leads.consider(rows, scan.consider(rows), scan.fresh(rows));
  }

  // The winners' workloads, configs and targets, each read and parsed once. A winner
  // whose workload, config or target row is missing (no database pto-tune wrote has
  // one) is left out, as best_records()'s joins leave such measurements out.
  BestConfigs out;
  // Workload ids are dense (INTEGER PRIMARY KEY): by id, where each winner's went in
  // `out`, kWanted until read.
  constexpr size_t kAbsent = SIZE_MAX, kWanted = SIZE_MAX - 1;
  int64_t last_id = 0;
  scan.for_each([&](const BestScan::Row& r) { last_id = std::max(last_id, r.workload_id); });
  std::vector<size_t> workloads(static_cast<size_t>(last_id) + 1, kAbsent);
  scan.for_each([&](const BestScan::Row& r) { workloads[static_cast<size_t>(r.workload_id)] = kWanted; });
  Statement workload_rows = c.prepare("SELECT id, key FROM workloads WHERE id <= ?");
  for (workload_rows.bind(1, last_id); workload_rows.step();) {
    const int64_t id = workload_rows.integer(0);
    size_t& slot = workloads[static_cast<size_t>(id)];
    if (slot != kWanted) continue;
    std::string key = workload_rows.text(1);
    auto workload = impl_->bad_rows.parsed(row_name("workload", id), [&] { return Workload::parse_key(key); });
    slot = workload ? out.workloads.size() : kAbsent;
    if (!workload) continue;
    out.workload_keys.push_back(std::move(key));
    out.workloads.push_back(std::move(*workload));
  }
  std::unordered_map<std::string, std::string> target_names;
  for (Statement s = c.prepare("SELECT fingerprint, name FROM targets"); s.step();) target_names.emplace(s.text(0), s.text(1));
  std::vector<size_t> targets;
  for (const std::string& fp : scan.fingerprints()) {
    const auto it = target_names.find(fp);
    targets.push_back(it == target_names.end() ? kAbsent : out.targets.size());
    if (it != target_names.end()) out.targets.push_back({it->second, fp});
  }
  std::unordered_map<int64_t, size_t> configs;  // config id -> index in out.configs
  out.entries.reserve(out.workloads.size());
  scan.for_each([&](const BestScan::Row& r) {
    const size_t workload = workloads[static_cast<size_t>(r.workload_id)], target = targets[r.target];
    if (workload >= kWanted || target == kAbsent) return;
    auto [config, added] = configs.try_emplace(r.config_id, out.configs.size());
    if (added) {
      const std::string& text = scan.config_text(r.config_id);
      auto parsed = text.empty() ? std::nullopt
                                 : impl_->bad_rows.parsed(row_name("config", r.config_id),
                                                          [&] { return TileConfig::parse(text); });
      if (parsed) out.configs.push_back(std::move(*parsed));
      else config->second = kAbsent;
    }
    if (config->second == kAbsent) return;
    out.entries.push_back({workload, config->second, target, scan.backends()[r.backend], r.versions,
                           leads.errors({r.workload_id, r.target, r.backend}),
                           leads.error_of({r.workload_id, r.target, r.backend}, r.id)});
  });
  return out;
}

namespace {

// `best` (one record per key) and, of `all`, the rows LeadTally reads for those keys:
// the default's and the others within kNearBest of the key's best other.
std::vector<TuningRecord> with_lookup_evidence(std::vector<TuningRecord> best, const std::vector<TuningRecord>& all) {
  const auto evidence = [](const TuningRecord& r) {
    return r.usable() && LeadTally::counts(r.fresh(), r.time_ns(), r.measurement.predicted_ns);
  };
  std::map<RecordKey, double> fastest_other;  // per key of `best`
  for (const TuningRecord& r : best) fastest_other.emplace(r.key(), std::numeric_limits<double>::infinity());
  for (const TuningRecord& r : all) {
    const auto it = fastest_other.find(r.key());
    if (it != fastest_other.end() && evidence(r) && r.strategy != LeadTally::kDefaultStrategy)
      it->second = std::min(it->second, r.time_ns());
  }
  std::set<std::string> shipped;
  for (const TuningRecord& r : best) shipped.insert(r.to_json().dump());
  for (const TuningRecord& r : all) {
    const auto it = fastest_other.find(r.key());
    if (it == fastest_other.end() || !evidence(r)) continue;
    const bool near = r.strategy == LeadTally::kDefaultStrategy || r.time_ns() <= LeadTally::kNearBest * it->second;
    if (near && shipped.insert(r.to_json().dump()).second) best.push_back(r);
  }
  return best;
}

}  // namespace

size_t TuningDb::export_json(const std::string& file, const std::string& op) {
  const Versions now = Versions::current();
  refuse_output_onto_input(file, location(), "the export file", "the database");
  const std::vector<TuningRecord> best = with_lookup_evidence(best_records(op), records(op));
  std::ostringstream text;
  JsonListWriter records(text,
                         {{"format", "pto-tune-configs"},
                          {"version", kExportFormatVersion},
                          {"compiler", now.compiler},
                          {"cost_model", now.cost_model}},
                         "records");
  for (const TuningRecord& r : best) records.add(r.to_json());
  records.finish();
  write_output_file(file, std::move(text).str(), "the export file");
  return best.size();
}

size_t TuningDb::import_json(const std::string& file) {
  const search::ImportedRecords imported =
      records_from_export(json_read::read_text_file(file, "export file", json_read::kMaxExportBytes), file);
  return import_records(imported.records, imported.where);
}

size_t TuningDb::import_records(const std::vector<TuningRecord>& records, const std::vector<std::string>& where) {
  search::ImportChecker checker;
  for (size_t i = 0; i < records.size(); ++i) {
    try {
      checker.check(records[i]);
    } catch (const Error& e) {
      fail(e.category(), where.at(i) + ": " + e.what());
    }
  }
  std::lock_guard lock(impl_->mutex);
  Transaction t(impl_->connection);
  const size_t added = impl_->insert_records(records);
  t.commit();
  return added;
}

MergeSummary TuningDb::merge(const std::vector<std::string>& inputs, const std::string& out,
                             const std::optional<std::set<std::string>>& only_workloads) {
  MergeSummary summary;
  summary.inputs = inputs.size();
  // Open everything first: a bad input stops the merge before `out` changes.
  std::vector<std::unique_ptr<TuningDb>> sources;
  for (const std::string& path : inputs) sources.push_back(open(path, OpenMode::ReadOnly));
  std::unique_ptr<TuningDb> target = open(out, OpenMode::ReadWrite);

  std::vector<TuningRecord> merged;
  for (const auto& source : sources)
    for (TuningRecord& r : source->records())
      if (!only_workloads || only_workloads->contains(r.workload.key())) merged.push_back(std::move(r));
  for (const auto& source : sources) summary.skipped += source->skipped_rows();

  // Each merged key's best usable record, of the inputs and `out`: for the summary.
  std::map<RecordKey, const TuningRecord*> best;
  const auto consider = [&](const TuningRecord& r) {
    if (!r.usable() || (only_workloads && !only_workloads->contains(r.workload.key()))) return;
    const auto [it, added] = best.emplace(r.key(), &r);
    if (!added && search::better(r, *it->second)) it->second = &r;
  };
  for (const TuningRecord& r : merged) consider(r);
  const std::vector<TuningRecord> held = target->best_records();
  summary.skipped += target->skipped_rows();
  for (const TuningRecord& r : held) consider(r);
  summary.keys = best.size();
  for (const auto& [key, r] : best) summary.stale += !r->fresh();
  std::lock_guard lock(target->impl_->mutex);
  Transaction t(target->impl_->connection);
  summary.added = target->impl_->insert_records(merged);
  t.commit();
  return summary;
}

size_t TuningDb::skipped_rows() const { return impl_->bad_rows.count(); }

std::vector<std::string> TuningDb::check() {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::string> problems;
  Connection& c = impl_->connection;
  for (Statement s = c.prepare("PRAGMA integrity_check"); s.step();) {
    if (s.text_view(0) != "ok") problems.push_back("integrity: " + s.text(0));
  }
  for (Statement s = c.prepare("PRAGMA foreign_key_check"); s.step();)
    problems.push_back("foreign key: a row of '" + s.text(0) + "' points at a missing '" + s.text(2) + "'");
  for (std::string& p : schema_problems(c)) problems.push_back("schema: " + p);
  // Every row must be a record the tuner could have written (search::ImportChecker).
  RecordReader reader;
  search::ImportChecker checker;
  for (Statement s = c.prepare(std::string(kSelectRecord) + "ORDER BY m.id"); s.step();) {
    try {
      checker.check(reader.parse(s));
    } catch (const Error& e) {
      problems.push_back(row_name("measurement", RecordReader::row_id(s)) + ": " + e.what());
    }
  }
  if (const int v = schema_version(c); v != current_schema_version())
    problems.push_back("schema: version " + std::to_string(v) + ", expected " + std::to_string(current_schema_version()));
  return problems;
}

}  // namespace pto::db
