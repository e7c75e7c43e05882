#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"

namespace pto {

namespace {

// Writes all of `text` to `fd` and syncs it; false on any failure (errno set).
bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return ::fsync(fd) == 0;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text, const std::string& what) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) fail(ErrorCategory::Io, "cannot create the folder of " + what + " '" + path + "': " + ec.message());

  std::string pattern = (folder / ("." + target.filename().string() + ".XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());  // O_CREAT | O_EXCL: never an existing file or link
  if (fd < 0) fail(ErrorCategory::Io, "cannot write " + what + " '" + path + "': " + std::strerror(errno));
  const std::string temp(name.data());
  const bool written = write_all(fd, text);
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    ::unlink(temp.c_str());
    fail(ErrorCategory::Io, "cannot write " + what + " '" + path + "': " + std::strerror(written ? errno : write_errno));
  }
  ::chmod(temp.c_str(), 0644);  // mkstemp makes it 0600; a calibration or export is for everyone
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    ::unlink(temp.c_str());
    fail(ErrorCategory::Io, "cannot write " + what + " '" + path + "': " + std::strerror(rename_errno));
  }
}

}  // namespace pto
