#include "util/oom.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "util/files.h"
#include "util/strings.h"
#include "util/text_escape.h"

namespace tailor {

std::optional<uint64_t> cgroup_oom_kills() {
  auto cgroup = read_file("/proc/self/cgroup");
  if (!cgroup) return std::nullopt;
  std::string path;
  for (const auto& line : split_any(*cgroup, "\n"))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty()) return std::nullopt;
  std::optional<uint64_t> total;
  for (std::filesystem::path p = "/sys/fs/cgroup" + path;; p = p.parent_path()) {
    if (auto events = read_file((p / "memory.events").string())) {
      for (const auto& line : split_any(*events, "\n"))
        if (line.rfind("oom_kill ", 0) == 0)
          total = total.value_or(0) + std::strtoull(line.c_str() + 9, nullptr, 10);
    }
    if (p == "/sys/fs/cgroup" || p == p.parent_path()) break;
  }
  return total;
}

uint64_t kernel_log_now_us() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

std::string kernel_oom_message(uint64_t since_us) {
  int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  std::string found;
  char record[8192];
  size_t total = 0;
  for (int n = 0; n < 200000 && total < (size_t{16} << 20); ++n) {
    ssize_t got = read(fd, record, sizeof record - 1);
    if (got < 0 && errno == EPIPE) continue;  // records overwritten while reading
    if (got <= 0) break;
    total += static_cast<size_t>(got);
    std::string_view r(record, static_cast<size_t>(got));
    // "prio,seq,usec,flags[,...];message\n[ continuation lines]"
    size_t semi = r.find(';');
    if (semi == std::string_view::npos) continue;
    auto fields = split_any(std::string(r.substr(0, semi)), ",");
    if (fields.size() < 3) continue;
    const uint64_t usec = std::strtoull(fields[2].c_str(), nullptr, 10);
    std::string_view msg = r.substr(semi + 1);
    msg = msg.substr(0, msg.find('\n'));
    if (usec + 1000000 < since_us) continue;
    if (msg.find("Out of memory") != std::string_view::npos ||
        msg.find("out of memory") != std::string_view::npos ||
        msg.find("oom-kill") != std::string_view::npos)
      found = std::string(msg);
  }
  close(fd);
  return terminal_safe(found);
}

}  // namespace tailor
