// Names the calling thread (up to 15 characters on Linux), so `top -H`, `ps -L`, profilers and
// /proc/PID/task/*/comm tell the engine, the waker, the watchdog and the HTTP workers apart. Threads a
// named thread starts inherit its name (httplib's workers take the listener's).
#pragma once
#include <pthread.h>

namespace strata {

inline void name_this_thread(const char* name) {
#if defined(__linux__)
  pthread_setname_np(pthread_self(), name);
#else
  (void)name;
#endif
}

}  // namespace strata
