// Memory the build can really use. In a container MemAvailable describes the host, and
// the cgroup limit is what the OOM killer enforces, so the lower of the two wins.
#include <limits>

#include "probe/cgroup.h"
#include "probe/probe.h"
#include "util/strings.h"

namespace tailor::probe {
namespace {

/// cgroup v1 reports "no limit" as a page-rounded LONG_MAX; anything this large is none.
constexpr uint64_t k_v1_unlimited = uint64_t{1} << 60;

/// A field of memory.stat ("inactive_file 1234").
uint64_t stat_field(const std::optional<std::string>& text, std::string_view key) {
  if (!text) return 0;
  for (const auto& line : split_any(*text, "\n")) {
    auto parts = split_any(line, " ");
    if (parts.size() == 2 && parts[0] == key)
      return parse_whole_number<uint64_t>(parts[1]).value_or(0);
  }
  return 0;
}

struct CgroupMemory {
  uint64_t limit = 0;
  uint64_t usage = 0;
  std::string version;
};

/// The tightest limit along the hierarchy: a parent's limit binds its children too.
/// Usage counts reclaimable page cache (inactive_file) that a build would get back, so
/// it is left out, as the kubelet's working-set figure does.
std::optional<CgroupMemory> cgroup_memory(HostFiles& files) {
  const CgroupPaths paths = cgroup_paths(files);
  const auto& v2_path = paths.v2;
  const auto& v1_path = paths.v1_memory;
  std::optional<CgroupMemory> best;
  auto consider = [&](const std::string& dir, const char* limit_file, const char* usage_file,
                      const char* inactive_key, const char* version) {
    auto limit_text = files.read(dir + "/" + limit_file);
    if (!limit_text) return;
    auto limit = parse_whole_number<uint64_t>(*limit_text);  // "max" (v2) parses as none
    if (!limit || *limit >= k_v1_unlimited) return;
    if (best && best->limit <= *limit) return;
    uint64_t usage = 0;
    if (auto u = files.read(dir + "/" + usage_file))
      usage = parse_whole_number<uint64_t>(*u).value_or(0);
    uint64_t inactive = stat_field(files.read(dir + "/memory.stat"), inactive_key);
    usage = usage > inactive ? usage - inactive : 0;
    best = CgroupMemory{*limit, usage, version};
  };
  if (v2_path) {
    for (const auto& dir : up_to_root(*v2_path))
      consider("/sys/fs/cgroup" + dir, "memory.max", "memory.current", "inactive_file",
               "cgroup v2");
  }
  if (v1_path && !best) {
    // Inside a container the path names the host's hierarchy, which is mounted at the
    // root of /sys/fs/cgroup/memory; up_to_root() ends there.
    for (const auto& dir : up_to_root(*v1_path))
      consider("/sys/fs/cgroup/memory" + dir, "memory.limit_in_bytes", "memory.usage_in_bytes",
               "total_inactive_file", "cgroup v1");
  }
  return best;
}

}  // namespace

MeminfoFields parse_meminfo(const std::string& text) {
  MeminfoFields m;
  for (const auto& line : split_any(text, "\n")) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    auto parts = split_any(std::string_view(line).substr(colon + 1), " \t");
    if (parts.empty()) continue;
    auto value = parse_whole_number<uint64_t>(parts[0]);
    if (!value) continue;
    uint64_t bytes = (parts.size() > 1 && parts[1] == "kB") ? *value * 1024 : *value;
    if (key == "MemTotal")
      m.total = bytes;
    else if (key == "MemAvailable")
      m.available = bytes;
    else if (key == "SwapTotal")
      m.swap_total = bytes;
    else if (key == "SwapFree")
      m.swap_free = bytes;
  }
  return m;
}

HostMemory probe_memory(HostFiles& files) {
  HostMemory mem;
  auto fields = parse_meminfo(files.read("/proc/meminfo").value_or(""));
  mem.total = fields.total;
  mem.available = fields.available;
  mem.swap_total = fields.swap_total;
  mem.swap_free = fields.swap_free;
  mem.usable = mem.available;
  mem.limited_by = "MemAvailable";
  if (auto cg = cgroup_memory(files)) {
    mem.cgroup_limit = cg->limit;
    mem.cgroup_usage = cg->usage;
    uint64_t room = cg->limit > cg->usage ? cg->limit - cg->usage : 0;
    if (room < mem.usable || mem.available == 0) {
      mem.usable = room;
      mem.limited_by = cg->version;
    }
  }
  return mem;
}

}  // namespace tailor::probe
