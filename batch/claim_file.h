// ClaimFile: hands out the numbers 0, 1, 2, ... once each to the `pto-tune batch
// --jobs N` workers, separate processes, through one file: a worker that finishes a
// workload claims the next one, so no worker sits idle while another still holds a
// queue of its own (a fixed every-N-th split left a few long workloads on one worker).
//
// A claim appends one byte to the file (O_APPEND: the kernel moves the end and writes
// as one step, so no two claims get the same offset) and is the offset it wrote at.
// Nothing is held between claims, so a worker that dies blocks nobody.
#pragma once

#include <cstddef>
#include <string>

namespace pto::batch {

class ClaimFile {
 public:
  explicit ClaimFile(std::string path) : path_(std::move(path)) {}
  // The next number nobody has claimed. Io Error naming the file when it cannot be written.
  size_t claim() const;

 private:
  std::string path_;
};

}  // namespace pto::batch
