// `ncclwatch exporter --listen ADDR:PORT`: checked like any other value before the server starts
// (a usage error names what is wrong), and the address tried once so that a port in use or an
// address this machine does not have is said in plain words, not as the HTTP server's own error.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ncclwatch::live {

struct ListenAddress {
  std::string host;  // "127.0.0.1", "0.0.0.0", "::1" (without the brackets)
  int port = 0;      // 0: any free port
  bool ipv6 = false;
};

// "IPV4:PORT" or "[IPV6]:PORT", PORT 0..65535; nullopt and the reason in `error` otherwise.
std::optional<ListenAddress> parse_listen_address(std::string_view text, std::string& error);

// Binds a socket to `address` and closes it again: "" when that works, else the reason ("port
// 9717 on 127.0.0.1 is already in use", ...).
std::string try_bind(const ListenAddress& address);

}  // namespace ncclwatch::live
