#include "builder/build_session.h"

#include <filesystem>

#include "governor/governor_profile.h"
#include "probe/host_files.h"
#include "probe/probe.h"
#include "util/files.h"

namespace tailor::builder {
namespace fs = std::filesystem;

std::optional<std::string> Environment::get(std::string_view name) const {
  auto it = m_variables.find(std::string(name));
  if (it == m_variables.end()) return std::nullopt;
  return it->second;
}

void BuildSession::say(std::string_view line) const {
  if (!status) return;
  std::fprintf(status, "%.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(status);
}

void BuildSession::warn(std::string_view line) const {
  std::FILE* out = warnings ? warnings : status ? status : stderr;
  std::fprintf(out, "tailor: warning: %.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(out);
}

BuildSession::FixedPathOpener system_fixed_path(CommandRunner& runner) {
  return [&runner](const std::string& real, const std::string& fixed,
                   std::optional<workpath::FixedPathRoute> forced) {
    return workpath::open_fixed_path(
        real, fixed, workpath::FixedPathTools{workpath::self_executable(), find_in_path("bwrap")},
        forced, runner);
  };
}

BuildSession system_session(CommandRunner& runner, outputs::BuildReport& report, std::FILE* status,
                            DisplayStyle style, DiskInterface* disk) {
  static RealDiskInterface real;
  BuildSession session{runner, disk ? *disk : real, report};
  session.environment = Environment(process_environment());
  session.check_storage = [](const cache::CacheSettings& settings) {
    return cache::check_shared_storage(settings, std::chrono::milliseconds(3000));
  };
  session.style = style;
  session.status = status;
  session.fixed_path = system_fixed_path(runner);
  session.start_governor = [](governor::GovernorOptions options) {
    return governor::MemoryGovernor::start(std::move(options));
  };
  session.available_memory = [] {
    probe::SystemHostFiles files;
    return probe::probe_memory(files).usable;
  };
  session.profile_path = governor::governor_profile_path();
  return session;
}

}  // namespace tailor::builder
