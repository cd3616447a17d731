// TargetStats as the tests write them, by name ("sm_90a", "compute_80", "lto_50"), given
// the code that inspect reads from the entries' headers (cuda::FatbinCode): inspect groups,
// orders and judges by the code, never by the name.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "cuda/fatbin_code.h"
#include "inspect/library_report.h"

namespace tailor::inspect {

/// The code a test's name stands for: sm_ (cubin), compute_ (PTX), lto_ (LTO IR), the
/// arch digits and an `a`/`f` suffix.
inline cuda::FatbinCode code_named(std::string_view name) {
  cuda::FatbinCode c;
  std::string_view rest = name;
  for (auto [prefix, kind] :
       {std::pair<std::string_view, uint16_t>{"sm_", cuda::k_fatbin_kind_cubin},
        {"compute_", cuda::k_fatbin_kind_ptx},
        {"lto_", cuda::k_fatbin_kind_lto_ir}})
    if (rest.starts_with(prefix)) {
      c.kind = kind;
      rest.remove_prefix(prefix.size());
    }
  if (rest.ends_with('a')) c.arch_specific = true;
  if (rest.ends_with('f')) c.family = true;
  if (c.arch_specific || c.family) rest.remove_suffix(1);
  c.arch = static_cast<uint32_t>(std::stoul(std::string(rest)));
  EXPECT_EQ(c.name(), name) << "a test names a code it cannot spell";
  return c;
}

/// `targets` with each code filled in from its name.
inline std::vector<TargetStats> with_codes(std::vector<TargetStats> targets) {
  for (auto& t : targets) t.code = code_named(t.name);
  return targets;
}

}  // namespace tailor::inspect
