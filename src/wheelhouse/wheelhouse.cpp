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
Expected<void> store_wheel(const WheelCandidate& c, const fs::path& dest) {
  TAILOR_TRY(map, MappedFile::open(c.path));
  if (Sha256::hex(Sha256::of(map.bytes())) != c.entry.sha256)
    return make_error(c.path + ": changed while it was published");
  TAILOR_TRY(out, AtomicFile::beside(dest.string()));
  auto written = write_all_fd(out.fd(), map.bytes());
  if (!written)
    return make_error(fmt::format("{}: cannot write: {}", out.path(), written.error().message));
  return out.commit(0644);
}

Expected<void> write_state(const fs::path& root, const std::vector<WheelEntry>& wheels) {
  return write_file_atomic((root / k_state_file).string(), render_state(wheels), 0644);
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

PublishResult publish(const std::vector<std::string>& wheels, const std::string& dir,
                      ForeignWheels foreign) {
  PublishResult r;
  auto fail = [&](PublishFailure why, std::string message) {
    r.failure = why;
    r.message = std::move(message);
    r.wheels.clear();
    return r;
  };
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    return fail(PublishFailure::bad_input, dir + ": --to names a file, not a wheelhouse folder");
  std::vector<WheelCandidate> candidates;
  for (const auto& w : wheels) {
    auto c = read_candidate(w, foreign);
    if (!c) return fail(PublishFailure::bad_input, c.error().message);
    candidates.push_back(std::move(*c));
  }
  const fs::path root(dir);
  if (auto made = make_folder(root); !made) return fail(PublishFailure::io, made.error().message);
  r.url = "file://" + uri_encode(fs::absolute(root, ec).lexically_normal().string(), true);
  // The folder itself is locked: no lock file is left in the user's wheelhouse.
  ExclusiveFolderLock lock(root.string());
  if (!lock.ok()) return fail(PublishFailure::io, dir + ": cannot lock the wheelhouse folder");
  auto state = read_wheelhouse(dir);
  if (!state) return fail(PublishFailure::bad_input, state.error().message);

  // Every conflict is found before anything is written.
  auto planned = plan_additions(candidates, *state, r.wheels);
  if (!planned) return fail(PublishFailure::conflict, planned.error().message);
  const std::vector<const WheelCandidate*>& to_add = *planned;
  if (to_add.empty()) return r;

  std::vector<WheelEntry> after = *state;
  std::set<std::string> sets;
  for (const WheelCandidate* c : to_add) {
    const fs::path dest = root / wheel_file_path(c->entry);
    if (auto made = make_folder(dest.parent_path()); !made)
      return fail(PublishFailure::io, made.error().message);
    if (auto stored = store_wheel(*c, dest); !stored)
      return fail(PublishFailure::io, stored.error().message);
    if (auto m = write_file_atomic(dest.string() + ".metadata", c->metadata, 0644); !m)
      return fail(PublishFailure::io, m.error().message);
    after.push_back(c->entry);
  }
  // The state first, then the pages from it: a publish stopped between the two leaves pages
  // that the next publish renders again from the state.
  if (auto s = write_state(root, after); !s) return fail(PublishFailure::io, s.error().message);
  for (const auto& e : after) sets.insert(e.target_set);
  for (const auto& set : sets)
    for (const auto& page : render_index(set, after)) {
      const fs::path path = root / page.path;
      if (auto made = make_folder(path.parent_path()); !made)
        return fail(PublishFailure::io, made.error().message);
      if (auto w = write_file_atomic(path.string(), page.text, 0644); !w)
        return fail(PublishFailure::io, w.error().message);
    }
  return r;
}

}  // namespace tailor::wheelhouse
