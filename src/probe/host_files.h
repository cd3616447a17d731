// The file system as the probe sees it, behind an interface (ninja's DiskInterface) so
// every probe is tested over fake /proc, /sys and cgroup trees.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tailor::probe {

struct DiskSpace {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

class HostFiles {
 public:
  virtual ~HostFiles() = default;
  /// Whole file text; nullopt when it cannot be read.
  virtual std::optional<std::string> read(const std::string& path) = 0;
  /// Shell-style pattern (glob(3)), sorted; empty when nothing matches.
  virtual std::vector<std::string> glob(const std::string& pattern) = 0;
  virtual bool exists(const std::string& path) = 0;
  virtual bool is_executable(const std::string& path) = 0;
  /// Canonical path with symlinks resolved; the input when it cannot be resolved.
  virtual std::string realpath(const std::string& path) = 0;
  virtual std::optional<std::string> getenv(const std::string& name) = 0;
  virtual std::optional<DiskSpace> disk_space(const std::string& path) = 0;
  /// uname machine ("x86_64", "aarch64") and the C library version: not files, but
  /// facts of the host that tests must be able to choose.
  virtual std::string machine() = 0;
  virtual std::string libc_version() = 0;
  /// x86 CPUID feature names (cpuid_features()); empty where there is no CPUID, and in
  /// fakes, which then decide through /proc/cpuinfo flags.
  virtual std::set<std::string> cpu_features() = 0;
  /// aarch64: MIDR_EL1 of the CPU this runs on (sysfs, else the kernel-emulated MRS when
  /// HWCAP_CPUID says it is there); nullopt elsewhere and in fakes that do not set it.
  virtual std::optional<uint64_t> arm_midr() { return std::nullopt; }
};

/// The real machine.
class SystemHostFiles : public HostFiles {
 public:
  std::optional<std::string> read(const std::string& path) override;
  std::vector<std::string> glob(const std::string& pattern) override;
  bool exists(const std::string& path) override;
  bool is_executable(const std::string& path) override;
  std::string realpath(const std::string& path) override;
  std::optional<std::string> getenv(const std::string& name) override;
  std::optional<DiskSpace> disk_space(const std::string& path) override;
  std::string machine() override;
  std::string libc_version() override;
  std::set<std::string> cpu_features() override;
  std::optional<uint64_t> arm_midr() override;
};

/// Search the PATH from `files.getenv("PATH")` for an executable; empty when absent.
std::string find_executable(HostFiles& files, const std::string& name);

}  // namespace tailor::probe
