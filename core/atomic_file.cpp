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

// Writes all of `text` to `fd`; false on any failure (errno set).
bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

[[noreturn]] void cannot_write(const std::string& what, const std::string& path, const std::string& why) {
  fail(ErrorCategory::Io, "cannot write " + what + " '" + path + "': " + why);
}

// A character device (/dev/null, a terminal) or a FIFO with a reader: written through,
// never replaced. O_NONBLOCK opens a FIFO only when something reads it (else ENXIO).
void write_through(const std::string& path, const std::string& text, const std::string& what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    cannot_write(what, path, errno == ENXIO ? "a FIFO that nothing reads" : std::string(std::strerror(errno)));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const bool written = write_all(fd, text);
  const int write_errno = errno;
  ::close(fd);
  if (!written) cannot_write(what, path, std::strerror(write_errno));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  fs::create_directories(folder, ec);
  if (ec) fail(ErrorCategory::Io, "cannot create the folder of " + what + " '" + path + "': " + ec.message());

  std::string pattern = (folder / ("." + target.filename().string() + ".XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());  // O_CREAT | O_EXCL: never an existing file or link
  if (fd < 0) fail(ErrorCategory::Io, "cannot write " + what + " '" + path + "': " + std::strerror(errno));
  const std::string temp(name.data());
  const bool written = write_all(fd, text) && ::fsync(fd) == 0;
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

void write_output_file(const std::string& given, const std::string& text, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(fs::path(given), ec);
  const std::string path = ec ? given : resolved.string();
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_character_file(status) || fs::is_fifo(status)) return write_through(path, text, what);
  if (fs::exists(status) && !fs::is_regular_file(status))
    cannot_write(what, given, "it exists and is not a regular file (nor a device or FIFO to write through)");
  write_file_atomically(path, text, what);
}

}  // namespace pto
