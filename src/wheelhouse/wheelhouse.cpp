#include "wheelhouse/wheelhouse.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "formats/wheel.h"
#include "inspect/torch_pin.h"
#include "util/files.h"
#include "util/http_client.h"
#include "util/mapped_file.h"
#include "util/sha256.h"
#include "util/text_escape.h"
#include "util/user_file.h"
#include "wheelhouse/index_pages.h"
#include "wheelhouse/publish_target.h"
#include "wheelhouse/wheelhouse_store.h"

namespace tailor::wheelhouse {

namespace fs = std::filesystem;

namespace {

Expected<void> make_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return make_error(fmt::format("{}: cannot make the folder: {}", dir.string(), ec.message()));
  return {};
}

Expected<void> write_all_fd(int fd, Bytes bytes) {
  const std::byte* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(errno_text(errno));
    p += n;
    left -= static_cast<size_t>(n);
  }
  return {};
}

// Copies the wheel into the wheelhouse through a temporary, hashing what it copies: a wheel
// changed since it was read is refused rather than filed under the old sha256.
Expected<void> copy_wheel(const WheelCandidate& c, const fs::path& dest) {
  TAILOR_TRY(map, MappedFile::open(c.path));
  if (Sha256::hex(Sha256::of(map.bytes())) != c.entry.sha256)
    return make_error(c.path + ": changed while it was published");
  TAILOR_TRY(out, AtomicFile::beside(dest.string()));
  auto written = write_all_fd(out.fd(), map.bytes());
  if (!written)
    return make_error(fmt::format("{}: cannot write: {}", out.path(), written.error().message));
  return out.commit(0644);
}

}  // namespace

std::string_view publish_outcome_name(PublishOutcome outcome) {
  return outcome == PublishOutcome::added ? "added" : "already published";
}

std::string render_state(const std::vector<WheelEntry>& wheels) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : wheels) list.push_back(to_json(e));
  nlohmann::json j = {{"schema", "tailor.wheelhouse/1"}, {"wheels", list}};
  escape_json_strings(j);  // METADATA's Requires-Python need not be UTF-8
  return j.dump(1) + "\n";
}

Expected<std::vector<WheelEntry>> parse_state(std::string_view text, const std::string& where) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("wheels") || !j["wheels"].is_array())
    return make_error(where + ": not a wheelhouse state file (no \"wheels\" list)");
  std::vector<WheelEntry> out;
  std::set<std::string> seen;
  for (const auto& w : j["wheels"]) {
    TAILOR_TRY(e, entry_from_json(w, where));
    if (!seen.insert(e.target_set + "/" + e.file).second)
      return make_error(fmt::format("{}: {} is listed twice in {}", where, e.file, e.target_set));
    out.push_back(std::move(e));
  }
  return out;
}

Expected<std::vector<WheelEntry>> read_wheelhouse(const std::string& location) {
  TAILOR_TRY(store, open_store(location));
  TAILOR_TRY(text, store->read(k_state_file, k_max_state_bytes));
  if (!text) return std::vector<WheelEntry>{};
  return parse_state(*text, store->origin(k_state_file));
}

Expected<std::vector<const WheelCandidate*>> plan_additions(
    const std::vector<WheelCandidate>& candidates, const std::vector<WheelEntry>& state,
    std::vector<PublishedWheel>& outcomes) {
  std::map<std::string, const WheelEntry*> listed;  // "<set>/<file>" -> entry
  for (const auto& e : state) listed[e.target_set + "/" + e.file] = &e;
  std::vector<const WheelCandidate*> to_add;
  outcomes.clear();
  for (const auto& c : candidates) {
    const std::string key = c.entry.target_set + "/" + c.entry.file;
    auto it = listed.find(key);
    if (it != listed.end() && it->second->sha256 != c.entry.sha256)
      return make_error(conflict_line(c.path, c.entry, it->second->sha256));
    outcomes.push_back(
        {c.entry, it != listed.end() ? PublishOutcome::already_published : PublishOutcome::added,
         inspect::pinned_torch(formats::parse_metadata(c.metadata).requires_dist).value_or("")});
    if (it == listed.end()) {
      listed[key] = &c.entry;
      to_add.push_back(&c);
    }
  }
  return to_add;
}

std::string conflict_line(const std::string& path, const WheelEntry& entry,
                          const std::string& published_sha256) {
  return fmt::format(
      "{}: {} is already in the {} index with sha256 {}; this one has sha256 {}: refused "
      "(publish it under another version)",
      path, entry.file, entry.target_set, published_sha256, entry.sha256);
}

