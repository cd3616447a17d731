#include "cli/build_verify.h"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/build_interrupt.h"
#include "cli/commands.h"
#include "util/strings.h"
#include "util/text_escape.h"
#include "workflow/reproduce.h"

namespace tailor::cli {

namespace {

nlohmann::json result_json(const std::string& wheel, const workflow::ReproduceResult& r) {
  nlohmann::json j;
  j["wheel"] = wheel;
  j["verdict"] = r.verdict == workflow::ReproduceVerdict::identical ? "identical"
                 : r.verdict == workflow::ReproduceVerdict::differs ? "differs"
                                                                    : "not rebuilt";
  if (!r.message.empty()) j["error"] = r.message;
  j["source"] = r.source;
  j["sha256"] = {{"wheel", r.original_sha256}, {"rebuilt", r.rebuilt_sha256}};
  if (!r.rebuilt_wheel.empty()) j["rebuilt_wheel"] = r.rebuilt_wheel;
  j["toolchain_differences"] = r.toolchain_differences;
  j["members_differing"] = r.members_differing;
  j["causes"] = r.causes;
  nlohmann::json m = nlohmann::json::array();
  for (const auto& d : r.members)
    m.push_back({{"name", d.name},
                 {"difference", d.what},
                 {"cause", std::string(workflow::difference_cause_name(d.cause))}});
  j["members"] = m;
  return j;
}

}  // namespace

int run_verify_reproducible(const std::string& wheel, workflow::ExtensionBuildOptions core,
                            bool json) {
  install_interrupt_handlers();
  workflow::ReproduceResult r = workflow::verify_reproducible(wheel, std::move(core));
  if (int sig = interrupt_signal(); sig != 0) return report_interrupt(sig, false);
  if (json) std::printf("%s\n", with_schema(result_json(wheel, r), "build-verify").dump(2).c_str());
  switch (r.verdict) {
    case workflow::ReproduceVerdict::identical:
      if (!json)
        std::printf(
            "reproduced  %s\nsha256      %s (the rebuild's bytes are the same)\nsource      %s\n",
            terminal_safe(wheel).c_str(), r.original_sha256.c_str(),
            terminal_safe(r.source).c_str());
      return k_exit_ok;
    case workflow::ReproduceVerdict::differs: {
      report_error(fmt::format("not reproduced: {} member{} of {} differ{} ({})",
                               r.members_differing, r.members_differing == 1 ? "" : "s", wheel,
                               r.members_differing == 1 ? "s" : "", join(r.causes, ", ")),
                   k_exit_failed);
      for (const auto& d : r.members)
        std::fprintf(stderr, "  %s: %s\n", terminal_safe(d.name).c_str(), d.what.c_str());
      if (r.members_differing > r.members.size())
        std::fprintf(stderr, "  ... and %zu more\n", r.members_differing - r.members.size());
      std::fprintf(stderr, "sha256 %s in the wheel, %s rebuilt\n", r.original_sha256.c_str(),
                   r.rebuilt_sha256.c_str());
      if (r.toolchain_differences.empty())
        std::fprintf(stderr, "toolchain: the same versions as the wheel's\n");
      for (const auto& t : r.toolchain_differences)
        std::fprintf(stderr, "toolchain: %s\n", t.c_str());
      std::fprintf(stderr, "rebuilt wheel kept: %s\n", terminal_safe(r.rebuilt_wheel).c_str());
      return k_exit_failed;
    }
    case workflow::ReproduceVerdict::not_rebuilt:
      break;
  }
  report_error(r.message, r.bad_input ? k_exit_bad_input : k_exit_failed);
  for (const auto& t : r.toolchain_differences) std::fprintf(stderr, "toolchain: %s\n", t.c_str());
  return r.bad_input ? k_exit_bad_input : k_exit_failed;
}

}  // namespace tailor::cli
