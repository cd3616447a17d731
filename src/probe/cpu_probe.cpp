// CPU: model, cores and the instruction-set level a build may target (-march).
#include <map>
#include <set>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include <fmt/format.h>

#include <algorithm>

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

std::set<std::string> hwcap_names(uint64_t hwcap, uint64_t hwcap2) {
  const auto& table = isa_level_table();
  std::set<std::string> out;
  auto add = [&](uint64_t bits, const std::vector<std::string>& names) {
    for (size_t i = 0; i < names.size() && i < 64; ++i)
      if ((bits >> i) & 1u) out.insert(names[i]);
  };
  add(hwcap, table.aarch64_hwcap);
  add(hwcap2, table.aarch64_hwcap2);
  return out;
}

std::set<std::string> hwcap_features() {
#if defined(__aarch64__)
  return hwcap_names(getauxval(AT_HWCAP), getauxval(AT_HWCAP2));
#else
  return {};
#endif
}

std::string aarch64_neoverse_class(const std::set<std::string>& features) {
  for (const auto& rule : isa_level_table().aarch64_neoverse_classes)
    if (has_all(features, rule.features)) return rule.level;
  return "";
}

namespace {

/// "0x41" / "0xd0c" as /proc/cpuinfo prints them; nullopt for anything else.
std::optional<unsigned> parse_hex_id(const std::string& s) {
  if (s.size() < 3 || s.size() > 10 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
    return std::nullopt;
  if (s.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos) return std::nullopt;
  return static_cast<unsigned>(std::stoul(s.substr(2), nullptr, 16));
}

/// What the Arm side of /proc/cpuinfo and MIDR say: core names (one per kind, in order),
/// the first core's implementer:part and the Neoverse class all known cores share.
void name_arm_cores(HostCpu& cpu, const std::vector<std::pair<unsigned, unsigned>>& ids,
                    const std::set<std::string>& features) {
  const auto& table = isa_level_table();
  std::string shared_class;
  bool all_known = !ids.empty();
  for (const auto& [impl, part] : ids) {
    const ArmCore* core = table.find_arm_core(impl, part);
    std::string name =
        core ? core->name
             : fmt::format("unknown Arm core (implementer 0x{:02x}, part 0x{:03x})", impl, part);
    if (std::find(cpu.cores.begin(), cpu.cores.end(), name) == cpu.cores.end())
      cpu.cores.push_back(name);
    if (!core || core->neoverse.empty() ||
        (!shared_class.empty() && shared_class != core->neoverse)) {
      all_known = false;
    } else {
      shared_class = core->neoverse;
    }
    if (cpu.midr.empty()) {
      cpu.midr = fmt::format("0x{:02x}:0x{:03x}", impl, part);
      if (core) cpu.seen_in = core->seen_in;
    }
  }
  // A core the table names gives its class; anything else (an unknown part, an emulator's
  // "max" CPU, cores of different classes) is classed by what its features allow.
  cpu.neoverse_class = all_known ? shared_class : aarch64_neoverse_class(features);
}

}  // namespace

HostCpu probe_cpu(HostFiles& files) {
  HostCpu cpu;
  cpu.arch = files.machine();
  const auto& table = isa_level_table();
  auto text = files.read("/proc/cpuinfo").value_or("");
  const bool arm_cpuinfo = text.find("CPU implementer") != std::string::npos ||
                           text.find("\nFeatures") != std::string::npos ||
                           text.rfind("Features", 0) == 0;
  if (cpu.arch.empty()) cpu.arch = arm_cpuinfo ? "aarch64" : "x86_64";
  const bool aarch64 = cpu.arch == "aarch64";
  // Under an emulator (qemu-user) /proc/cpuinfo is the host machine's: on aarch64 only an
  // Arm cpuinfo is read for names and features; cores are counted either way.
  const bool use_names = !aarch64 || arm_cpuinfo;

  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string physical_id, implementer;
  std::set<std::string> flags;
  std::vector<std::pair<unsigned, unsigned>> arm_ids;
  std::set<std::pair<unsigned, unsigned>> seen_ids;
  for (const auto& [key, value] : cpuinfo_fields(text)) {
    if (key == "processor")
      ++cpu.logical_cores;
    else if (!use_names)
      continue;
    else if (key == "model name" && cpu.model.empty())
      cpu.model = value;
    else if (key == "physical id")
      physical_id = value;
    else if (key == "core id")
      cores.emplace(physical_id, value);
    else if (key == "CPU implementer")
      implementer = value;
    else if (key == "CPU part") {
      auto impl = parse_hex_id(implementer);
      auto part = parse_hex_id(value);
      if (impl && part && seen_ids.emplace(*impl, *part).second) arm_ids.emplace_back(*impl, *part);
    } else if (key == (aarch64 ? "Features" : "flags") && flags.empty()) {
      for (auto& f : split_any(value, " \t")) flags.insert(f);
    }
  }
  cpu.physical_cores = cores.empty() ? cpu.logical_cores : static_cast<int>(cores.size());

  if (aarch64) {
    std::set<std::string> hw = files.cpu_features();
    if (!hw.empty()) {
      flags = std::move(hw);
      cpu.features_source = "hwcap";
    } else if (!flags.empty()) {
      cpu.features_source = "/proc/cpuinfo";
    }
    if (arm_ids.empty()) {
      if (auto midr = files.arm_midr()) {
        unsigned impl = static_cast<unsigned>((*midr >> 24) & 0xff),
                 part = static_cast<unsigned>((*midr >> 4) & 0xfff);
        arm_ids.emplace_back(impl, part);
      }
    }
    cpu.features.assign(flags.begin(), flags.end());
    cpu.isa_level = aarch64_isa_level(flags);
    name_arm_cores(cpu, arm_ids, flags);
    // The kernel prints no model name on arm64 (32-bit compat kernels print "ARMv8
    // Processor"): the core names say more.
    if (!cpu.cores.empty()) cpu.model = join(cpu.cores, " + ");
  } else if (cpu.arch == "x86_64") {
    const std::set<std::string> cpuid = files.cpu_features();
    std::set<std::string> names = cpuid;
    cpu.features_source = "cpuid";
    if (names.empty()) {  // no CPUID (tests, or an emulator): the kernel's flag names
      cpu.features_source = flags.empty() ? "" : "/proc/cpuinfo";
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
  limit_cpu(files, cpu);
  return cpu;
}

}  // namespace tailor::probe
