// manylinux policies (PEP 600, as auditwheel defines them; data/manylinux/policies.toml):
// which symbol versions each tag allows per architecture, the library whitelist, and the
// strictest tag a set of version needs fits.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "formats/elf.h"
#include "util/version.h"

namespace tailor::inspect {

struct ManylinuxPolicy {
  std::string name;  // "manylinux_2_28"
  std::vector<std::string> aliases;
  int priority = 0;  // higher = stricter (older glibc)
  int glibc_major = 0, glibc_minor = 0;
  std::map<std::string, std::string> max_version;  // "GLIBC" -> "2.28"
  std::set<std::string> none;                      // prefixes with no allowed version
  std::set<std::string> also;                      // non-numeric versions allowed: "CXXABI_TM_1"

  /// Whether one needed version ("GLIBCXX_3.4.30") is allowed by this policy.
  bool allows(const std::string& version) const;
};

/// The strictest policy a library's needs fit, and what held it back.
struct ManylinuxFit {
  std::string policy;  // "manylinux_2_28", or "linux" when none fits
  std::string tag;     // "manylinux_2_28_x86_64", "linux_x86_64"
  int priority = 0;    // of `policy`; 0 for linux
  /// The needs a stricter policy did not allow: "GLIBC_2.28 (libc.so.6)".
  std::vector<std::string> limiting;
};

class ManylinuxPolicies {
 public:
  /// The embedded data, parsed once (a malformed file throws data::DataError: a bug).
  static const ManylinuxPolicies& get();

  const std::vector<std::string>& whitelist() const { return m_whitelist; }
  bool whitelisted(const std::string& soname) const;
  /// Policies for an architecture ("x86_64", "aarch64"), strictest first; empty if unknown.
  const std::vector<ManylinuxPolicy>& for_arch(const std::string& arch) const;
  /// The strictest policy allowing every version need (needs on the dynamic loader are
  /// ignored, as auditwheel does).
  ManylinuxFit strictest_fit(const std::string& arch,
                             const std::vector<formats::ElfVersionNeed>& needs) const;
  /// Parses a platform tag: "manylinux_2_28_x86_64", "manylinux2014_aarch64",
  /// "manylinux1_x86_64" -> policy (name, glibc) and arch; nullopt for non-manylinux tags.
  struct PlatformTag {
    std::string policy;
    int glibc_major = 0, glibc_minor = 0;
    std::string arch;
  };
  std::optional<PlatformTag> parse_platform_tag(const std::string& tag) const;
  const std::string& source() const { return m_source; }

 private:
  ManylinuxPolicies() = default;
  std::string m_source;
  std::vector<std::string> m_whitelist;
  std::map<std::string, std::vector<ManylinuxPolicy>> m_by_arch;
};

/// Compares dotted numeric versions ("3.4.9" < "3.4.19"): the one of util/version.h.
using tailor::compare_versions;

}  // namespace tailor::inspect
