#include "cache/cache_settings.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "cache/storage.h"
#include "cache/tailor_toml.h"
#include "data/toml_document.h"
#include "util/strings.h"
#include "util/text_escape.h"

namespace tailor::cache {

namespace {

constexpr std::string_view k_facts = "cache/caches.toml";

const data::TomlDocument& facts() {
  static const data::TomlDocument doc = data::toml_document(k_facts);
  return doc;
}

/// redis://[user[:password]@]host[:port][/db]: a host, a numeric port, a numeric db.
Expected<void> check_redis_url(std::string_view url) {
  std::string_view rest = url.substr(url.find("://") + 3);
  if (auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  std::string_view hostport = rest.substr(0, rest.find('/'));
  std::string_view db =
      rest.size() > hostport.size() ? rest.substr(hostport.size() + 1) : std::string_view();
  std::string_view host = hostport, port;
  if (auto colon = hostport.rfind(':');
      colon != std::string_view::npos && hostport.find(']') == std::string_view::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  if (host.empty()) return make_error("no host");
  for (char ch : host)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '_' ||
          ch == '[' || ch == ']' || ch == ':'))
      return make_error(fmt::format("the host '{}' has a character a host name cannot have",
                                    terminal_safe(host)));
  auto all_digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 5 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!port.empty() && (!all_digits(port) || std::stoi(std::string(port)) < 1 ||
                        std::stoi(std::string(port)) > 65535))
    return make_error(fmt::format("the port '{}' is not 1-65535", terminal_safe(port)));
  if (!db.empty() && !all_digits(db))
    return make_error(fmt::format("the database '{}' is not a number", terminal_safe(db)));
  return {};
}

bool has_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

/// An S3-compatible endpoint: http:// or https://, a host, an optional port and path, no
/// user or password (credentials come from the environment, never from tailor's settings,
/// so no report or printed plan can show one).
Expected<void> check_endpoint(std::string_view e) {
  std::string_view rest;
  if (e.starts_with("http://"))
    rest = e.substr(7);
  else if (e.starts_with("https://"))
    rest = e.substr(8);
  else
    return make_error(
        fmt::format("the endpoint '{}' needs its scheme: http://HOST[:PORT] or https://HOST[:PORT]",
                    terminal_safe(e)));
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos)
    return make_error(
        "the endpoint has a user or password in it; give credentials as AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY in the environment (tailor's own S3 requests read only these)");
  std::string_view host = authority, port;
  if (auto colon = authority.rfind(':');
      colon != std::string_view::npos && authority.find(']') == std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty())
    return make_error(fmt::format("the endpoint '{}' has no host", terminal_safe(e)));
  for (char ch : host)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '_' ||
          ch == '[' || ch == ']' || ch == ':'))
      return make_error(fmt::format(
          "the endpoint host '{}' has a character a host name cannot have", terminal_safe(host)));
  if (authority.find(':') != std::string_view::npos &&
      authority.find(']') == std::string_view::npos &&
      (port.empty() || port.size() > 5 ||
       !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
       std::stoi(std::string(port)) < 1 || std::stoi(std::string(port)) > 65535))
    return make_error(fmt::format("the endpoint port '{}' is not 1-65535", terminal_safe(port)));
  for (char ch : rest)
    if (std::isspace(static_cast<unsigned char>(ch)) || ch == '"' || ch == '\\')
      return make_error(
          fmt::format("the endpoint '{}' has a space, quote or backslash", terminal_safe(e)));
  return {};
}

/// A region: "eu-west-1", "auto": lower-case letters, digits and '-'.
Expected<void> check_region(std::string_view r) {
  if (r.empty() || r.size() > 64 || !std::all_of(r.begin(), r.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      }))
    return make_error(
        fmt::format("'{}' is not a region (lower-case letters, digits and '-', such as eu-west-1)",
                    terminal_safe(r)));
  return {};
}

/// s3://BUCKET[/PREFIX][?endpoint=URL&region=NAME] into `s`: the location's bucket and
/// prefix; its endpoint and region when the URL gives them (else the ones set before stay: a
/// flag may pick another bucket on the same server).
Expected<void> parse_s3_url(CacheSettings& s, std::string_view url) {
  TAILOR_TRY(at, parse_s3_location(url));
  s.storage = CacheStorage::s3;
  s.bucket = at.bucket;
  s.prefix = at.prefix;
  if (!at.endpoint.empty()) s.endpoint = at.endpoint;
  if (!at.region.empty()) s.region = at.region;
  return {};
}

