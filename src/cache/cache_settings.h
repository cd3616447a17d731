// Compiler-cache settings: which tool (ccache, sccache), which storage (a local folder, a
// Redis server, an S3-compatible bucket) and which base folders to strip from paths so
// two checkouts, users or machines share hits. Read from a tailor.toml's [cache] table,
// then the environment (TAILOR_CACHE, TAILOR_CACHE_URL), then flags; turned into the
// variables each tool reads (names in data/cache/caches.toml). Pure: nothing is run.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/expected.h"

namespace tailor::data {
class TomlDocument;
}

namespace tailor::cache {

/// The compiler cache tools, the one representation past the edge where text is read.
enum class CacheTool { none, ccache, sccache };
std::string_view cache_tool_name(CacheTool tool);  // "none", "ccache", "sccache"
/// "ccache", "sccache", "none"; anything else (the empty string too) is nullopt.
std::optional<CacheTool> parse_cache_tool(std::string_view name);

enum class CacheStorage { local, redis, s3 };
std::string_view cache_storage_name(CacheStorage s);  // "local", "redis", "s3"

struct CacheSettings {
  /// The tool asked for; nullopt: auto (what the storage and the installed tools say).
  std::optional<CacheTool> tool;
  CacheStorage storage = CacheStorage::local;
  std::string dir;       ///< local: the cache folder; empty = the tool's own default
  std::string url;       ///< redis: redis://[user[:password]@]host[:port][/db] (or rediss://)
  std::string bucket;    ///< s3
  std::string prefix;    ///< s3: key prefix, without leading or trailing '/'
  std::string endpoint;  ///< s3: http(s)://HOST[:PORT] of an S3-compatible server (MinIO, R2, ...);
                         ///< empty = AWS
  std::string region;    ///< s3
  std::string size;      ///< local size limit ("20G"); empty = the tool's default
  std::vector<std::string> basedirs;  ///< absolute folders stripped from paths before hashing
  /// The work root of builds with a shared storage and no --work-dir; empty: the data's
  /// machine-wide default (the same path on every machine is what makes nvcc steps hit).
  std::string work_root;
  /// Where the settings came from, for people ("examples/tailor.toml [cache]",
  /// "TAILOR_CACHE_URL", "--cache-url"); empty: defaults.
  std::vector<std::string> from;

