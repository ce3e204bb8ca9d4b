#include "process.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace halformer::tuner {

std::string process_result::describe() const {
  if (timed_out)
    return "timed out";
  if (signal)
    return std::string("killed by signal ") + strsignal(signal);
  return "exit code " + std::to_string(exit_code);
}

namespace {
// In the child: its own process group (so a time-out kills what it started),
// stdout and stderr to the pipes, then `argv`.
[[noreturn]] void exec_child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                             int out_pipe[2], int err_pipe[2]) {
  setpgid(0, 0);
  dup2(out_pipe[1], 1);
  dup2(err_pipe[1], 2);
  close(out_pipe[0]), close(err_pipe[0]), close(out_pipe[1]), close(err_pipe[1]);
  for (const auto& e : extra_env)
    putenv(const_cast<char*>(e.c_str()));
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "cannot run %s: %s\n", args[0], strerror(errno));
  _exit(127);
}

// Reads the child's stdout and stderr until both close or the deadline passes
// (then the child's process group is killed).
void collect_output(pid_t pid, int out_fd, int err_fd, double timeout_s, process_result& r) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, int(std::min<long long>(left.count(), 1000))) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, std::size_t(n));
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0)
      close(f.fd);
}
} // namespace

process_result run_process(const std::vector<std::string>& argv, double timeout_s,
                           const std::vector<std::string>& extra_env) {
  process_result r;
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    r.err = "pipe failed";
    return r;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    r.err = std::string("fork failed: ") + strerror(errno);
    return r;
  }
  if (pid == 0)
    exec_child(argv, extra_env, out_pipe, err_pipe);
  setpgid(pid, pid);
  close(out_pipe[1]), close(err_pipe[1]);
  collect_output(pid, out_pipe[0], err_pipe[0], timeout_s, r);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!r.timed_out) {
    if (WIFSIGNALED(status))
      r.signal = WTERMSIG(status);
    if (WIFEXITED(status))
      r.exit_code = WEXITSTATUS(status);
  }
  return r;
}

} // namespace halformer::tuner
