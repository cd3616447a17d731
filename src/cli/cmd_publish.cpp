// `tailor publish WHEEL... --to DIR|s3://BUCKET/PREFIX`: adds tailor-built wheels to a folder
// or S3 wheelhouse with one pip index per GPU target set (DIR/sm90/simple). Exit 0 published (or
// already there), 1 a wheel of that name already published with other bytes, 2 bad input (nothing
// changed).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "util/files.h"
#include "util/text_escape.h"
#include "wheelhouse/install_line.h"
#include "wheelhouse/wheelhouse.h"
#include "wheelhouse/wheelhouse_store.h"

namespace tailor::cli {

namespace {

struct PublishArgs {
  std::vector<std::string> wheels;
  std::string to;
  bool allow_foreign = false;
  bool public_read = false;
  bool json = false;
  std::string html;
};

nlohmann::json result_json(const wheelhouse::PublishResult& r, const std::string& to) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& w : r.wheels) {
    auto j = wheelhouse::to_json(w.entry);
    j.erase("provenance");
    j["outcome"] = wheelhouse::publish_outcome_name(w.outcome);
    j["index"] = w.entry.target_set + "/simple/" + w.entry.project + "/";
    j["torch_pin"] = w.torch_pin;
    j["install"] = wheelhouse::install_command(w.entry, r.url, w.torch_pin);
    list.push_back(std::move(j));
  }
  return {{"wheelhouse", to}, {"wheels", list}};
}

int run_publish(const PublishArgs& args) {
  const auto foreign =
      args.allow_foreign ? wheelhouse::ForeignWheels::allowed : wheelhouse::ForeignWheels::refused;
  if (args.wheels.empty())
    return report_error(fmt::format("publish: no wheel given: tailor publish WHEEL... --to {}",
                                    terminal_safe(args.to)));
  const bool s3 = wheelhouse::is_s3_location(args.to);
  if (!s3 && args.to.find("://") != std::string::npos)
    return report_error(fmt::format(
        "--to {}: a wheelhouse is written to a folder or s3://BUCKET/PREFIX[?endpoint=URL]",
        terminal_safe(args.to)));
  if (args.public_read && !s3) return report_error("--public-read is for an s3:// wheelhouse");
  auto r = s3 ? wheelhouse::publish_s3(args.wheels, args.to, foreign, args.public_read)
              : wheelhouse::publish(args.wheels, args.to, foreign);
  if (r.failure != wheelhouse::PublishFailure::none)
    return report_error(r.message, r.failure == wheelhouse::PublishFailure::bad_input
                                       ? k_exit_bad_input
                                       : k_exit_failed);
  if (args.json) {
    auto j = with_schema(result_json(r, args.to), "publish");
    escape_json_strings(j);
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    for (const auto& w : r.wheels) {
      std::printf(
          "%s %s: %s/simple/%s/%s\n",
          w.outcome == wheelhouse::PublishOutcome::added ? "published" : "already published",
          terminal_safe(w.entry.file).c_str(), w.entry.target_set.c_str(), w.entry.project.c_str(),
          w.outcome == wheelhouse::PublishOutcome::added ? ""
                                                         : " (the same sha256: nothing changed)");
      std::printf("  install: %s\n",
                  terminal_safe(wheelhouse::install_command(w.entry, r.url, w.torch_pin)).c_str());
    }
  }
  if (!args.html.empty()) {
    auto all = wheelhouse::read_wheelhouse(args.to);
    if (!all) return report_error(all.error().message);
    auto written = write_file_atomic(args.html, wheelhouse::render_wheelhouse_html(*all, args.to));
    if (!written) return report_error("--html: " + written.error().message);
    if (!args.json) std::printf("wrote %s\n", terminal_safe(args.html).c_str());
  }
  return k_exit_ok;
}

}  // namespace

void setup_publish(CLI::App& sub, RunFn& run) {
  auto args = std::make_shared<PublishArgs>();
  sub.add_option("WHEEL", args->wheels, "Wheels tailor built (they carry their provenance)");
  sub.add_option("--to", args->to,
                 "The wheelhouse: a folder (made when missing) or s3://BUCKET/PREFIX[?endpoint=URL&"
                 "region=NAME] (keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); "
                 "<targets>/simple in it is a pip index")
      ->type_name("DIR|S3URL")
      ->required();
  sub.add_flag(
      "--allow-foreign", args->allow_foreign,
      "Publish wheels tailor did not build too, filed by the targets of their device code");
  sub.add_flag("--public-read", args->public_read,
               "s3:// only: every object readable by anyone (x-amz-acl: public-read), so pip "
               "reads the index over plain https");
  sub.add_flag("--json", args->json, "Machine-readable output");
  sub.add_option("--html", args->html,
                 "Write the wheelhouse as one page (packages x GPU targets) to FILE; inside DIR "
                 "its links work")
      ->type_name("FILE");
  sub.callback([&run, args] { run = [args] { return run_publish(*args); }; });
}

}  // namespace tailor::cli
