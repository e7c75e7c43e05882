// BatchJournal: which workloads batch runs on one database started and finished, a
// file beside the database (journal_path), one line per event, appended. It is what
// tells a half-tuned workload (started, never done: a killed run) from a tuned one: the
// first goes on from its stored records whatever they hold, the second is skipped when
// it holds a fresh record; and with a shared budget what the journal's workloads have
// stored counts as spent.
//
// Lines are "start KEY" and "done KEY", KEY the workload key, target fingerprint and
// backend. Each is one write to a file opened O_APPEND, so the short lines of parallel
// workers stay whole and never interleave.
#pragma once

#include <set>
#include <string>

#include "search/tuning_record.h"

namespace pto::batch {

// The journal of the database at `db_path`: DB.batch-journal.
std::string journal_path(const std::string& db_path);

class BatchJournal {
 public:
  // Reads what is there; a missing file is an empty journal.
  explicit BatchJournal(std::string path);

  // Started by a run that did not finish it.
  bool unfinished(const search::RecordKey& key) const { return unfinished_.contains(line_key(key)); }
  bool started(const search::RecordKey& key) const { return started_.contains(line_key(key)); }
  // Appends "start KEY" or "done KEY" to the file (this object's view stays as read). Io
  // Error naming the file when it cannot be written.
  void note_start(const search::RecordKey& key) const { note("start", key); }
  void note_done(const search::RecordKey& key) const { note("done", key); }

 private:
  static std::string line_key(const search::RecordKey& key);
  void note(const std::string& word, const search::RecordKey& key) const;

  std::string path_;
  std::set<std::string> unfinished_, started_;
};

}  // namespace pto::batch
