// Detects that the HTTP client of the current request has gone away while its handler waits on the engine,
// so the generation can be cancelled within one window instead of running to max_tokens. cpp-httplib 0.11
// hands handlers no socket, so the probe finds the connection's descriptor by its address pair (unique per
// TCP connection) and asks the kernel whether the peer has hung up (POLLRDHUP). The descriptor stays open
// for as long as the handler runs, because the thread that owns it is the one running the handler.
#pragma once
#include <string>

namespace strata {

class ClientProbe {
 public:
  ClientProbe() = default;
  // Looks up the socket whose local and peer addresses match; an unknown connection probes as "present".
  static ClientProbe find(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);
  bool valid() const { return fd_ >= 0; }
  bool gone() const;

 private:
  explicit ClientProbe(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace strata
