// A thin RAII layer over the SQLite C API for db/: a connection, prepared statements
// with typed binding and reading, and a transaction guard that rolls back unless
// committed. Every SQLite failure becomes a pto::Error naming the file and the
// statement: Db for a file that is not a usable database (SQLITE_NOTADB, CORRUPT,
// READONLY, CANTOPEN), Io for a good database failing at run time (BUSY past the
// timeout, FULL, IOERR). The error keeps SQLite's result code, so that what a failure
// means is decided from the code, never from the words of its message. Nothing
// outside db/ includes this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace pto::db {

class Statement;

// A failed SQLite call: the pto::Error it reports, with SQLite's (extended) result code.
class SqliteError : public Error {
 public:
  SqliteError(ErrorCategory category, const std::string& message, int code) : Error(category, message), code_(code) {}
  // SQLITE_CORRUPT or SQLITE_NOTADB: what SQLite read of the file is damaged.
  bool corrupt() const;
  // SQLITE_NOTADB: the file does not start as a SQLite database does.
  bool not_a_database() const;
  // SQLITE_BUSY or SQLITE_LOCKED: another connection held what this one needed.
  bool busy() const;

 private:
  int code_;
};

// How long a connection waits for another's lock before SQLITE_BUSY.
inline constexpr int kBusyTimeoutMs = 60000;

class Connection {
 public:
  // Immutable: read-only, and SQLite creates no -wal or -shm file beside it and takes
  // no lock. For a file that may turn out not to be ours (left exactly as it was), and
  // for a database in a folder we cannot write, where a WAL reader could not create
  // its -shm. Without the lock, a read may see pages a concurrent checkpoint is
  // rewriting: what it reads beside a live WAL is not to be trusted.
  // RollBack: a reader that may write, so that SQLite rolls a hot journal back as it
  // reads (the file must exist; nothing else is written).
  enum class Mode { ReadOnly, ReadWrite, Immutable, RollBack };
  // Opens `path` (ReadWrite creates it), with a busy timeout so that concurrent
  // writers wait for one another instead of failing.
  Connection(const std::string& path, Mode mode, int busy_timeout_ms = kBusyTimeoutMs);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void exec(std::string_view sql);  // one or more statements without results
  Statement prepare(std::string_view sql);
  int changes() const;  // rows the last INSERT/UPDATE/DELETE changed
  const std::string& path() const { return path_; }

  // Throws the SqliteError for SQLite result `rc` while doing `what`.
  [[noreturn]] void fail(int rc, std::string_view what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Statement {
 public:
  Statement(Connection& connection, sqlite3_stmt* stmt) : connection_(&connection), stmt_(stmt) {}
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;

  // Parameters are 1-based, as in SQLite; each returns *this so binds chain.
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  // Steps once: true while a row is available.
  bool step();
  void run();    // steps to completion (an INSERT or UPDATE) and resets
  void reset();  // ready to bind and step again

  int64_t integer(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  std::string_view text_view(int column) const;  // valid until the next step

 private:
  Connection* connection_;
  sqlite3_stmt* stmt_;
};

// BEGIN IMMEDIATE (takes the write lock up front, so a writer waits in the busy
// handler rather than failing on upgrade), rolled back in the destructor unless
// commit() was called.
class Transaction {
 public:
  explicit Transaction(Connection& connection);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& connection_;
  bool done_ = false;
};

}  // namespace pto::db
