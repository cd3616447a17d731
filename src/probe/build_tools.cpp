#include "probe/build_tools.h"

#include "data/toml_document.h"
#include "util/version.h"

namespace tailor::probe {
namespace {

JobserverClientSince load() {
  auto doc = data::toml_document("probe/build_tools.toml");
  JobserverClientSince s;
  auto table = doc["jobserver_client_since"];
  for (auto [key, out] : {std::pair{"ninja", &s.ninja}, std::pair{"make", &s.make}}) {
    *out = table[key].string();
    if (!parse_version(*out)) table[key].fail("expected a version such as 1.13");
  }
  return s;
}

}  // namespace

const JobserverClientSince& jobserver_client_since() {
  static const JobserverClientSince s = load();
  return s;
}

}  // namespace tailor::probe
