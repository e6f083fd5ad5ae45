#include "live/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

namespace ncclwatch::live {

namespace {

constexpr const char* kForm = "expected ADDR:PORT, e.g. 127.0.0.1:9717, 0.0.0.0:9717 or [::1]:9717";

}  // namespace

std::optional<ListenAddress> parse_listen_address(std::string_view text, std::string& error) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    error = fmt::format("'{}': no address ({})", text, kForm);
    return std::nullopt;
  }
  std::string_view host = text.substr(0, colon), port_text = text.substr(colon + 1);
  ListenAddress out;
  if (host.front() == '[' && host.back() == ']' && host.size() > 2) {
    out.ipv6 = true;
    host = host.substr(1, host.size() - 2);
  }
  out.host = std::string(host);
  unsigned char bytes[sizeof(in6_addr)];
  if (inet_pton(out.ipv6 ? AF_INET6 : AF_INET, out.host.c_str(), bytes) != 1) {
    error = fmt::format("'{}': '{}' is not an IPv4 address nor a bracketed IPv6 one ({})", text,
                        host, kForm);
    return std::nullopt;
  }
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), out.port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      out.port < 0 || out.port > 65535) {
    error =
        fmt::format("'{}': port '{}' is not a number from 0 to 65535 ({})", text, port_text, kForm);
    return std::nullopt;
  }
  return out;
}

std::string try_bind(const ListenAddress& address) {
  const int fd = ::socket(address.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fmt::format("cannot open a socket: {}", std::strerror(errno));
  // As the server will: a port left in TIME_WAIT by an earlier exporter is free.
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage storage{};
  socklen_t size = 0;
  if (address.ipv6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(address.port));
    inet_pton(AF_INET6, address.host.c_str(), &a->sin6_addr);
    size = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(address.port));
    inet_pton(AF_INET, address.host.c_str(), &a->sin_addr);
    size = sizeof *a;
  }
  const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&storage), size);
  const int error = errno;
  ::close(fd);
  if (rc == 0) return "";
  const std::string where =
      fmt::format("{}{}{}", address.ipv6 ? "[" : "", address.host, address.ipv6 ? "]" : "");
  switch (error) {
    case EADDRINUSE:
      return fmt::format(
          "port {} on {} is already in use (another exporter?); choose another "
          "with --listen",
          address.port, where);
    case EADDRNOTAVAIL:
      return fmt::format("{} is not an address of this machine", where);
    case EACCES:
      return fmt::format("not allowed to listen on port {} ({}; ports below 1024 need privileges)",
                         address.port, std::strerror(error));
    default:
      return fmt::format("cannot listen on {}:{}: {}", where, address.port, std::strerror(error));
  }
}

}  // namespace ncclwatch::live
