// `tailor publish --to s3://BUCKET/PREFIX`: the folder wheelhouse's layout in a bucket, kept
// correct with two publishers at once by S3's conditional writes instead of a lock (no lock
// object to expire, no clocks to agree): new objects are created with If-None-Match: *, the
// state file is replaced with If-Match: the ETag it was read with, and the pages are written
// again until the state did not change under them (wheelhouse.h, publish_s3).
#include <fmt/format.h>

#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "cache/s3_objects.h"
#include "util/process.h"
#include "wheelhouse/index_pages.h"
#include "wheelhouse/wheelhouse.h"

namespace tailor::wheelhouse {

namespace {

// How often a publisher that lost the race for the state file reads it again; the pages are
// written again at most this often too (each round means another publisher wrote the state).
constexpr int k_attempts = 50;

void pause_before_retry(int attempt) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  int ms = std::min(1000, 20 * (attempt + 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(rng() % ms + 5));
}

struct StateRead {
  std::vector<WheelEntry> wheels;
  std::string etag;  ///< empty: no state file yet
};

Expected<StateRead> read_state(const cache::S3Bucket& bucket) {
  TAILOR_TRY(reply, bucket.get(k_state_file, k_max_state_bytes));
  if (reply.status == 404) return StateRead{};
  TAILOR_TRY(wheels, parse_state(reply.body, bucket.describe() + " " + k_state_file));
  return StateRead{std::move(wheels), reply.header("etag")};
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

  std::set<std::string> stored;  // wheels this publish has stored (kept across retries)
  std::vector<WheelEntry> written;
  for (int attempt = 0;; ++attempt) {
    if (attempt == k_attempts)
      return fail(PublishFailure::io,
                  fmt::format("{}: the state file changed under {} attempts to update it: other "
                              "publishers keep winning; try again",
                              bucket.describe(), k_attempts));
    auto state = read_state(bucket);
    if (!state) return fail(PublishFailure::io, state.error().message);
    auto planned = plan_additions(candidates, state->wheels, r.wheels);
    if (!planned) return fail(PublishFailure::conflict, planned.error().message);
    if (planned->empty()) return r;
    std::vector<WheelEntry> after = state->wheels;
    for (const WheelCandidate* c : *planned) {
      if (!stored.contains(c->entry.file)) {
        auto s = store_wheel(bucket, *c, public_read);
        if (!s) return fail(PublishFailure::io, s.error().message);
        if (!s->empty()) return fail(PublishFailure::conflict, *s);
        stored.insert(c->entry.file);
      }
      after.push_back(c->entry);
    }
    cache::S3Bucket::Put put;
    put.body = render_state(after);
    put.content_type = "application/json";
    put.public_read = public_read;
    put.condition = state->etag.empty() ? cache::S3Condition::absent : cache::S3Condition::etag;
    put.etag = state->etag;
    auto reply = bucket.put(k_state_file, put);
    if (!reply) return fail(PublishFailure::io, reply.error().message);
    if (reply->status == 200) {
      written = std::move(after);
      break;
    }
    pause_before_retry(attempt);  // another publisher wrote the state first
  }
  // The pages from the state written; again from a newer state while one appears, so the
  // last pages written (whoever writes them) list every wheel.
  for (int round = 0; round < k_attempts; ++round) {
    if (auto pages = write_pages(bucket, written, public_read); !pages)
      return fail(PublishFailure::io, pages.error().message);
    // Compared by content, not ETag: a server need not answer a PUT with one.
    auto now = read_state(bucket);
    if (!now) return fail(PublishFailure::io, now.error().message);
    if (render_state(now->wheels) == render_state(written)) return r;
    written = std::move(now->wheels);
  }
  return fail(PublishFailure::io, bucket.describe() +
                                      ": the state kept changing while the pages were written; "
                                      "publish again to render them");
}

}  // namespace tailor::wheelhouse
