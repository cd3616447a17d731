// What `tailor build` and `tailor build torch` say when interrupted (SIGINT, SIGTERM,
// SIGHUP; see util/interrupt.h): one line, and the exit status 128 + the signal.
#pragma once
#include <cstdio>

#include "util/interrupt.h"

namespace tailor::cli {

/// `published`: the outputs were already in place when the signal came (publishing is
/// never cut in half: it either did not begin or it finished).
inline int report_interrupt(int sig, bool published) {
  std::fflush(stdout);
  if (published)
    std::fprintf(stderr, "tailor: interrupted after publishing; the published build is complete\n");
  else
    std::fprintf(stderr, "tailor: interrupted; nothing published\n");
  std::fflush(stderr);
  return interrupt_exit_code(sig);
}

}  // namespace tailor::cli
