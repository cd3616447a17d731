// A folder wheelhouse (`tailor publish WHEEL... --to DIR`): the wheels stored once under
// files/<target set>/, one PEP 503/691 index per GPU target set (DIR/sm90/simple/...), and the
// state file wheelhouse.json every page is rendered from. A publish holds an exclusive lock on
// the wheelhouse for its read-modify-write and writes every file to a temporary renamed over
// its place, so two publishers at once both land and a reader never sees half a page.
#pragma once
#include <string>
#include <vector>

#include "util/expected.h"
#include "wheelhouse/wheelhouse_entry.h"

namespace tailor::wheelhouse {

inline constexpr const char* k_state_file = "wheelhouse.json";

enum class PublishOutcome { added, already_published };
std::string_view publish_outcome_name(PublishOutcome outcome);  // "added", "already published"

struct PublishedWheel {
  WheelEntry entry;
  PublishOutcome outcome = PublishOutcome::added;
};

/// bad_input: a wheel or --to is not usable; conflict: a wheel of that name is already in its
/// target set's index with other bytes; io: writing the wheelhouse failed.
enum class PublishFailure { none, bad_input, conflict, io };

struct PublishResult {
  std::vector<PublishedWheel> wheels;
  PublishFailure failure = PublishFailure::none;
  std::string message;  ///< one line when failed
};

/// Adds `wheels` to the wheelhouse `dir` (made when missing). Every wheel is read and
/// checked, and every conflict found, before anything is written: a failure changes nothing.
PublishResult publish(const std::vector<std::string>& wheels, const std::string& dir,
                      ForeignWheels foreign);

/// The wheels the wheelhouse `dir` lists (its state file, at most 64 MiB); none when it has
/// no state file yet.
Expected<std::vector<WheelEntry>> read_wheelhouse(const std::string& dir);

/// One page of the wheelhouse: packages x GPU target sets, each wheel with the torch, CUDA
/// and Python it was built against (from its provenance).
std::string render_wheelhouse_html(const std::vector<WheelEntry>& wheels, const std::string& dir);

}  // namespace tailor::wheelhouse
