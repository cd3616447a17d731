// `tailor build torch [VARIANT FLAGS] [--source DIR] [--configure-only] [--out DIR]`.
#include "cache/cache_settings.h"
#include "cache/tailor_toml.h"
#include "cli/build_interrupt.h"
#include "cli/commands.h"
#include "cli/torch_variant_flags.h"
#include "plan/build_plan.h"
#include "workflow/torch_build.h"

namespace tailor::cli {

namespace {
struct BuildTorchOptions {
  TorchVariantFlags variant;
  workflow::TorchBuildOptions build;
  std::string cache = "auto";  ///< --cache as typed, read by plan::parse_cache_flag
};

int run_build_torch(const BuildTorchOptions& o) {
  auto variant = variant_from_flags(o.variant);
  if (!variant) return report_error(variant.error().message);
  if (auto usable = check_out_dir(o.build.out_dir); !usable)
    return report_error(usable.error().message);
  workflow::TorchBuildOptions bopts = o.build;
  auto cache = plan::parse_cache_flag(o.cache);
  if (!cache) return report_error(cache.error().message);
  bopts.cache = *cache;
  probe::HostReport host = probe_for_torch(o.variant, *variant);
  plan::ResolveOptions ropts = resolve_options_from_flags(o.variant);
  if (!o.variant.config.empty()) {
    auto config = cache::load_tailor_toml(o.variant.config);
    if (!config) return report_error(config.error().message);
    bopts.cache_settings = config->cache;
  }
  install_interrupt_handlers();
  auto result = workflow::build_torch(*variant, host, ropts, bopts);
  if (int sig = interrupt_signal(); sig != 0)
    return report_interrupt(sig, result.exit_code == 0 && !result.wheel_path.empty());
  return result.exit_code;
}
}  // namespace

void setup_build_torch(CLI::App& sub, RunFn& run) {
  auto o = std::make_shared<BuildTorchOptions>();
  add_torch_variant_flags(sub, o->variant);
  sub.add_flag("--configure-only", o->build.configure_only, "stop after CMake configure");
  sub.add_flag("--no-venv", o->build.no_venv,
               "build with the chosen Python as is (no venv, no pip install)");
  sub.add_option("--out", o->build.out_dir, "output folder (default dist)");
  sub.add_option(
      "--cache", o->cache,
      "compiler cache: auto, ccache, sccache or none (default auto: sccache for a shared storage, "
      "else ccache when installed)");
  sub.add_option("--cache-url", o->build.cache_url,
                 "where the cache keeps its entries: redis://HOST[:PORT][/DB], "
                 "s3://BUCKET[/PREFIX] or a folder "
                 "(default: the config's [cache], TAILOR_CACHE_URL, else the tool's own folder)");
  sub.add_flag_function(
      "--no-wait", [o](std::int64_t) { o->build.wait_for_lock = false; },
      "fail at once when another tailor build uses the work or output folder (default: wait)");
  sub.callback([&run, o] { run = [o] { return run_build_torch(*o); }; });
}

}  // namespace tailor::cli
