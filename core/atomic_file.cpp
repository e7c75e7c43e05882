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

// Whose fault a failed write is: a path that cannot be written as named (a folder, a
// name too long, a file where a folder should be, a link loop, no permission, a FIFO
// nobody reads) is the user's, a usage error as a bad input path is
// (json_read::read_text_file); a disk that fails or fills up is an I/O error.
ErrorCategory category_of(int error) {
  switch (error) {
    case EISDIR: case ENOTDIR: case ENAMETOOLONG: case ELOOP: case ENXIO: case EACCES: case EPERM: case EROFS:
    case ENOENT: case EEXIST:
      return ErrorCategory::Usage;
    default:
      return ErrorCategory::Io;
  }
}

[[noreturn]] void cannot_write(const std::string& what, const std::string& path, int error,
                               const std::string& why = "") {
  fail(category_of(error), "cannot write " + what + " '" + path + "': " + (why.empty() ? std::strerror(error) : why));
}

// A character device (/dev/null, a terminal) or a FIFO with a reader: written through,
// never replaced. O_NONBLOCK opens a FIFO only when something reads it (else ENXIO).
void write_through(const std::string& path, const std::string& text, const std::string& what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) cannot_write(what, path, errno, errno == ENXIO ? "a FIFO that nothing reads" : "");
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const bool written = write_all(fd, text);
  const int write_errno = errno;
  ::close(fd);
  if (!written) cannot_write(what, path, write_errno);
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  fs::create_directories(folder, ec);
  if (ec) fail(category_of(ec.value()), "cannot create the folder of " + what + " '" + path + "': " + ec.message());

  std::string pattern = (folder / ("." + target.filename().string() + ".XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());  // O_CREAT | O_EXCL: never an existing file or link
  if (fd < 0) cannot_write(what, path, errno);
  const std::string temp(name.data());
  const bool written = write_all(fd, text) && ::fsync(fd) == 0;
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    ::unlink(temp.c_str());
    cannot_write(what, path, written ? errno : write_errno);
  }
  ::chmod(temp.c_str(), 0644);  // mkstemp makes it 0600; a calibration or export is for everyone
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    ::unlink(temp.c_str());
    cannot_write(what, path, rename_errno);
  }
}

void write_output_file(const std::string& given, const std::string& text, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(fs::path(given), ec);
  // A link that cannot be followed (a loop) is not replaced by a file.
  std::error_code link_ec;
  if (ec && fs::is_symlink(fs::symlink_status(given, link_ec))) cannot_write(what, given, ec.value());
  const std::string path = ec ? given : resolved.string();
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_character_file(status) || fs::is_fifo(status)) return write_through(path, text, what);
  if (fs::exists(status) && !fs::is_regular_file(status))
    cannot_write(what, given, EEXIST, "it exists and is not a regular file (nor a device or FIFO to write through)");
  write_file_atomically(path, text, what);
}

void refuse_output_onto_input(const std::string& output, const std::string& input, const std::string& what,
                              const std::string& input_what) {
  std::error_code ec;
  if (std::filesystem::equivalent(output, input, ec))
    usage_error(what + " '" + output + "' is " + input_what + " itself ('" + input + "'); name another file");
}

}  // namespace pto
