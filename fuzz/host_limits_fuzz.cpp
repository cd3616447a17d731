// libFuzzer target for the host-limit parsers the job count rests on: /proc/meminfo, a
// kernel CPU list (Cpus_allowed_list, cpuset.cpus) and a cgroup v2 cpu.max. Any text must
// give a value or none, never a crash, and a CPU count is always a real one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "probe/probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailor::probe;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parse_meminfo(std::string(text));
  if (auto n = parse_cpu_list(text); n && (*n < 1 || *n > 65537)) std::abort();
  if (auto n = parse_cpu_max(text); n && *n < 1) std::abort();
  return 0;
}
