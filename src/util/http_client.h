// A small bounded HTTP/1.1 client: one request per connection (Connection: close), plain
// http over a socket or https through OpenSSL (the system's trusted roots, the host name
// checked), a deadline for the whole exchange, a request body from memory or a file, and a
// reply whose headers and body are bounded. The body of a 2xx reply can stream to a sink
// instead of memory (a wheel to its file while it is hashed). Nothing here knows S3 or pip.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor {

struct HttpUrl {
  std::string scheme;  ///< "http" or "https"
  std::string host;    ///< without brackets for IPv6
  std::string port;    ///< the scheme's when none is given
  std::string target;  ///< the path and query, "/" when empty
};

/// "http(s)://host[:port][/path][?query]": no user or password, no fragment, no control
/// characters or spaces. One error line naming the URL otherwise.
Expected<HttpUrl> parse_http_url(std::string_view url);

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  ///< besides Host, Content-Length
  std::string body;                                          ///< sent when body_file is empty
  std::string body_file;                                     ///< a file whose bytes are the body
  std::chrono::milliseconds timeout{60'000};
  uint64_t max_body = uint64_t{1} << 20;  ///< a longer reply body is an error
  /// Where a 2xx reply's body goes instead of HttpReply::body, chunk by chunk.
  std::function<Expected<void>(Bytes)> sink;
};

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  ///< names in lower case
  std::string body;
  uint64_t body_bytes = 0;  ///< counted whether kept or given to the sink
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

/// Sends `request` and reads the whole reply. Errors (one line naming host and port): no
/// connection, the TLS handshake or certificate, the deadline, a reply that is not HTTP, a
/// header block over 64 KiB, a body over max_body, a sink's error. An HTTP error status is
/// not an error here: the caller reads `status`.
Expected<HttpReply> http_send(const HttpRequest& request);

/// RFC 3986 percent-encoding of everything but letters, digits and -._~ ('/' kept when
/// `keep_slash`): the form S3's signatures and keys need.
std::string uri_encode(std::string_view text, bool keep_slash);

}  // namespace tailor
