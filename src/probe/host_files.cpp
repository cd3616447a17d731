#include "probe/host_files.h"

#include <glob.h>
#include <gnu/libc-version.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include <climits>
#include <cstdlib>

#include "probe/probe.h"
#include "util/files.h"
#include "util/strings.h"

namespace tailor::probe {

std::optional<std::string> SystemHostFiles::read(const std::string& path) {
  return read_file(path);
}

std::vector<std::string> SystemHostFiles::glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  return out;
}

bool SystemHostFiles::exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool SystemHostFiles::is_executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string SystemHostFiles::realpath(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return path;
  return buf;
}

std::optional<std::string> SystemHostFiles::getenv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (!v) return std::nullopt;
  return std::string(v);
}

std::optional<DiskSpace> SystemHostFiles::disk_space(const std::string& path) {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0) return std::nullopt;
  return DiskSpace{static_cast<uint64_t>(s.f_bavail) * s.f_frsize,
                   static_cast<uint64_t>(s.f_blocks) * s.f_frsize};
}

std::string SystemHostFiles::machine() {
  struct utsname u {};
  if (::uname(&u) != 0) return "";
  return u.machine;
}

std::string SystemHostFiles::libc_version() { return gnu_get_libc_version(); }

std::set<std::string> SystemHostFiles::cpu_features() {
#if defined(__aarch64__)
  return hwcap_features();
#else
  return cpuid_features();
#endif
}

std::optional<uint64_t> SystemHostFiles::arm_midr() {
#if defined(__aarch64__)
  // Linux publishes each CPU's MIDR_EL1 in sysfs ("0x00000000410fd0c1").
  if (auto text = read("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1")) {
    std::string t(trim(*text));
    char* end = nullptr;
    unsigned long long v = std::strtoull(t.c_str(), &end, 16);
    if (!t.empty() && end && *end == '\0') return static_cast<uint64_t>(v);
  }
  // Else the register itself: EL0 reads of the ID registers trap to the kernel (or to
  // qemu-user), which emulates them when HWCAP_CPUID is set; without it the read would
  // be an illegal instruction.
  if (getauxval(AT_HWCAP) & HWCAP_CPUID) {
    uint64_t midr = 0;
    __asm__ volatile("mrs %0, midr_el1" : "=r"(midr));
    return midr;
  }
#endif
  return std::nullopt;
}

std::string find_executable(HostFiles& files, const std::string& name) {
  if (name.find('/') != std::string::npos) return files.is_executable(name) ? name : "";
  auto path = files.getenv("PATH");
  if (!path) return "";
  for (const auto& dir : split_any(*path, ":")) {
    std::string candidate = dir + "/" + name;
    if (files.is_executable(candidate)) return candidate;
  }
  return "";
}

}  // namespace tailor::probe
