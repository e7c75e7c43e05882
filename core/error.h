// The one error type that crosses module boundaries.
//
// Every failure pto-tune reports is a pto::Error carrying a category, so that the
// CLI can map it to an exit code (usage/infeasible/db -> 2, the rest -> 1) and callers
// can tell "your input is wrong" from "something broke". Messages name the bad
// value and where it came from.
#pragma once

#include <stdexcept>
#include <string>

namespace pto {

enum class ErrorCategory { Usage, Infeasible, Io, Db, Internal };

inline const char* to_string(ErrorCategory c) {
  switch (c) {
    case ErrorCategory::Usage: return "usage";
    case ErrorCategory::Infeasible: return "infeasible";
    case ErrorCategory::Io: return "io";
    case ErrorCategory::Db: return "db";
    case ErrorCategory::Internal: return "internal";
  }
  return "internal";
}

class Error : public std::runtime_error {
 public:
  Error(ErrorCategory category, const std::string& message)
      : std::runtime_error(message), category_(category) {}
  ErrorCategory category() const { return category_; }

 private:
  ErrorCategory category_;
};

[[noreturn]] inline void fail(ErrorCategory category, const std::string& message) {
  throw Error(category, message);
}
[[noreturn]] inline void usage_error(const std::string& message) { fail(ErrorCategory::Usage, message); }
[[noreturn]] inline void internal_error(const std::string& message) { fail(ErrorCategory::Internal, message); }

// Exit code the CLI returns for an error of this category. Db means "this database
// file cannot be used as given" (not a database, corrupt, a newer schema, read-only):
// bad input, like Usage. A good database failing at run time (a lock held past the
// busy timeout, a full disk) is an Io error, a runtime failure.
inline int exit_code(ErrorCategory c) {
  return (c == ErrorCategory::Usage || c == ErrorCategory::Infeasible || c == ErrorCategory::Db) ? 2 : 1;
}

}  // namespace pto
