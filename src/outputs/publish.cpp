#include "outputs/publish.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "outputs/report_page.h"
#include "util/interrupt.h"

namespace tailor::outputs {
namespace fs = std::filesystem;

PublishStaging::PublishStaging(std::string out_dir, std::string dir)
    : m_out_dir(std::move(out_dir)), m_dir(std::move(dir)) {}

PublishStaging::PublishStaging(PublishStaging&& other) noexcept
    : m_out_dir(std::move(other.m_out_dir)), m_dir(std::move(other.m_dir)), m_done(other.m_done) {
  other.m_done = true;  // the moved-from object must not remove the folder
}

PublishStaging::~PublishStaging() {
  if (m_done || m_dir.empty()) return;
  std::error_code ec;
  fs::remove_all(m_dir, ec);
}

Expected<PublishStaging> PublishStaging::create(const std::string& out_dir) {
  if (out_dir.empty()) return make_error("output folder: empty path");
  fs::path out = fs::absolute(fs::path(out_dir)).lexically_normal();
  if (!out.has_filename()) out = out.parent_path();
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    return make_error(fmt::format("{}: exists and is not a folder", out_dir));
  fs::path parent = out.parent_path();
  if (!fs::is_directory(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) return make_error(fmt::format("{}: cannot create: {}", parent.string(), ec.message()));
  }
  std::string templ =
      (parent / ("." + out.filename().string() + ".tailor-staging-XXXXXX")).string();
  if (!mkdtemp(templ.data()))
    return make_error(fmt::format("{}: cannot create a staging folder: {}", parent.string(),
                                  std::strerror(errno)));
  return PublishStaging(out.string(), templ);
}

Expected<std::string> PublishStaging::add_copy(const std::string& source, const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos)
    return make_error(fmt::format("publish: '{}' is not a plain file name", name));
  fs::path dest = fs::path(m_dir) / name;
  std::error_code ec;
  fs::copy_file(source, dest, fs::copy_options::overwrite_existing, ec);
  if (ec) return make_error(fmt::format("{}: cannot copy into staging: {}", source, ec.message()));
  return dest.string();
}

Expected<std::string> PublishStaging::add_text(const std::string& name, const std::string& text) {
  if (name.empty() || name.find('/') != std::string::npos)
    return make_error(fmt::format("publish: '{}' is not a plain file name", name));
  fs::path dest = fs::path(m_dir) / name;
  std::ofstream f(dest, std::ios::binary);
  f << text;
  f.close();
  if (!f) return make_error(fmt::format("{}: cannot write", dest.string()));
  return dest.string();
}

Expected<std::vector<std::string>> PublishStaging::commit(const std::vector<std::string>& last) {
  if (m_done) return make_error("publish: already committed");
  // An interrupted build publishes nothing. Once the renames begin they run to the end
  // (the signal handler only sets a flag), so the folder never holds half a result.
  if (interrupt_signal() != 0) return make_error("interrupted before publishing");
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(m_dir, ec))
    names.push_back(entry.path().filename().string());
  if (ec) return make_error(fmt::format("{}: cannot list: {}", m_dir, ec.message()));
  std::sort(names.begin(), names.end());
  // Files named in `last` go last, in the order given: the wheel appears only once its
  // report and log are already in place.
  std::vector<std::string> order;
  for (const auto& n : names)
    if (std::find(last.begin(), last.end(), n) == last.end()) order.push_back(n);
  for (const auto& n : last)
    if (std::find(names.begin(), names.end(), n) != names.end()) order.push_back(n);
  names = std::move(order);
  bool created = false;
  if (!fs::is_directory(m_out_dir, ec)) {
    if (!fs::create_directory(m_out_dir, ec) || ec)
      return make_error(fmt::format("{}: cannot create: {}", m_out_dir, ec.message()));
    created = true;
  }
  std::vector<std::string> published;
  for (const auto& n : names) {
    fs::path from = fs::path(m_dir) / n, to = fs::path(m_out_dir) / n;
    fs::rename(from, to, ec);
    if (ec) {
      // Undo what was moved so the output folder is as it was.
      std::string err = ec.message();
      for (const auto& p : published) fs::remove(p, ec);
      if (created) fs::remove(m_out_dir, ec);
      return make_error(fmt::format("{}: cannot publish: {}", to.string(), err));
    }
    published.push_back(to.string());
  }
  fs::remove(m_dir, ec);
  m_done = true;
  return published;
}

Expected<std::vector<std::string>> publish_build(
    const std::string& out_dir, BuildReport& rep, const std::string& wheel_file,
    const std::vector<std::pair<std::string, std::string>>& extra) {
  if (interrupt_signal() != 0) return make_error("interrupted");
  TAILOR_TRY(staging, PublishStaging::create(out_dir));
  rep.ok = true;
  const std::string report_name = rep.wheel + ".report.json";
  const std::string log_name = rep.wheel + ".build.log";
  rep.wheel_path = (fs::path(staging.out_dir()) / rep.wheel).string();
  const std::string kept_log = rep.log_path;
  rep.log_path = (fs::path(staging.out_dir()) / log_name).string();
  const nlohmann::json json = to_json(rep);
  TAILOR_TRY_VOID(staging.add_copy(kept_log, log_name));
  TAILOR_TRY_VOID(staging.add_text(report_name, json.dump(2) + "\n"));
  TAILOR_TRY_VOID(staging.add_text(rep.wheel + ".report.html", render_report_html(json)));
  for (const auto& [name, text] : extra) TAILOR_TRY_VOID(staging.add_text(name, text));
  TAILOR_TRY_VOID(staging.add_copy(wheel_file, rep.wheel));
  return staging.commit({report_name, rep.wheel});
}

}  // namespace tailor::outputs
