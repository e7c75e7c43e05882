#include "batch/batch_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include "core/error.h"

namespace pto::batch {

std::string journal_path(const std::string& db_path) { return db_path + ".batch-journal"; }

BatchJournal::BatchJournal(std::string path) : path_(std::move(path)) {
  std::ifstream in(path_);
  for (std::string word, key; in >> word && std::getline(in >> std::ws, key);) {
    if (word == "start") unfinished_.insert(key), started_.insert(key);
    if (word == "done") unfinished_.erase(key);
  }
}

std::string BatchJournal::line_key(const search::RecordKey& k) {
  return k.workload + " " + k.target_fingerprint + " " + k.backend;
}

void BatchJournal::note(const std::string& word, const search::RecordKey& key) const {
  const std::string line = word + " " + line_key(key) + "\n";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) fail(ErrorCategory::Io, "cannot write the batch journal '" + path_ + "'");
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!ok) fail(ErrorCategory::Io, "cannot write the batch journal '" + path_ + "'");
}

}  // namespace pto::batch
