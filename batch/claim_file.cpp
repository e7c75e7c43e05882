#include "batch/claim_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace pto::batch {

size_t ClaimFile::claim() const {
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
  if (fd < 0) fail(ErrorCategory::Io, "batch: cannot open the claim file '" + path_ + "': " + std::strerror(errno));
  const bool written = ::write(fd, "c", 1) == 1;
  const off_t end = written ? ::lseek(fd, 0, SEEK_CUR) : -1;  // this descriptor's offset: just past our byte
  ::close(fd);
  if (end < 1) fail(ErrorCategory::Io, "batch: cannot write the claim file '" + path_ + "'");
  return static_cast<size_t>(end - 1);
}

}  // namespace pto::batch
