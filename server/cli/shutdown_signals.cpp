#include "server/cli/shutdown_signals.hpp"

#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <thread>

#include <spdlog/spdlog.h>

namespace strata {
namespace {

sigset_t shutdown_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void block_shutdown_signals() {
  sigset_t set = shutdown_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_for_shutdown_signal() {
  sigset_t set = shutdown_set();
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

void exit_on_second_signal() {
  std::thread([] {
    const int sig = wait_for_shutdown_signal();
    spdlog::warn("second signal ({}) during shutdown: exiting now", sig == SIGINT ? "SIGINT" : "SIGTERM");
    spdlog::default_logger()->flush();
    std::_Exit(130);
  }).detach();
}

}  // namespace strata