Expected<void> check_size(std::string_view s) {
  // "20G", "500M", "1T", "1048576": digits then at most one unit letter.
  size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  std::string_view unit = s.substr(digits);
  if (digits == 0 || digits > 12 || unit.size() > 1 ||
      (unit.size() == 1 && std::string_view("KMGT").find(unit[0]) == std::string_view::npos))
    return make_error(fmt::format("'{}' is not a size such as 20G or 500M", terminal_safe(s)));
  return {};
}

}  // namespace

std::string hide_url_passwords(std::string_view text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t scheme = text.find("://", pos);
    if (scheme == std::string_view::npos) break;
    scheme += 3;
    size_t end = text.find_first_of("/?#&", scheme);
    std::string_view authority =
        text.substr(scheme, end == std::string_view::npos ? std::string_view::npos : end - scheme);
    out.append(text.substr(pos, scheme - pos));
    size_t at = authority.rfind('@');
    if (at == std::string_view::npos) {
      pos = scheme;
      continue;
    }
    std::string_view user = authority.substr(0, std::min(at, authority.find(':')));
    out.append(user).append(":***");
    pos = scheme + at;
  }
  out.append(text.substr(std::min(pos, text.size())));
  return out;
}

std::string_view cache_tool_name(CacheTool tool) {
  switch (tool) {
    case CacheTool::ccache:
      return "ccache";
    case CacheTool::sccache:
      return "sccache";
    case CacheTool::none:
      break;
  }
  return "none";
}

std::optional<CacheTool> parse_cache_tool(std::string_view name) {
  if (name == "ccache") return CacheTool::ccache;
  if (name == "sccache") return CacheTool::sccache;
  if (name == "none") return CacheTool::none;
  return std::nullopt;
}

std::string_view cache_storage_name(CacheStorage s) {
  switch (s) {
    case CacheStorage::redis:
      return "redis";
    case CacheStorage::s3:
      return "s3";
    case CacheStorage::local:
      break;
  }
  return "local";
}

Expected<void> set_cache_tool(CacheSettings& settings, std::string_view tool,
                              std::string_view from) {
  auto parsed = parse_cache_tool(tool);
  if (tool != "auto" && !parsed)
    return make_error(
        fmt::format("{}: '{}' is not a compiler cache (auto, ccache, sccache or none)", from,
                    terminal_safe(tool)));
  settings.tool = parsed;
  settings.from.emplace_back(from);
  return {};
}

Expected<void> set_cache_url(CacheSettings& settings, std::string_view url, std::string_view from) {
  auto bad = [&](std::string_view why) {
    return make_error(
        fmt::format("{}: '{}': {}", from, terminal_safe(hide_url_passwords(url)), why));
  };
  if (url.empty()) return bad("empty");
  if (url.size() > 2048) return bad("longer than 2048 characters");
  if (has_control(url)) return bad("has control characters");
  CacheSettings s = settings;
  if (url.starts_with("redis://") || url.starts_with("rediss://")) {
    if (auto ok = check_redis_url(url); !ok) return bad(ok.error().message);
    s.storage = CacheStorage::redis;
    s.url = std::string(url);
  } else if (url.starts_with("s3://")) {
    if (auto ok = parse_s3_url(s, url); !ok) return bad(ok.error().message);
  } else if (url.starts_with("file://") || url.starts_with("/")) {
    std::string_view path = url.starts_with("file://") ? url.substr(7) : url;
    if (!path.starts_with("/")) return bad("a local cache folder must be an absolute path");
    s.storage = CacheStorage::local;
    s.dir = std::string(path);
  } else {
    return bad(
        "expected redis://HOST[:PORT][/DB], s3://BUCKET[/PREFIX][?endpoint=URL&region=NAME] or an "
        "absolute folder");
  }
  s.from.emplace_back(from);
  settings = std::move(s);
  return {};
}

