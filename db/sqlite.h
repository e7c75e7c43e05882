// A thin RAII layer over the SQLite C API for db/: a connection, prepared statements
// with typed binding and reading, and a transaction guard that rolls back unless
// committed. Every SQLite failure becomes a pto::Error naming the file and the
// statement: Db for a file that is not a usable database (SQLITE_NOTADB, CORRUPT,
// READONLY, CANTOPEN), Io for a good database failing at run time (BUSY past the
// timeout, FULL, IOERR). Nothing outside db/ includes this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace pto::db {

class Statement;

class Connection {
 public:
  // Inspect: read-only and immutable — SQLite creates no -wal or -shm file beside it
  // and takes no lock, so a file that turns out not to be ours is left exactly as it
  // was (what it reads may lag a concurrent writer: fine for validation only).
  enum class Mode { ReadOnly, ReadWrite, Inspect };
  // Opens `path` (ReadWrite creates it), with a busy timeout so that concurrent
  // writers wait for one another instead of failing.
  Connection(const std::string& path, Mode mode, int busy_timeout_ms = 60000);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void exec(std::string_view sql);  // one or more statements without results
  Statement prepare(std::string_view sql);
  int changes() const;  // rows the last INSERT/UPDATE/DELETE changed
  const std::string& path() const { return path_; }

  // Throws the pto::Error for SQLite result `rc` while doing `what`.
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
