// One publish algorithm for every store a wheelhouse lives in (`tailor publish`): a backend
// per store says how it reads the state, stores a wheel, replaces the state and writes the
// pages; `publish_to` is the read-modify-write over it, with the race logic in one place. A
// folder (wheelhouse.cpp) holds an exclusive lock for the whole publish, so its replace never
// loses; an S3 bucket (wheelhouse_s3.cpp) has no lock: a new object is created only when
// absent and the state replaced only if it is still the version read, so the loser of a race
// reads the state again and retries, and the pages are written again until the state read
// after them is the one they came from. Tests run the algorithm over an in-memory store
// (tests/wheelhouse/publish_target_test.cpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "util/expected.h"
#include "wheelhouse/wheelhouse.h"

namespace tailor::wheelhouse {

/// A wheelhouse's state as read, with the version a conditional replace names.
struct StateRead {
  std::vector<WheelEntry> wheels;
  std::string version;  ///< the store's token (an ETag); empty: no state file yet
};

class PublishTarget {
 public:
  virtual ~PublishTarget() = default;
  /// The location for people (no credentials).
  virtual std::string describe() const = 0;
  virtual Expected<StateRead> read_state() = 0;
  /// What a state that cannot be read first is: the folder's is a damaged file (bad input),
  /// a bucket's a failed request (io).
  virtual PublishFailure unreadable_state() const { return PublishFailure::io; }
  /// The wheel and its METADATA stored where its index links (wheel_file_path). A wheel
  /// already there with other bytes is a conflict: its one line is returned ("" stored).
  virtual Expected<std::string> store_wheel(const WheelCandidate& c) = 0;
  /// The state replaced by `wheels` if it is still `version` (created if `version` is empty
  /// and there is none); false when another publisher's replace came first.
  virtual Expected<bool> replace_state(const std::vector<WheelEntry>& wheels,
                                       const std::string& version) = 0;
  /// Every index page rendered from `wheels` written over its place.
  virtual Expected<void> write_pages(const std::vector<WheelEntry>& wheels) = 0;
};

/// How often a publisher that lost the race reads the state again, and writes the pages again.
inline constexpr int k_publish_attempts = 50;

/// Adds `candidates` to `target`: the state read, every conflict found before anything is
/// written, the new wheels stored (each once, across retries), the state replaced (read again
/// and retried when another publisher's replace came first, at most k_publish_attempts), then
/// the pages from the state written until the state read after them is the one they came
/// from. `pause(attempt)` waits before a retry (tests: nothing).
PublishResult publish_to(PublishTarget& target, const std::vector<WheelCandidate>& candidates,
                         const std::function<void(int)>& pause);

}  // namespace tailor::wheelhouse