namespace {

PublishResult failed(PublishFailure why, std::string message) {
  PublishResult r;
  r.failure = why;
  r.message = std::move(message);
  return r;
}

/// A folder wheelhouse under its exclusive lock, held by the caller for the whole publish:
/// every write a temporary renamed over its place, and no replace can lose.
class FolderTarget : public PublishTarget {
 public:
  explicit FolderTarget(std::string dir) : m_root(dir), m_dir(std::move(dir)) {}
  std::string describe() const override { return m_dir; }
  Expected<StateRead> read_state() override {
    TAILOR_TRY(wheels, read_wheelhouse(m_dir));
    return StateRead{std::move(wheels), "locked"};
  }
  PublishFailure unreadable_state() const override { return PublishFailure::bad_input; }
  Expected<std::string> store_wheel(const WheelCandidate& c) override {
    const fs::path dest = m_root / wheel_file_path(c.entry);
    TAILOR_TRY_VOID(make_folder(dest.parent_path()));
    TAILOR_TRY_VOID(copy_wheel(c, dest));
    TAILOR_TRY_VOID(write_file_atomic(dest.string() + ".metadata", c.metadata, 0644));
    return std::string();
  }
  Expected<bool> replace_state(const std::vector<WheelEntry>& wheels, const std::string&) override {
    TAILOR_TRY_VOID(
        write_file_atomic((m_root / k_state_file).string(), render_state(wheels), 0644));
    return true;
  }
  Expected<void> write_pages(const std::vector<WheelEntry>& wheels) override {
    std::set<std::string> sets;
    for (const auto& e : wheels) sets.insert(e.target_set);
    for (const auto& set : sets)
      for (const auto& page : render_index(set, wheels)) {
        const fs::path path = m_root / page.path;
        TAILOR_TRY_VOID(make_folder(path.parent_path()));
        TAILOR_TRY_VOID(write_file_atomic(path.string(), page.text, 0644));
      }
    return {};
  }

 private:
  fs::path m_root;
  std::string m_dir;
};

}  // namespace

PublishResult publish_to(PublishTarget& target, const std::vector<WheelCandidate>& candidates,
                         const std::function<void(int)>& pause) {
  PublishResult r;
  auto fail = [&](PublishFailure why, std::string message) {
    r = failed(why, std::move(message));
    return r;
  };
  std::set<std::string> stored;  // wheels this publish has stored (kept across retries)
  std::vector<WheelEntry> written;
  for (int attempt = 0;; ++attempt) {
    if (attempt == k_publish_attempts)
      return fail(PublishFailure::io,
                  fmt::format("{}: the state file changed under {} attempts to update it: other "
                              "publishers keep winning; try again",
                              target.describe(), k_publish_attempts));
    auto state = target.read_state();
    if (!state) return fail(target.unreadable_state(), state.error().message);
    // Every conflict is found before anything is written.
    auto planned = plan_additions(candidates, state->wheels, r.wheels);
    if (!planned) return fail(PublishFailure::conflict, planned.error().message);
    if (planned->empty()) return r;
    std::vector<WheelEntry> after = state->wheels;
    for (const WheelCandidate* c : *planned) {
      if (!stored.contains(c->entry.target_set + "/" + c->entry.file)) {
        auto s = target.store_wheel(*c);
        if (!s) return fail(PublishFailure::io, s.error().message);
        if (!s->empty()) return fail(PublishFailure::conflict, *s);
        stored.insert(c->entry.target_set + "/" + c->entry.file);
      }
      after.push_back(c->entry);
    }
    // The state first, then the pages from it: a publish stopped between the two leaves
    // pages that the next publish renders again from the state.
    auto replaced = target.replace_state(after, state->version);
    if (!replaced) return fail(PublishFailure::io, replaced.error().message);
    if (*replaced) {
      written = std::move(after);
      break;
    }
    if (pause) pause(attempt);  // another publisher replaced the state first
  }
  // Again from a newer state while one appears, so the last pages written (whoever writes
  // them) list every wheel. Compared by content: a store need not return a version on write.
  for (int round = 0; round < k_publish_attempts; ++round) {
    if (auto pages = target.write_pages(written); !pages)
      return fail(PublishFailure::io, pages.error().message);
    auto now = target.read_state();
    if (!now) return fail(PublishFailure::io, now.error().message);
    if (render_state(now->wheels) == render_state(written)) return r;
    written = std::move(now->wheels);
  }
  return fail(PublishFailure::io, target.describe() +
                                      ": the state kept changing while the pages were written; "
                                      "publish again to render them");
}

PublishResult publish(const std::vector<std::string>& wheels, const std::string& dir,
                      ForeignWheels foreign) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    return failed(PublishFailure::bad_input, dir + ": --to names a file, not a wheelhouse folder");
  std::vector<WheelCandidate> candidates;
  for (const auto& w : wheels) {
    auto c = read_candidate(w, foreign);
    if (!c) return failed(PublishFailure::bad_input, c.error().message);
    candidates.push_back(std::move(*c));
  }
  const fs::path root(dir);
  if (auto made = make_folder(root); !made) return failed(PublishFailure::io, made.error().message);
  // The folder itself is locked: no lock file is left in the user's wheelhouse.
  ExclusiveFolderLock lock(root.string());
  if (!lock.ok()) return failed(PublishFailure::io, dir + ": cannot lock the wheelhouse folder");
  FolderTarget target(dir);
  PublishResult r = publish_to(target, candidates, {});
  if (r.failure == PublishFailure::none)
    r.url = "file://" + uri_encode(fs::absolute(root, ec).lexically_normal().string(), true);
  return r;
}

}  // namespace tailor::wheelhouse
