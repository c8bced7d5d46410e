#include "server/client_probe.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace strata {
namespace {

bool address_matches(const sockaddr_storage& sa, const std::string& addr, int port) {
  char buf[INET6_ADDRSTRLEN] = {0};
  int p = -1;
  if (sa.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    p = ntohs(in->sin_port);
  } else if (sa.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    p = ntohs(in6->sin6_port);
  } else {
    return false;
  }
  if (p != port) return false;
  // An IPv4 peer on a dual-stack socket may be written either way; ports already pinned the connection.
  std::string a(buf);
  return a == addr || a == "::ffff:" + addr || addr == "::ffff:" + a || addr.empty();
}

}  // namespace

int ClientProbe::find(const std::string& local_addr, int local_port, const std::string& remote_addr,
                      int remote_port) {
  if (local_port <= 0 || remote_port <= 0) return -1;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st;
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    if (address_matches(local, local_addr, local_port) && address_matches(peer, remote_addr, remote_port)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

bool ClientProbe::gone() {
  if (!looked_up_) {
    looked_up_ = true;
    fd_ = find(local_addr_, local_port_, remote_addr_, remote_port_);
  }
  if (fd_ < 0) return false;
  pollfd p{};
  p.fd = fd_;
  p.events = POLLRDHUP;
  if (poll(&p, 1, 0) < 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace strata
