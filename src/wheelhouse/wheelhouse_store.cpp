#include "wheelhouse/wheelhouse_store.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "cache/s3_objects.h"
#include "util/files.h"
#include "util/http_client.h"
#include "util/mapped_file.h"
#include "util/process.h"
#include "util/sha256.h"
#include "util/user_file.h"

namespace tailor::wheelhouse {

namespace fs = std::filesystem;

namespace {

Expected<void> write_all(int fd, Bytes bytes, const std::string& path) {
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(fmt::format("{}: cannot write: {}", path, errno_text(errno)));
    done += static_cast<size_t>(n);
  }
  return {};
}

class FolderStore final : public WheelhouseStore {
 public:
  explicit FolderStore(std::string dir) : m_dir(std::move(dir)) {}
  std::string describe() const override { return m_dir; }
  std::string origin(const std::string& rel) const override {
    return (fs::path(m_dir) / rel).string();
  }
  Expected<std::optional<std::string>> read(const std::string& rel,
                                            uint64_t max_bytes) const override {
    std::error_code ec;
    if (!fs::exists(origin(rel), ec)) return std::optional<std::string>();
    TAILOR_TRY(text, read_text_file(origin(rel), max_bytes, BinaryData::refused));
    return std::optional<std::string>(std::move(text));
  }
  Expected<std::string> copy_to(const std::string& rel, const std::string& dest,
                                uint64_t max_bytes) const override {
    TAILOR_TRY(map, MappedFile::open(origin(rel)));
    if (map.bytes().size() > max_bytes)
      return make_error(fmt::format("{}: over {} bytes", origin(rel), max_bytes));
    TAILOR_TRY(out, AtomicFile::beside(dest));
    TAILOR_TRY_VOID(write_all(out.fd(), map.bytes(), out.path()));
    std::string sha = Sha256::hex(Sha256::of(map.bytes()));
    TAILOR_TRY_VOID(out.commit(0644));
    return sha;
  }

 private:
  std::string m_dir;
};

// A copy streamed into a temporary beside `dest` while it is hashed; committed by the caller.
struct StreamedCopy {
  AtomicFile out;
  Sha256 hash;
  std::function<Expected<void>(Bytes)> sink() {
    return [this](Bytes b) -> Expected<void> {
      hash.update(b);
      return write_all(out.fd(), b, out.path());
    };
  }
};

class HttpStore final : public WheelhouseStore {
 public:
  explicit HttpStore(std::string base) : m_base(std::move(base)) {
    while (!m_base.empty() && m_base.back() == '/') m_base.pop_back();
  }
  std::string describe() const override { return m_base; }
  std::string origin(const std::string& rel) const override {
    return m_base + "/" + uri_encode(rel, true);
  }
  Expected<std::optional<std::string>> read(const std::string& rel,
                                            uint64_t max_bytes) const override {
    HttpRequest r;
    r.url = origin(rel);
    r.max_body = max_bytes;
    TAILOR_TRY(reply, http_send(r));
    if (reply.status == 404) return std::optional<std::string>();
    if (reply.status != 200) return make_error(fmt::format("{}: HTTP {}", r.url, reply.status));
    return std::optional<std::string>(std::move(reply.body));
  }
  Expected<std::string> copy_to(const std::string& rel, const std::string& dest,
                                uint64_t max_bytes) const override {
    TAILOR_TRY(out, AtomicFile::beside(dest));
    StreamedCopy copy{std::move(out), Sha256()};
    HttpRequest r;
    r.url = origin(rel);
    r.max_body = max_bytes;
    r.timeout = std::chrono::minutes(10);
    r.sink = copy.sink();
    TAILOR_TRY(reply, http_send(r));
    if (reply.status != 200) return make_error(fmt::format("{}: HTTP {}", r.url, reply.status));
    std::string sha = Sha256::hex(copy.hash.finish());
    TAILOR_TRY_VOID(copy.out.commit(0644));
    return sha;
  }

 private:
  std::string m_base;
};

class S3Store final : public WheelhouseStore {
 public:
  explicit S3Store(cache::S3Bucket bucket) : m_bucket(std::move(bucket)) {}
  std::string describe() const override { return m_bucket.describe(); }
  std::string origin(const std::string& rel) const override { return m_bucket.url_of(rel); }
  Expected<std::optional<std::string>> read(const std::string& rel,
                                            uint64_t max_bytes) const override {
    TAILOR_TRY(reply, m_bucket.get(rel, max_bytes));
    if (reply.status == 404) return std::optional<std::string>();
    return std::optional<std::string>(std::move(reply.body));
  }
  Expected<std::string> copy_to(const std::string& rel, const std::string& dest,
                                uint64_t max_bytes) const override {
    TAILOR_TRY(out, AtomicFile::beside(dest));
    StreamedCopy copy{std::move(out), Sha256()};
    TAILOR_TRY(reply, m_bucket.get(rel, max_bytes, copy.sink()));
    if (reply.status == 404)
      return make_error(fmt::format("{}: {} is not there", m_bucket.describe(), rel));
    std::string sha = Sha256::hex(copy.hash.finish());
    TAILOR_TRY_VOID(copy.out.commit(0644));
    return sha;
  }

 private:
  cache::S3Bucket m_bucket;
};

}  // namespace

bool is_s3_location(const std::string& location) { return location.starts_with("s3://"); }

Expected<std::unique_ptr<WheelhouseStore>> open_store(const std::string& location) {
  std::string_view s = location;
  if (s.empty()) return make_error("the wheelhouse location is empty");
  if (s.starts_with("file://")) {
    s.remove_prefix(7);
    if (!s.starts_with("/"))
      return make_error(
          fmt::format("{}: a file URL names a host; give file:///path or a folder", location));
    return std::unique_ptr<WheelhouseStore>(std::make_unique<FolderStore>(std::string(s)));
  }
  if (s.starts_with("http://") || s.starts_with("https://")) {
    if (auto url = parse_http_url(s); !url)
      return make_error(fmt::format("{}: {}", location, url.error().message));
    if (s.find('?') != std::string_view::npos)
      return make_error(fmt::format("{}: a wheelhouse URL has no query", location));
    return std::unique_ptr<WheelhouseStore>(std::make_unique<HttpStore>(std::string(s)));
  }
  if (is_s3_location(location)) {
    auto at = cache::parse_s3_location(s);
    if (!at) return make_error(fmt::format("{}: {}", location, at.error().message));
    TAILOR_TRY(bucket, cache::S3Bucket::open(*at, process_environment()));
    return std::unique_ptr<WheelhouseStore>(std::make_unique<S3Store>(std::move(bucket)));
  }
  if (s.find("://") != std::string_view::npos)
    return make_error(
        fmt::format("{}: a wheelhouse is a folder, file:///DIR, http(s)://HOST/PATH or "
                    "s3://BUCKET/PREFIX[?endpoint=URL]",
                    location));
  return std::unique_ptr<WheelhouseStore>(std::make_unique<FolderStore>(location));
}

}  // namespace tailor::wheelhouse
