#include "measure/isolation.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <sstream>
#include <thread>

#include "core/error.h"

extern char** environ;

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

// A command started in a process group of its own (run_command) is killed with its
// whole group: the shell's children (the user's interpreter and what it started) hold
// the output pipe and the device, and would outlive the shell.
void kill_and_reap(pid_t pid, bool whole_group) {
  if (whole_group) killpg(pid, SIGKILL);
  else kill(pid, SIGKILL);
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

namespace {

// Collects a started child: its output until both pipes close, then its exit, all
// before the deadline `timeout_s` after `start`; kills it (and with `whole_group` its
// process group) when the deadline passes. Closes both pipes.
ChildResult collect(pid_t pid, int out_fd, int err_fd, Clock::time_point start, double timeout_s,
                    bool whole_group = false) {
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(std::max(timeout_s, 0.0)));
  ChildResult result;
  int status = 0;
  bool finished = drain(out_fd, err_fd, deadline, result.output, result.stderr_tail) &&
                  reap(pid, deadline, status);
  ::close(out_fd);
  ::close(err_fd);
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (result.stderr_tail.size() > kStderrTailBytes)
    result.stderr_tail.erase(0, result.stderr_tail.size() - kStderrTailBytes);

  if (!finished) {
    kill_and_reap(pid, whole_group);
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

void close_all(std::initializer_list<int> fds) {
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
}

// The request as an unnamed in-memory file, read from its start: the worker's stdin.
// A file rather than a pipe: the parent never blocks on a request larger than a pipe
// buffer, and a worker that dies early cannot raise SIGPIPE in the parent.
int request_file(const std::string& request) {
  int fd = memfd_create("pto-tune-worker-request", MFD_CLOEXEC);
  if (fd < 0)
    fail(ErrorCategory::Io, std::string("cannot create the worker's request file: ") + std::strerror(errno));
  write_all(fd, request);
  if (lseek(fd, 0, SEEK_SET) != 0) {
    ::close(fd);
    fail(ErrorCategory::Io, std::string("cannot rewind the worker's request file: ") + std::strerror(errno));
  }
  return fd;
}

bool is_executable(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

// The folder of the binary or shared object this function was loaded from.
std::filesystem::path folder_of_this_code() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&folder_of_this_code), &info) == 0 || !info.dli_fname ||
      !*info.dli_fname)
    return {};
  std::error_code ec;
  return std::filesystem::weakly_canonical(info.dli_fname, ec).parent_path();
}

std::filesystem::path folder_of_this_executable() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
}

}  // namespace

ChildResult run_in_child(const std::function<std::string()>& work, double timeout_s) {
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  auto start = Clock::now();
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int fork_errno = errno;
    close_all({out.read, out.write, err.read, err.write});
    fail(ErrorCategory::Io,
         std::string("cannot fork a measurement child: ") + std::strerror(fork_errno));
  }
  if (pid == 0) child_main(work, parent, out, err);

  ::close(out.write);
  ::close(err.write);
  return collect(pid, out.read, err.read, start, timeout_s);
}

namespace {

// Spawns argv[0] with `request` on its stdin and collects it (see collect); with
// `own_group` in a process group of its own, killed as a whole on timeout. `what`
// names it in an io Error when the pipes or the spawn fail.
ChildResult spawn_with_request(std::vector<std::string> argv_text, const std::string& request,
                               double timeout_s, bool own_group, const std::string& what) {
  int in = request_file(request);
  Pipe out{}, err{};
  try {
    out = make_pipe();
    err = make_pipe();
  } catch (...) {
    close_all({in, out.read, out.write});
    throw;
  }
  // dup2 clears close-on-exec on the child's three descriptors; every other
  // descriptor of this process, these pipes' other ends included, is close-on-exec.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.write, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (own_group) {
    // Process group 0: a new group led by the child. A terminal's Ctrl-C then reaches
    // pto-tune alone, which stops after the measurement in flight, as on the cpu backend.
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
  }
  std::vector<char*> argv;
  for (std::string& arg : argv_text) argv.push_back(arg.data());
  argv.push_back(nullptr);

  auto start = Clock::now();
  pid_t pid = 0;
  int spawn_errno = posix_spawn(&pid, argv_text.front().c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close_all({in, out.write, err.write});
  if (spawn_errno != 0) {
    close_all({out.read, err.read});
    fail(ErrorCategory::Io, "cannot start " + what + ": " + std::strerror(spawn_errno));
  }
  return collect(pid, out.read, err.read, start, timeout_s, own_group);
}

}  // namespace

ChildResult run_in_worker(const std::string& executable, const std::vector<std::string>& args,
                          const std::string& request, double timeout_s) {
  std::vector<std::string> argv = {executable};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn_with_request(std::move(argv), request, timeout_s, false,
                            "the measurement worker " + executable);
}

ChildResult run_command(const std::string& shell_command, const std::string& request, double timeout_s) {
  return spawn_with_request({"/bin/sh", "-c", shell_command}, request, timeout_s, true,
                            "the measurement command '" + shell_command + "'");
}

std::string worker_executable() {
  constexpr const char* kName = "pto-tune-worker";
  if (const char* chosen = std::getenv("PTO_TUNE_WORKER"); chosen && *chosen) {
    if (!is_executable(chosen))
      fail(ErrorCategory::Io, std::string("PTO_TUNE_WORKER is ") + chosen + ", which is not an executable file");
    return chosen;
  }
  std::vector<std::filesystem::path> places;
  for (const auto& folder : {folder_of_this_code(), folder_of_this_executable()})
    if (!folder.empty()) places.push_back(folder / kName);
#ifdef PTO_TUNE_WORKER_BUILD_PATH
  places.emplace_back(PTO_TUNE_WORKER_BUILD_PATH);
#endif
  std::string looked;
  for (const auto& place : places) {
    if (is_executable(place)) return place.string();
    looked += (looked.empty() ? "" : ", ") + place.string();
  }
  fail(ErrorCategory::Io, std::string("cannot find the measurement worker ") + kName + " (looked at: " +
                              looked + "); set PTO_TUNE_WORKER to its path");
}

}  // namespace pto::measure
