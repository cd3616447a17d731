// The CPUs a build may really use. /proc/cpuinfo lists the whole machine; a process pinned
// by taskset or a batch scheduler's cpuset, or in a container with a CPU quota, gets fewer,
// and jobs counted from the machine would queue on them (the governor's tokens, torch's
// MAX_JOBS). The lowest of the three wins, as in ninja's own processor count.
#include <algorithm>

#include "probe/cgroup.h"
#include "probe/probe.h"
#include "util/strings.h"

namespace tailor::probe {
namespace {

// Real lists name at most a few thousand CPUs (Linux's NR_CPUS tops out at 8192).
constexpr long k_max_cpu_id = 1 << 16;
constexpr size_t k_max_list_text = 64 * 1024;

/// quota / period CPUs, rounded up, without overflow; a quota beyond any real CPU count
/// (the kernel accepts up to about 2^44 us) is as good as none and counts as the largest.
int cpus_of_quota(long quota, long period) {
  const long n = quota / period + (quota % period != 0);
  return static_cast<int>(std::clamp<long>(n, 1, k_max_cpu_id));
}

/// The value of a "Key:\tvalue" line of /proc/self/status.
std::optional<std::string> status_field(const std::string& text, std::string_view key) {
  for (const auto& line : split_any(text, "\n")) {
    auto colon = line.find(':');
    if (colon != std::string::npos && std::string_view(line).substr(0, colon) == key)
      return std::string(trim(std::string_view(line).substr(colon + 1)));
  }
  return std::nullopt;
}

/// cgroup v1: cpu.cfs_quota_us is -1 when there is no quota.
std::optional<int> v1_quota(HostFiles& files, const std::string& dir) {
  auto quota = files.read(dir + "/cpu.cfs_quota_us");
  auto period = files.read(dir + "/cpu.cfs_period_us");
  if (!quota || !period) return std::nullopt;
  auto q = parse_whole_number<long>(*quota), p = parse_whole_number<long>(*period);
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
  return cpus_of_quota(*q, *p);
}

}  // namespace

std::optional<int> parse_cpu_list(std::string_view text) {
  text = trim(text);
  if (text.empty() || text.size() > k_max_list_text) return std::nullopt;
  long count = 0;
  for (const auto& part : split_any(text, ",")) {
    auto dash = part.find('-');
    auto lo = parse_whole_number<long>(std::string_view(part).substr(0, dash));
    auto hi = dash == std::string::npos
                  ? lo
                  : parse_whole_number<long>(std::string_view(part).substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi > k_max_cpu_id) return std::nullopt;
    count += *hi - *lo + 1;
  }
  if (count <= 0 || count > k_max_cpu_id) return std::nullopt;
  return static_cast<int>(count);
}

std::optional<int> parse_cpu_max(std::string_view text) {
  auto parts = split_any(trim(text), " ");
  if (parts.empty() || parts.size() > 2 || parts[0] == "max") return std::nullopt;
  auto quota = parse_whole_number<long>(parts[0]);
  auto period = parts.size() == 2 ? parse_whole_number<long>(parts[1])
                                  : std::optional<long>(100000);  // the kernel's default period
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return cpus_of_quota(*quota, *period);
}

void limit_cpu(HostFiles& files, HostCpu& cpu) {
  int usable = cpu.logical_cores;
  std::string by;
  auto take = [&](std::optional<int> n, const char* what) {
    if (n && *n > 0 && (usable <= 0 || *n < usable)) {
      usable = *n;
      by = what;
    }
  };
  if (auto status = files.read("/proc/self/status"))
    if (auto list = status_field(*status, "Cpus_allowed_list"))
      take(parse_cpu_list(*list), "affinity");
  const CgroupPaths paths = cgroup_paths(files);
  if (paths.v2) {
    for (const auto& dir : up_to_root(*paths.v2))
      if (auto text = files.read("/sys/fs/cgroup" + dir + "/cpu.max"))
        take(parse_cpu_max(*text), "cgroup v2 cpu.max");
  } else if (paths.v1_cpu) {
    // Inside a container the path names the host's hierarchy, mounted at the root of
    // /sys/fs/cgroup/cpu; up_to_root() ends there.
    for (const auto& dir : up_to_root(*paths.v1_cpu))
      take(v1_quota(files, "/sys/fs/cgroup/cpu" + dir), "cgroup v1 cfs quota");
  }
  cpu.usable_cores = usable;
  cpu.cores_limited_by = by;
}

}  // namespace tailor::probe
