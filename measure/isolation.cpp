#include "measure/isolation.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace pto::measure {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kStderrTailBytes = 600;

struct Pipe {
  int read = -1, write = -1;
};

Pipe make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    fail(ErrorCategory::Io, std::string("cannot create a pipe to a measurement child: ") +
                                std::strerror(errno));
  return {fds[0], fds[1]};
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone or stopped listening: nothing to tell
    done += static_cast<size_t>(n);
  }
}

// Runs in the forked child; never returns.
[[noreturn]] void child_main(const std::function<std::string()>& work, pid_t parent, Pipe out,
                             Pipe err) {
  // A child must not outlive a tuner that was killed.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  ::close(out.read);
  ::close(err.read);
  dup2(err.write, STDERR_FILENO);

  int code = 0;
  std::string result;
  // A fresh thread gets a libgomp thread pool of its own (see the header).
  std::thread worker([&] {
    try {
      result = work();
    } catch (const std::exception& e) {
      write_all(STDERR_FILENO, e.what());
      code = kWorkThrewExitCode;
    } catch (...) {
      write_all(STDERR_FILENO, "unknown exception");
      code = kWorkThrewExitCode;
    }
  });
  worker.join();
  if (code == 0) write_all(out.write, result);
  _exit(code);
}

// Reads the child's pipes until both close or the deadline passes; false on timeout.
bool drain(int out_fd, int err_fd, Clock::time_point deadline, std::string& out, std::string& err) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_count = 2;
  char buffer[1 << 16];
  while (open_count > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    int ready = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count() + 1, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return false;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;
        --open_count;
        continue;
      }
      std::string& sink = i == 0 ? out : err;
      sink.append(buffer, static_cast<size_t>(n));
      if (i == 1 && err.size() > 2 * kStderrTailBytes) err.erase(0, err.size() - kStderrTailBytes);
    }
  }
  return true;
}

// Waits for the child to exit until the deadline; false on timeout.
bool reap(pid_t pid, Clock::time_point deadline, int& status) {
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) return true;  // already reaped: nothing left to wait for
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::string format_seconds(double s) {
  std::ostringstream text;
  text << s;
  return text.str();
}

}  // namespace

std::string ChildResult::describe() const {
  std::string what;
  switch (end) {
    case End::TimedOut:
      return "no result within " + format_seconds(wall_s) + " s; the child process was killed";
    case End::Signaled:
      what = "the child process was killed by signal " + std::to_string(signal) + " (" +
             strsignal(signal) + ")";
      break;
    case End::Exited:
      what = exit_code == 0 ? "the child process exited without an error"
                            : "the child process exited with code " + std::to_string(exit_code);
      break;
  }
  if (!stderr_tail.empty()) what += ": " + stderr_tail;
  return what;
}

ChildResult run_in_child(const std::function<std::string()>& work, double timeout_s) {
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(std::max(timeout_s, 0.0)));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int fork_errno = errno;
    for (int fd : {out.read, out.write, err.read, err.write}) ::close(fd);
    fail(ErrorCategory::Io,
         std::string("cannot fork a measurement child: ") + std::strerror(fork_errno));
  }
  if (pid == 0) child_main(work, parent, out, err);

  ::close(out.write);
  ::close(err.write);
  ChildResult result;
  int status = 0;
  bool finished = drain(out.read, err.read, deadline, result.output, result.stderr_tail) &&
                  reap(pid, deadline, status);
  ::close(out.read);
  ::close(err.read);
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (result.stderr_tail.size() > kStderrTailBytes)
    result.stderr_tail.erase(0, result.stderr_tail.size() - kStderrTailBytes);

  if (!finished) {
    kill_and_reap(pid);
    result.end = ChildResult::End::TimedOut;
    result.wall_s = timeout_s;
  } else if (WIFSIGNALED(status)) {
    result.end = ChildResult::End::Signaled;
    result.signal = WTERMSIG(status);
  } else {
    result.end = ChildResult::End::Exited;
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace pto::measure
