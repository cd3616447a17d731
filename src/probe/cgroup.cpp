#include "probe/cgroup.h"

#include "util/strings.h"

namespace tailor::probe {

CgroupPaths cgroup_paths(HostFiles& files) {
  CgroupPaths out;
  auto self = files.read("/proc/self/cgroup");
  if (!self) return out;
  for (const auto& line : split_any(*self, "\n")) {
    auto first = line.find(':');
    auto second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (line.substr(0, first) == "0" && controllers.empty()) out.v2 = path;
    for (const auto& c : split_any(controllers, ",")) {
      if (c == "memory") out.v1_memory = path;
      if (c == "cpu") out.v1_cpu = path;
    }
  }
  return out;
}

std::vector<std::string> up_to_root(std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path != "/") {
    out.push_back(path);
    auto slash = path.rfind('/');
    path = slash == std::string::npos ? "" : path.substr(0, slash);
  }
  out.push_back("");
  return out;
}

}  // namespace tailor::probe