Expected<CacheSettings> parse_cache_table(const data::TomlDocument& doc) {
  const std::string& path = doc.file();
  return data::expected_from([&] {
    CacheSettings s;
    data::TomlValue t = doc["cache"];
    if (!t.present()) return s;
    if (!t.is_table()) doc.fail("cache: expected a table ([cache])");
    static const std::set<std::string> known = {"tool",     "url",      "dir",    "bucket",
                                                "prefix",   "endpoint", "region", "size",
                                                "basedirs", "work_root"};
    for (const auto& [key, value] : t.entries())
      if (!known.count(key))
        value.fail(
            fmt::format("unknown key (known: tool, url, dir, bucket, prefix, endpoint, region, "
                        "size, basedirs, work_root)"));
    const std::string from = path + " [cache]";
    auto rethrow = [&](const Expected<void>& ok) {
      if (!ok) throw data::DataError(ok.error().message);
    };
    if (t["tool"].present()) rethrow(set_cache_tool(s, t["tool"].string(), from + " tool"));
    if (t["url"].present()) rethrow(set_cache_url(s, t["url"].string(), from + " url"));
    if (t["dir"].present()) {
      if (t["url"].present()) t["dir"].fail("give either url or dir");
      std::string dir = t["dir"].string();
      if (dir.empty() || dir[0] != '/' || has_control(dir))
        t["dir"].fail("expected an absolute folder");
      s.storage = CacheStorage::local;
      s.dir = dir;
    }
    if (t["bucket"].present()) {
      if (s.storage == CacheStorage::redis)
        t["bucket"].fail("a redis:// url and a bucket cannot both be the storage");
      if (t["bucket"].string().find_first_of("/?") != std::string::npos)
        t["bucket"].fail(
            "a bucket name only (the prefix, endpoint and region have keys of their own)");
      rethrow(set_cache_url(s, "s3://" + t["bucket"].string(), from + " bucket"));
    }
    for (auto [key, field] :
         {std::pair{"prefix", &s.prefix}, {"endpoint", &s.endpoint}, {"region", &s.region}}) {
      if (!t[key].present()) continue;
      if (s.storage != CacheStorage::s3) t[key].fail("only an s3:// storage has one");
      *field = t[key].string();
      if (has_control(*field)) t[key].fail("has control characters");
    }
    if (t["prefix"].present()) {
      // As in a URL: no leading or trailing '/' (sccache drops the trailing one).
      std::string_view p = s.prefix;
      while (!p.empty() && p.front() == '/') p.remove_prefix(1);
      while (!p.empty() && p.back() == '/') p.remove_suffix(1);
      if (p.find("//") != std::string_view::npos) t["prefix"].fail("has an empty folder ('//')");
      s.prefix = std::string(p);
    }
    if (t["endpoint"].present())
      if (auto ok = check_endpoint(s.endpoint); !ok) t["endpoint"].fail(ok.error().message);
    if (t["region"].present())
      if (auto ok = check_region(s.region); !ok) t["region"].fail(ok.error().message);
    if (t["size"].present()) {
      s.size = t["size"].string();
      if (auto ok = check_size(s.size); !ok) t["size"].fail(ok.error().message);
    }
    if (t["work_root"].present()) {
      s.work_root = t["work_root"].string();
      if (s.work_root.empty() || s.work_root[0] != '/' || has_control(s.work_root))
        t["work_root"].fail("expected an absolute folder");
    }
    for (const auto& dir : t["basedirs"].strings_or_empty()) {
      if (dir.empty() || dir[0] != '/' || has_control(dir) || dir.find(':') != std::string::npos)
        t["basedirs"].fail(
            fmt::format("'{}' is not an absolute folder without ':'", terminal_safe(dir)));
      s.basedirs.push_back(dir);
    }
    if (s.from.empty() || s.from.back() != from) s.from.push_back(from);
    return s;
  });
}

Expected<CacheSettings> parse_cache_settings(std::string_view text, const std::string& path) {
  TAILOR_TRY(file, parse_tailor_toml(text, path));
  return file.cache;
}

Expected<CacheSettings> apply_cache_environment(CacheSettings settings,
                                                const std::map<std::string, std::string>& env) {
  if (auto it = env.find("TAILOR_CACHE"); it != env.end() && !it->second.empty())
    if (auto ok = set_cache_tool(settings, it->second, "TAILOR_CACHE"); !ok) return ok.error();
  if (auto it = env.find(std::string(k_cache_url_variable)); it != env.end() && !it->second.empty())
    if (auto ok = set_cache_url(settings, it->second, k_cache_url_variable); !ok) return ok.error();
  return settings;
}

