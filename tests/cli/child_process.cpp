#include "tests/cli/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace strata::test {

ChildProcess::ChildProcess(const std::string& program, const std::vector<std::string>& args,
                           const std::map<std::string, std::string>& env, const std::string& stdin_text) {
  int out[2], err[2], in[2];
  if (pipe(out) != 0 || pipe(err) != 0 || pipe(in) != 0) throw std::runtime_error("pipe failed");
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {out[0], out[1], err[0], err[1], in[0], in[1]}) close(fd);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(program.c_str(), argv.data());
    std::fprintf(stderr, "exec %s: %s\n", program.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  close(in[0]);
  // The inputs used here are small; a write larger than the pipe buffer would need the poll loop too.
  if (!stdin_text.empty()) {
    ssize_t ignored = write(in[1], stdin_text.data(), stdin_text.size());
    (void)ignored;
  }
  close(in[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

bool ChildProcess::pump(std::chrono::milliseconds budget) {
  pollfd fds[2];
  int n = 0;
  if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
  if (err_fd_ >= 0) fds[n++] = {err_fd_, POLLIN, 0};
  if (n == 0) return false;
  if (poll(fds, n, static_cast<int>(budget.count())) <= 0) return true;
  for (int i = 0; i < n; ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buf[4096];
    ssize_t got = read(fds[i].fd, buf, sizeof buf);
    int& fd = fds[i].fd == out_fd_ ? out_fd_ : err_fd_;
    std::string& sink = fds[i].fd == out_fd_ ? out_ : err_;
    if (got > 0) {
      sink.append(buf, static_cast<size_t>(got));
    } else {
      close(fd);
      fd = -1;
    }
  }
  return true;
}

bool ChildProcess::wait_for_stderr(const std::string& needle, std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (err_.find(needle) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= until) return false;
    if (!pump(std::chrono::milliseconds(100))) return err_.find(needle) != std::string::npos;
  }
  return true;
}

void ChildProcess::signal(int sig) {
  if (!reaped_ && pid_ > 0) kill(pid_, sig);
}

RunResult ChildProcess::finish(std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (pump(std::chrono::milliseconds(100))) {
    if (std::chrono::steady_clock::now() >= until) {
      kill(pid_, SIGKILL);
      break;
    }
  }
  if (!reaped_) {
    waitpid(pid_, &status_, 0);
    reaped_ = true;
  }
  RunResult r;
  r.exit_code = WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  r.out = out_;
  r.err = err_;
  return r;
}

RunResult run_process(const std::string& program, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env, const std::string& stdin_text,
                      std::chrono::milliseconds deadline) {
  ChildProcess child(program, args, env, stdin_text);
  return child.finish(deadline);
}

}  // namespace strata::test
