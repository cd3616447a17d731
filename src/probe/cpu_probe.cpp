// CPU: model, cores and the instruction-set level a build may target (-march).
#include <map>
#include <set>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "probe/isa_levels.h"
#include "probe/probe.h"
#include "util/strings.h"

namespace tailor::probe {
namespace {

/// "key : value" lines of one /proc/cpuinfo block list, in order.
std::vector<std::pair<std::string, std::string>> cpuinfo_fields(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& line : split_any(text, "\n")) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    out.emplace_back(std::string(trim(std::string_view(line).substr(0, colon))),
                     std::string(trim(std::string_view(line).substr(colon + 1))));
  }
  return out;
}

bool has_all(const std::set<std::string>& have, const std::vector<std::string>& need) {
  for (const auto& f : need)
    if (!have.count(f)) return false;
  return true;
}

}  // namespace

std::string x86_isa_level(const std::set<std::string>& features) {
  std::string level = "x86-64";  // v1: every 64-bit x86 CPU
  for (const auto& rule : isa_level_table().x86_64) {
    if (!has_all(features, rule.features)) break;
    level = rule.level;
  }
  return level;
}

std::string aarch64_isa_level(const std::set<std::string>& features) {
  const auto& table = isa_level_table();
  std::string level = "armv8-a";
  for (const auto& rule : table.aarch64) {
    if (!has_all(features, rule.features)) break;
    level = rule.level;
  }
  for (const auto& [ext, implied_by] : table.aarch64_extensions) {
    if (!features.count(ext)) continue;
    bool implied = false;
    for (const auto& l : implied_by) implied = implied || l == level;
    if (!implied) level += "+" + ext;
  }
  return level;
}

std::set<std::string> cpuid_features() {
  std::set<std::string> f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  auto bit = [](unsigned reg, int n) { return (reg >> n) & 1u; };
  if (bit(c, 0)) f.insert("sse3");
  if (bit(c, 9)) f.insert("ssse3");
  if (bit(c, 12)) f.insert("fma");
  if (bit(c, 13)) f.insert("cx16");
  if (bit(c, 19)) f.insert("sse4.1");
  if (bit(c, 20)) f.insert("sse4.2");
  if (bit(c, 22)) f.insert("movbe");
  if (bit(c, 23)) f.insert("popcnt");
  if (bit(c, 28)) f.insert("avx");
  if (bit(c, 29)) f.insert("f16c");
  // AVX and AVX-512 are usable only when the OS saves their register state (XCR0).
  bool ymm_os = false, zmm_os = false;
  if (bit(c, 27)) {
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    ymm_os = (lo & 0x6) == 0x6;
    zmm_os = (lo & 0xe6) == 0xe6;
    if (ymm_os) f.insert("osxsave");
  }
  if (!ymm_os) f.erase("avx"), f.erase("fma"), f.erase("f16c");
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    if (bit(b, 3)) f.insert("bmi1");
    if (bit(b, 5) && ymm_os) f.insert("avx2");
    if (bit(b, 8)) f.insert("bmi2");
    if (zmm_os) {
      if (bit(b, 16)) f.insert("avx512f");
      if (bit(b, 17)) f.insert("avx512dq");
      if (bit(b, 28)) f.insert("avx512cd");
      if (bit(b, 30)) f.insert("avx512bw");
      if (bit(b, 31)) f.insert("avx512vl");
    }
  }
  if (__get_cpuid(0x80000001, &a, &b, &c, &d)) {
    if (bit(c, 0)) f.insert("lahf");
    if (bit(c, 5)) f.insert("lzcnt");
  }
#endif
  return f;
}

CpuInfo probe_cpu(HostFiles& files) {
  const std::set<std::string> cpuid = files.cpu_features();
  CpuInfo cpu;
  cpu.arch = files.machine();
  const auto& table = isa_level_table();
  auto text = files.read("/proc/cpuinfo").value_or("");
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string physical_id, implementer;
  std::set<std::string> flags;
  for (const auto& [key, value] : cpuinfo_fields(text)) {
    if (key == "processor") ++cpu.logical_cores;
    else if (key == "model name" && cpu.model.empty()) cpu.model = value;
    else if (key == "physical id") physical_id = value;
    else if (key == "core id") cores.emplace(physical_id, value);
    else if (key == "CPU implementer") implementer = value;
    else if (key == "CPU part" && cpu.model.empty()) {
      auto it = table.aarch64_parts.find(implementer + ":" + value);
      if (it != table.aarch64_parts.end()) cpu.model = it->second;
    } else if ((key == "flags" || key == "Features") && flags.empty()) {
      for (auto& f : split_any(value, " \t")) flags.insert(f);
    }
  }
  cpu.physical_cores = cores.empty() ? cpu.logical_cores : static_cast<int>(cores.size());
  if (cpu.arch.empty()) cpu.arch = text.find("Features") != std::string::npos ? "aarch64" : "x86_64";

  if (cpu.arch == "aarch64") {
    cpu.features.assign(flags.begin(), flags.end());
    cpu.isa_level = aarch64_isa_level(flags);
  } else if (cpu.arch == "x86_64") {
    std::set<std::string> names = cpuid;
    if (names.empty()) {  // no CPUID (tests, or an emulator): the kernel's flag names
      for (const auto& f : flags) {
        auto it = table.x86_64_cpuinfo_names.find(f);
        names.insert(it == table.x86_64_cpuinfo_names.end() ? f : it->second);
      }
    }
    std::set<std::string> relevant;
    for (const auto& rule : table.x86_64)
      for (const auto& f : rule.features)
        if (names.count(f)) relevant.insert(f);
    cpu.features.assign(relevant.begin(), relevant.end());
    cpu.isa_level = x86_isa_level(names);
  }
  return cpu;
}

}  // namespace tailor::probe
