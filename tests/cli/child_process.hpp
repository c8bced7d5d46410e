// Runs the real `strata` binary as a child process for CLI tests: arguments, extra environment, stdin
// text; captures stdout, stderr and the exit status, with a deadline so a hung child fails the test
// instead of hanging the suite.
#pragma once
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace strata::test {

struct RunResult {
  int exit_code = -1;  // -1: killed at the deadline (or by a signal)
  std::string out, err;
};

class ChildProcess {
 public:
  ChildProcess(const std::string& program, const std::vector<std::string>& args,
               const std::map<std::string, std::string>& env = {}, const std::string& stdin_text = "");
  ~ChildProcess();  // kills the child if it is still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Reads output until stderr contains `needle` (true) or the child exits / the deadline passes (false).
  bool wait_for_stderr(const std::string& needle, std::chrono::milliseconds deadline);
  void signal(int sig);
  // Reads everything until the child exits; kills it at the deadline.
  RunResult finish(std::chrono::milliseconds deadline);
  const std::string& err() const { return err_; }

 private:
  bool pump(std::chrono::milliseconds budget);  // one poll round; false once both pipes are closed
  int pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string out_, err_;
  bool reaped_ = false;
  int status_ = 0;
};

RunResult run_process(const std::string& program, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env = {}, const std::string& stdin_text = "",
                      std::chrono::milliseconds deadline = std::chrono::seconds(120));

}  // namespace strata::test
