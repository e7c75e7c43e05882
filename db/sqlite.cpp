#include "db/sqlite.h"

#include <sqlite3.h>

#include <cstdio>

#include "core/error.h"

namespace pto::db {

namespace {

// Result codes that say the file itself is not usable as a database.
bool is_bad_file(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return true;
    default:
      return false;
  }
}

// A file: URI for `path` with `query`; '%', '?' and '#' are the characters a URI path
// cannot carry as they are.
std::string file_uri(const std::string& path, const char* query) {
  std::string uri = "file:";
  for (char ch : path) {
    if (ch == '%' || ch == '?' || ch == '#') {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(ch));
      uri += hex;
    } else {
      uri += ch;
    }
  }
  return uri + "?" + query;
}

}  // namespace

bool SqliteError::corrupt() const { return (code_ & 0xff) == SQLITE_CORRUPT || (code_ & 0xff) == SQLITE_NOTADB; }
bool SqliteError::not_a_database() const { return (code_ & 0xff) == SQLITE_NOTADB; }
bool SqliteError::busy() const { return (code_ & 0xff) == SQLITE_BUSY || (code_ & 0xff) == SQLITE_LOCKED; }

Connection::Connection(const std::string& path, Mode mode, int busy_timeout_ms) : path_(path) {
  int flags = SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_URI;
  std::string uri = file_uri(path, "mode=ro");
  switch (mode) {
    case Mode::ReadOnly: flags |= SQLITE_OPEN_READONLY; break;
    case Mode::ReadWrite: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; uri = file_uri(path, "mode=rwc"); break;
    case Mode::Immutable: flags |= SQLITE_OPEN_READONLY; uri = file_uri(path, "mode=ro&immutable=1"); break;
    case Mode::RollBack: flags |= SQLITE_OPEN_READWRITE; uri = file_uri(path, "mode=rw"); break;
  }
  const int rc = sqlite3_open_v2(uri.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) fail(rc, "opening it");
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  sqlite3_extended_result_codes(db_, 1);
}

Connection::~Connection() { sqlite3_close_v2(db_); }

void Connection::fail(int rc, std::string_view what) const {
  // A rollback journal beside the file (another program's, or one that stopped mid-write)
  // is "hot": SQLite must roll it back before anyone reads, which a read-only open cannot.
  if (rc == SQLITE_READONLY_ROLLBACK) {
    throw SqliteError(ErrorCategory::Db,
                      "tuning database '" + path_ + "' has a hot journal '" + path_ +
                          "-journal' (a writer stopped mid-transaction) that only a writer may roll back, and "
                          "this one may not write the file or its folder: run a command that writes to it "
                          "(tune, db import) as a user who may",
                      rc);
  }
  const std::string message = "tuning database '" + path_ + "': " + std::string(what) + ": " +
                              (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
  throw SqliteError(is_bad_file(rc) ? ErrorCategory::Db : ErrorCategory::Io, message, rc);
}

void Connection::exec(std::string_view sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);
  if (rc != SQLITE_OK) fail(rc, sql.substr(0, 60));
}

Statement Connection::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) fail(rc, sql.substr(0, 60));
  return Statement(*this, stmt);
}

int Connection::changes() const { return sqlite3_changes(db_); }

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement::Statement(Statement&& other) noexcept : connection_(other.connection_), stmt_(other.stmt_) {
  other.stmt_ = nullptr;
}

Statement& Statement::bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  connection_->fail(rc, sqlite3_sql(stmt_));
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }
std::string Statement::text(int column) const { return std::string(text_view(column)); }

std::string_view Statement::text_view(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return p ? std::string_view(p, sqlite3_column_bytes(stmt_, column)) : std::string_view();
}

Transaction::Transaction(Connection& connection) : connection_(connection) {
  connection_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (done_) return;
  try {
    connection_.exec("ROLLBACK");
  } catch (const Error&) {
    // Already rolled back by SQLite (e.g. after SQLITE_FULL): nothing left to undo.
  }
}

void Transaction::commit() {
  connection_.exec("COMMIT");
  done_ = true;
}

}  // namespace pto::db
