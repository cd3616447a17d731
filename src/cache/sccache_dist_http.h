// Internal to src/cache: the scheduler URLs sccache-dist's files and requests take.
#pragma once

#include <string>

#include "util/expected.h"

namespace tailor::cache::dist {

struct Url {
  std::string scheme, host, port;
};
/// "http://host:port/..." or https: the scheme, host and port (80/443 when none is given).
Expected<Url> parse_url(const std::string& url);

}  // namespace tailor::cache::dist