bool CacheSettings::shared() const { return storage_backend(*this)->shared(); }

std::string describe_cache_storage(const CacheSettings& s) {
  return storage_backend(s)->describe();
}

Expected<std::map<std::string, std::string>> cache_tool_environment(
    const CacheSettings& s, CacheTool tool, const std::vector<std::string>& extra_basedirs) {
  if (tool == CacheTool::none) return make_error("'none' is not a compiler cache");
  TAILOR_TRY(env, storage_backend(s)->tool_environment(tool));
  // The base folders are the tool's, whatever the storage.
  std::vector<std::string> dirs;
  for (const auto* list : {&s.basedirs, &extra_basedirs})
    for (const auto& d : *list)
      if (!d.empty() && std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  if (!dirs.empty())
    // sccache takes a list; ccache one base folder: the first (the settings' own, else the
    // build's).
    env[cache_tool_variable(tool, "basedirs")] =
        tool == CacheTool::sccache ? join(dirs, ":") : dirs.front();
  return env;
}

Expected<S3Location> parse_s3_location(std::string_view url) {
  if (!url.starts_with("s3://")) return make_error("not an s3:// URL");
  S3Location at;
  std::string_view rest = url.substr(5);
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string_view bucket = rest.substr(0, rest.find('/'));
  if (bucket.empty()) return make_error("no bucket (s3://BUCKET[/PREFIX])");
  if (bucket.size() < 3 || bucket.size() > 63)
    return make_error("a bucket name is 3 to 63 characters");
  for (char ch : bucket)
    if (!(std::islower(static_cast<unsigned char>(ch)) ||
          std::isdigit(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.'))
      return make_error("a bucket name is lower-case letters, digits, '-' and '.'");
  std::string_view prefix = rest.substr(bucket.size());
  // sccache drops a trailing '/' and puts one between the prefix and its keys.
  while (!prefix.empty() && prefix.front() == '/') prefix.remove_prefix(1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix.find("//") != std::string_view::npos)
    return make_error("the prefix has an empty folder ('//')");
  at.bucket = std::string(bucket);
  at.prefix = std::string(prefix);
  for (const auto& pair : split_any(query, "&")) {
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    std::string key = pair.substr(0, eq),
                value = eq == std::string::npos ? "" : pair.substr(eq + 1);
    if (key == "endpoint") {
      if (auto ok = check_endpoint(value); !ok) return ok.error();
      at.endpoint = value;
    } else if (key == "region") {
      if (auto ok = check_region(value); !ok) return ok.error();
      at.region = value;
    } else {
      return make_error(fmt::format("'{}' is not an s3:// setting (endpoint=URL, region=NAME)",
                                    terminal_safe(key)));
    }
  }
  return at;
}

std::string cache_tool_variable(CacheTool tool, std::string_view what) {
  if (tool == CacheTool::none) return "";
  return facts()[cache_tool_name(tool)]["env"][what].string();
}

const S3Facts& s3_facts() {
  static const S3Facts f{
      facts()["s3"]["endpoint_region"].string(), facts()["s3"]["aws_host"].string(),
      facts()["s3"]["aws_region_host"].string(), facts()["s3"]["aws_default_region"].string()};
  return f;
}

std::string sccache_category(std::string_view language) {
  data::TomlValue v = facts()["sccache"]["categories"][language];
  return v.present() ? v.string() : std::string(language);
}

const std::vector<std::string>& sccache_process_names() {
  static const std::vector<std::string> names = facts()["sccache"]["processes"].strings();
  return names;
}

const std::vector<std::string>& cache_category_order() {
  static const std::vector<std::string> order = facts()["sccache"]["category_order"].strings();
  return order;
}

std::string sccache_error_hint(std::string_view message) {
  for (const auto& [piece, hint] : facts()["sccache"]["error_hints"].entries_or_empty())
    if (message.find(piece) != std::string_view::npos) return hint.string();
  return "";
}

std::string sccache_min_version() { return facts()["sccache"]["min_version"].string(); }
std::string shared_work_root() { return facts()["shared"]["work_root"].string(); }
int sccache_idle_timeout_s() {
  return static_cast<int>(facts()["sccache"]["idle_timeout_s"].integer());
}

}  // namespace tailor::cache
