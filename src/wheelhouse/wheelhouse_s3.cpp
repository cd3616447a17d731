// `tailor publish --to s3://BUCKET/PREFIX`: the folder wheelhouse's layout in a bucket, kept
// correct with two publishers at once by S3's conditional writes instead of a lock (no lock
// object to expire, no clocks to agree): new objects are created with If-None-Match: *, the
// state file is replaced with If-Match: the ETag it was read with, and the pages are written
// again until the state did not change under them: its backend of the one publish
// (publish_target.h).
#include <fmt/format.h>

#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "cache/s3_objects.h"
#include "util/process.h"
#include "wheelhouse/index_pages.h"
#include "wheelhouse/publish_target.h"
#include "wheelhouse/wheelhouse.h"

namespace tailor::wheelhouse {

namespace {

void pause_before_retry(int attempt) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  int ms = std::min(1000, 20 * (attempt + 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(rng() % ms + 5));
}

// The wheel and its METADATA, each created only when absent. A wheel object already there
// (another publisher's of the same file, or one this publish stored before it lost the race
// for the state) is taken when its recorded sha256 is this wheel's, else refused: the
// conflict's line is returned ("" when stored).
Expected<std::string> store_wheel(const cache::S3Bucket& bucket, const WheelCandidate& c,
                                  bool public_read) {
  const std::string rel = wheel_file_path(c.entry);
  cache::S3Bucket::Put wheel;
  wheel.body_file = c.path;
  wheel.file_sha256 = c.entry.sha256;
  wheel.condition = cache::S3Condition::absent;
  wheel.public_read = public_read;
  wheel.headers = {{"x-amz-meta-sha256", c.entry.sha256}};
  TAILOR_TRY(put, bucket.put(rel, wheel));
  if (put.status != 200) {
    TAILOR_TRY(there, bucket.head(rel));
    std::string sha = there.header("x-amz-meta-sha256");
    if (there.status == 200 && sha != c.entry.sha256)
      return conflict_line(c.path, c.entry, sha.empty() ? "(not recorded)" : sha);
  }
  cache::S3Bucket::Put meta;
  meta.body = c.metadata;
  meta.public_read = public_read;
  meta.content_type = "text/plain";
  TAILOR_TRY(m, bucket.put(rel + ".metadata", meta));
  (void)m;
  return std::string();
}

Expected<void> write_pages(const cache::S3Bucket& bucket, const std::vector<WheelEntry>& wheels,
                           bool public_read) {
  std::set<std::string> sets;
  for (const auto& e : wheels) sets.insert(e.target_set);
  for (const auto& set : sets)
    for (const auto& page : render_index(set, wheels)) {
      cache::S3Bucket::Put p;
      p.body = page.text;
      p.public_read = public_read;
      p.content_type = page.path.ends_with("/index.json") ? "application/vnd.pypi.simple.v1+json"
                       : page.path.ends_with(".json")     ? "application/json"
                                                          : "text/html";
      TAILOR_TRY(put, bucket.put(page.path, p));
      (void)put;
      // A bucket has no index documents: pip asks for ".../simple/<project>/", so each HTML
      // page is also the object of its folder's name (a key that ends in '/').
      if (page.path.ends_with("/index.html")) {
        TAILOR_TRY(folder, bucket.put(page.path.substr(0, page.path.size() - 10), p));
        (void)folder;
      }
    }
  return {};
}

/// A bucket without a lock: conditional writes (publish_target.h).
class S3Target : public PublishTarget {
 public:
  S3Target(const cache::S3Bucket& bucket, bool public_read)
      : m_bucket(bucket), m_public_read(public_read) {}
  std::string describe() const override { return m_bucket.describe(); }
  Expected<StateRead> read_state() override {
    TAILOR_TRY(reply, m_bucket.get(k_state_file, k_max_state_bytes));
    if (reply.status == 404) return StateRead{};
    TAILOR_TRY(wheels, parse_state(reply.body, m_bucket.describe() + " " + k_state_file));
    return StateRead{std::move(wheels), reply.header("etag")};
  }
  Expected<std::string> store_wheel(const WheelCandidate& c) override {
    return wheelhouse::store_wheel(m_bucket, c, m_public_read);
  }
  Expected<bool> replace_state(const std::vector<WheelEntry>& wheels,
                               const std::string& version) override {
    cache::S3Bucket::Put put;
    put.body = render_state(wheels);
    put.content_type = "application/json";
    put.public_read = m_public_read;
    put.condition = version.empty() ? cache::S3Condition::absent : cache::S3Condition::etag;
    put.etag = version;
    TAILOR_TRY(reply, m_bucket.put(k_state_file, put));
    return reply.status == 200;
  }
  Expected<void> write_pages(const std::vector<WheelEntry>& wheels) override {
    return wheelhouse::write_pages(m_bucket, wheels, m_public_read);
  }

 private:
  const cache::S3Bucket& m_bucket;
  bool m_public_read;
};

}  // namespace

PublishResult publish_s3(const std::vector<std::string>& wheels, const std::string& location,
                         ForeignWheels foreign, bool public_read) {
  PublishResult r;
  auto fail = [&](PublishFailure why, std::string message) {
    r.failure = why;
    r.message = std::move(message);
    r.wheels.clear();
    return r;
  };
  auto at = cache::parse_s3_location(location);
  if (!at) return fail(PublishFailure::bad_input, location + ": " + at.error().message);
  auto opened = cache::S3Bucket::open(*at, process_environment());
  if (!opened) return fail(PublishFailure::bad_input, opened.error().message);
  const cache::S3Bucket& bucket = *opened;
  r.url = bucket.url_of("");
  std::vector<WheelCandidate> candidates;
  for (const auto& w : wheels) {
    auto c = read_candidate(w, foreign);
    if (!c) return fail(PublishFailure::bad_input, c.error().message);
    candidates.push_back(std::move(*c));
  }

  S3Target target(bucket, public_read);
  return publish_to(target, candidates, pause_before_retry);
}

}  // namespace tailor::wheelhouse
