// Where this process sits in the cgroup hierarchies, for the probes that read a
// controller's limits (memory, CPU). Internal to probe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "probe/host_files.h"

namespace tailor::probe {

/// The process's cgroup paths from /proc/self/cgroup: the unified (v2) one, and the v1
/// hierarchy holding each controller asked for ("memory", "cpu").
struct CgroupPaths {
  std::optional<std::string> v2;
  std::optional<std::string> v1_memory;
  std::optional<std::string> v1_cpu;
};
CgroupPaths cgroup_paths(HostFiles& files);

/// Parent directories from `path` up to the root: "/a/b" -> "/a/b", "/a", "". A parent's
/// limit binds its children, so a probe takes the tightest along this list.
std::vector<std::string> up_to_root(std::string path);

}  // namespace tailor::probe
