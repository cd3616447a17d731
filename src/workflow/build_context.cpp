#include "workflow/build_context.h"

#include <chrono>

#include "util/process.h"

namespace tailor::workflow {

BuildContext BuildContext::system(CommandRunner& runner) {
  BuildContext ctx{runner};
  ctx.environment = process_environment();
  ctx.check_storage = [](const cache::CacheSettings& settings) {
    return cache::check_shared_storage(settings, std::chrono::milliseconds(3000));
  };
  ctx.fixed_path = builder::system_fixed_path(runner);
  return ctx;
}

builder::BuildSession BuildContext::session(outputs::BuildReport& report, std::FILE* status,
                                            builder::DisplayStyle style,
                                            std::FILE* warnings) const {
  builder::BuildSession session = builder::system_session(runner, report, status, style, disk);
  session.environment = builder::Environment(environment);
  session.check_storage = check_storage;
  session.fixed_path = fixed_path;
  session.display = display;
  session.warnings = warnings;
  return session;
}

}  // namespace tailor::workflow
