// Small TCP pieces for talking to local services (a Redis, an sccache-dist scheduler):
// a connection with a deadline, and a free loopback port for a server tailor starts.
#pragma once
#include <chrono>
#include <string>

#include "util/expected.h"

namespace tailor {

/// A non-blocking, close-on-exec TCP socket connected to host:port within `timeout`
/// (every address the name resolves to is tried). The caller closes it. The error names
/// host, port and the reason ("Connection refused", "timed out").
Expected<int> connect_tcp(const std::string& host, const std::string& port,
                          std::chrono::milliseconds timeout);

/// A TCP port on 127.0.0.1 that nothing listens on now (bound and released).
Expected<int> free_loopback_port();

}  // namespace tailor
