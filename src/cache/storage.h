// The storages a compiler cache keeps its entries in, one backend each (as ccache has one
// per remote storage): a local folder, a Redis server, an S3-compatible bucket. A backend
// owns everything that differs between storages: how it is shown without secrets, the
// variables each tool needs for it, whether machines share it, and whether it answers,
// with the one outage rule (below). CacheSettings stays the plain data read from
// tailor.toml, the environment and flags; storage_backend() turns it into its backend,
// and describe_cache_storage, cache_tool_environment and check_shared_storage are thin
// calls into that backend.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "cache/cache_settings.h"
#include "util/expected.h"

namespace tailor::cache {

/// What a storage check found. The outage rule, the same for every storage: nothing
/// answering at the storage's address is an outage (`reachable` false), and a build goes
/// on without a compiler cache, warning (an outage must not stop builds); a storage that
/// answers and refuses (Redis AUTH, a wrong reply, a local folder that cannot be written)
/// is an error: a setting to fix, which a silent uncached build would hide.
struct StorageCheck {
  bool reachable = true;
  std::string detail;  ///< one line: what answered, or why nothing did
};

class CacheStorageBackend {
 public:
  virtual ~CacheStorageBackend() = default;
  virtual CacheStorage kind() const = 0;
  /// For people and reports, without secrets (a Redis password is "***").
  virtual std::string describe() const = 0;
  /// Whether other machines and checkouts read and fill it (a shared storage gets builds
  /// a work path that is the same everywhere, so nvcc's steps hit).
  virtual bool shared() const = 0;
  /// The variables that point `tool` at this storage (the base folders, which do not
  /// depend on the storage, are cache_tool_environment's). An error naming the storage
  /// when the tool cannot use it.
  virtual Expected<std::map<std::string, std::string>> tool_environment(CacheTool tool) const = 0;
  /// Whether it answers within `timeout`, by the outage rule above.
  virtual Expected<StorageCheck> check(std::chrono::milliseconds timeout) const = 0;
};

/// A folder on this machine; empty: the tool's own default folder. `size`: the tool's
/// size limit ("20G"), empty for its default.
class LocalStorage final : public CacheStorageBackend {
 public:
  LocalStorage(std::string dir, std::string size)
      : m_dir(std::move(dir)), m_size(std::move(size)) {}
  CacheStorage kind() const override { return CacheStorage::local; }
  std::string describe() const override;
  bool shared() const override { return false; }
  Expected<std::map<std::string, std::string>> tool_environment(CacheTool tool) const override;
  /// Never an outage: the folder (or the folder it will be made in) is there and writable,
  /// else an error naming it.
  Expected<StorageCheck> check(std::chrono::milliseconds timeout) const override;

 private:
  std::string m_dir, m_size;
};

/// redis://[user[:password]@]host[:port][/db] or rediss:// (TLS).
class RedisStorage final : public CacheStorageBackend {
 public:
  explicit RedisStorage(std::string url) : m_url(std::move(url)) {}
  CacheStorage kind() const override { return CacheStorage::redis; }
  std::string describe() const override;
  bool shared() const override { return true; }
  /// Both tools read Redis; sccache also gets an empty bucket (it prefers S3 to Redis).
  Expected<std::map<std::string, std::string>> tool_environment(CacheTool tool) const override;
  /// PING (after AUTH when the URL has a password). rediss:// is not checked here (sccache
  /// checks it when its server starts).
  Expected<StorageCheck> check(std::chrono::milliseconds timeout) const override;

 private:
  std::string m_url;
};

/// An S3-compatible bucket: `prefix` without leading or trailing '/', `endpoint`
/// http(s)://HOST[:PORT] (empty: AWS), `region` (empty: the caller's AWS settings say).
class S3Storage final : public CacheStorageBackend {
 public:
  S3Storage(std::string bucket, std::string prefix, std::string endpoint, std::string region)
      : m_bucket(std::move(bucket)),
        m_prefix(std::move(prefix)),
        m_endpoint(std::move(endpoint)),
        m_region(std::move(region)) {}
  CacheStorage kind() const override { return CacheStorage::s3; }
  std::string describe() const override;
  bool shared() const override { return true; }
  /// sccache only (ccache has no S3 storage: an error).
  Expected<std::map<std::string, std::string>> tool_environment(CacheTool tool) const override;
  /// Only whether anything accepts a TCP connection at address(): the bucket, keys and
  /// region are sccache's to check when its server starts (sccache_startup_error).
  Expected<StorageCheck> check(std::chrono::milliseconds timeout) const override;
  /// Where the server listens: the endpoint's host and port (the scheme's port when none,
  /// an IPv6 host without its brackets), else AWS's host for the region
  /// (data/cache/caches.toml [s3]) on 443.
  std::pair<std::string, std::string> address() const;

 private:
  std::string m_bucket, m_prefix, m_endpoint, m_region;
};

/// The backend of `settings.storage`, holding that storage's fields of the settings.
std::unique_ptr<CacheStorageBackend> storage_backend(const CacheSettings& settings);

/// Whether a Redis server answers at `url` (redis://[user[:password]@]host[:port][/db]):
/// connects within `timeout`, sends PING (after AUTH when the URL has a password) and
/// returns the reply ("PONG"), or an error naming what failed. rediss:// (TLS) is not
/// checked here: an error says so.
/// `unreachable` (when given) says whether the failure was that nothing answered at the
/// address (no connection), rather than a server that answered and refused.
Expected<std::string> redis_ping(const std::string& url, std::chrono::milliseconds timeout,
                                 bool* unreachable = nullptr);

/// Whether a build can use the settings' storage: the check of its backend (Redis: PING;
/// S3: a TCP connection to the endpoint, or to AWS's host when none is set; local: the
/// folder), by the outage rule of StorageCheck.
Expected<StorageCheck> check_shared_storage(const CacheSettings& settings,
                                            std::chrono::milliseconds timeout);

}  // namespace tailor::cache