  /// Whether machines share the storage (Redis, S3): its backend says (cache/storage.h).
  bool shared() const;
};

/// The [cache] table of a tailor.toml (cache/tailor_toml.h reads the file); defaults when
/// it has none. Unknown keys, a wrong type, a bad URL or a relative base folder are errors
/// that name the key.
Expected<CacheSettings> parse_cache_table(const data::TomlDocument& file);
/// The [cache] of `text` read as a tailor.toml reported as `path` (parse_tailor_toml).
Expected<CacheSettings> parse_cache_settings(std::string_view text, const std::string& path);

/// A storage URL: redis://..., rediss://..., s3://BUCKET[/PREFIX][?endpoint=URL&region=NAME],
/// file:///PATH or an absolute path (a local folder). `from` is recorded in settings.from.
/// An s3:// URL's ?endpoint= and ?region= set those (without them, the ones set before
/// stay): an endpoint is http:// or https:// without a user or password. An error never
/// shows a password.
Expected<void> set_cache_url(CacheSettings& settings, std::string_view url, std::string_view from);
/// A tool name: auto, ccache, sccache or none.
Expected<void> set_cache_tool(CacheSettings& settings, std::string_view tool,
                              std::string_view from);
/// The variable that names the storage (a URL as set_cache_url takes it).
inline constexpr std::string_view k_cache_url_variable = "TAILOR_CACHE_URL";
/// TAILOR_CACHE (the tool) and TAILOR_CACHE_URL (the storage) from `env` over `settings`.
Expected<CacheSettings> apply_cache_environment(CacheSettings settings,
                                                const std::map<std::string, std::string>& env);

// The storage-specific parts of the next three are the backend of `settings.storage`
// (cache/storage.h): these are the entry points the rest of tailor calls.

/// The storage for people, without secrets: "local /var/cache/cc", "redis://user:***@host:6379/1",
/// "s3://bucket/prefix (endpoint http://minio:9000, region eu-1)".
std::string describe_cache_storage(const CacheSettings& settings);

/// The variables that point `tool` ("ccache" or "sccache") at the settings' storage, size
/// and base folders (the settings' own, then `extra_basedirs`, deduplicated). An error
/// when the tool has no such storage (ccache cannot use S3). For S3 every variable that
/// moves the objects is set, empty when unset (sccache reads empty as unset), so the
/// caller's own SCCACHE_* cannot send them elsewhere than describe_cache_storage says;
/// SCCACHE_S3_USE_SSL follows the endpoint's scheme; an endpoint without a region gets
/// the data's default ("auto"). Credentials are never here: sccache reads them from the
/// caller's environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE).
Expected<std::map<std::string, std::string>> cache_tool_environment(
    const CacheSettings& settings, CacheTool tool,
    const std::vector<std::string>& extra_basedirs = {});

/// scheme://user:secret@host... -> scheme://user:***@host..., for every URL in `text` (an
/// s3:// URL carries its endpoint's in ?endpoint=; sccache's cache_location names a Redis
/// URL whole); a URL without a password stays.
std::string hide_url_passwords(std::string_view text);

/// The variable `tool` reads for `what` ("dir", "size", "redis", "bucket", "prefix",
/// "endpoint", "region", "use_ssl", "basedirs"): data/cache/caches.toml [<tool>.env]; empty
/// when the tool has none (ccache and S3).
std::string cache_tool_variable(CacheTool tool, std::string_view what);
/// An S3 location: s3://BUCKET[/PREFIX][?endpoint=URL&region=NAME] (no decoding of %XX).
struct S3Location {
  std::string bucket;
  std::string prefix;    ///< without leading or trailing '/'
  std::string endpoint;  ///< http(s)://HOST[:PORT], no user or password; empty: not given (AWS)
  std::string region;    ///< empty: not given
};
/// The bucket is 3-63 of [a-z0-9.-], the prefix has no empty folder, the only settings are
/// endpoint= and region=. One error line otherwise. The cache's storage and the wheelhouse
/// read s3:// URLs through this one parser.
Expected<S3Location> parse_s3_location(std::string_view url);

/// data/cache/caches.toml [s3]: the region an endpoint without one gets, and AWS's hosts.
struct S3Facts {
  std::string endpoint_region;     ///< "auto"
  std::string aws_host;            ///< "s3.amazonaws.com"
  std::string aws_region_host;     ///< "s3.{region}.amazonaws.com"
  std::string aws_default_region;  ///< "us-east-1": what AWS requests are signed for by default
};
const S3Facts& s3_facts();

/// What sccache's statistics call a language ("PTX", "CUDA (Device code)") as the
/// category a report shows ("PTX (cicc)", "CUDA (nvcc)"); an unknown name stays itself.
std::string sccache_category(std::string_view language);
/// The categories in report order: C/C++, CUDA (nvcc), PTX (cicc), cubin (ptxas).
const std::vector<std::string>& cache_category_order();
/// The names sccache's processes run under (its client and the server it forks):
/// data/cache/caches.toml [sccache] processes.
const std::vector<std::string>& sccache_process_names();
/// What to add to an sccache error that names a known cause ("region is missing",
/// "NoSuchBucket", ...): a hint in tailor's terms; empty when none applies.
std::string sccache_error_hint(std::string_view message);
/// The oldest sccache that caches nvcc's steps, and how long a build's own server may
/// sit idle before it stops itself.
std::string sccache_min_version();
int sccache_idle_timeout_s();
/// The work root of builds with a shared storage and no --work-dir (same path everywhere).
std::string shared_work_root();

}  // namespace tailor::cache
