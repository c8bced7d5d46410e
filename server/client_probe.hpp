// Detects that the HTTP client of the current request has gone away while its handler waits on the engine,
// so the generation can be cancelled within one window instead of running to max_tokens. cpp-httplib 0.11
// hands handlers no socket, so the probe finds the connection's descriptor by its address pair (unique per
// TCP connection) and asks the kernel whether the peer has hung up (POLLRDHUP). The descriptor stays open
// for as long as the handler runs, because the thread that owns it is the one running the handler.
#pragma once
#include <string>
#include <utility>

namespace strata {

class ClientProbe {
 public:
  // Remembers the connection's address pair. Finding its descriptor walks every open one, so that waits for
  // the first gone() (the stream's first wait, while the engine works on the request), not the request's
  // way to the engine; an unknown connection probes as "present".
  ClientProbe(std::string local_addr, int local_port, std::string remote_addr, int remote_port)
      : local_addr_(std::move(local_addr)), remote_addr_(std::move(remote_addr)), local_port_(local_port),
        remote_port_(remote_port) {}
  bool gone();

 private:
  static int find(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);

  std::string local_addr_, remote_addr_;
  int local_port_, remote_port_;
  bool looked_up_ = false;
  int fd_ = -1;
};

}  // namespace strata
