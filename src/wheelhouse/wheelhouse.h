// A folder wheelhouse (`tailor publish WHEEL... --to DIR`): the wheels stored once under
// files/<target set>/, one PEP 503/691 index per GPU target set (DIR/sm90/simple/...), and the
// state file wheelhouse.json every page is rendered from. A publish holds an exclusive lock on
// the wheelhouse for its read-modify-write and writes every file to a temporary renamed over
// its place, so two publishers at once both land and a reader never sees half a page.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"
#include "wheelhouse/wheelhouse_entry.h"

namespace tailor::wheelhouse {

inline constexpr const char* k_state_file = "wheelhouse.json";
/// The most a state file may be when read.
inline constexpr uint64_t k_max_state_bytes = uint64_t{64} << 20;

enum class PublishOutcome { added, already_published };
std::string_view publish_outcome_name(PublishOutcome outcome);  // "added", "already published"

struct PublishedWheel {
  WheelEntry entry;
  PublishOutcome outcome = PublishOutcome::added;
  std::string torch_pin;  ///< the torch version its METADATA pins ("2.11.0"), "" none
};

/// bad_input: a wheel or --to is not usable; conflict: a wheel of that name is already in its
/// target set's index with other bytes; io: writing the wheelhouse failed.
enum class PublishFailure { none, bad_input, conflict, io };

struct PublishResult {
  std::vector<PublishedWheel> wheels;
  PublishFailure failure = PublishFailure::none;
  std::string message;  ///< one line when failed
  /// Where pip reads the wheelhouse: file:///abs/dir, or the bucket's https URL.
  std::string url;
};

/// Adds `wheels` to the wheelhouse `dir` (made when missing). Every wheel is read and
/// checked, and every conflict found, before anything is written: a failure changes nothing.
PublishResult publish(const std::vector<std::string>& wheels, const std::string& dir,
                      ForeignWheels foreign);

/// Adds `wheels` to the S3 wheelhouse `location` (s3://BUCKET/PREFIX[?endpoint=URL]), as
/// publish does to a folder, without a lock: each new wheel and its METADATA are created
/// with If-None-Match: * (an object already there with other bytes is a conflict), the state
/// file is replaced with If-Match: the ETag it was read with (created with If-None-Match: *
/// when there was none), and a publisher that lost that race reads the state again and
/// retries; the pages are rendered from the state it wrote and written again until the state
/// read after them is the one they were rendered from, so the last pages written list every
/// wheel of the state. `public_read`: every object x-amz-acl: public-read (pip reads the
/// index by plain GETs).
PublishResult publish_s3(const std::vector<std::string>& wheels, const std::string& location,
                         ForeignWheels foreign, bool public_read);

/// The wheels the wheelhouse at `location` (a folder, file://, http(s)://, s3://) lists: its
/// state file, at most k_max_state_bytes; none when it has no state file yet.
Expected<std::vector<WheelEntry>> read_wheelhouse(const std::string& location);

/// The state file's text for `wheels`, and the wheels of a state file's text (`where`
/// names it in errors; names and hashes checked, no wheel listed twice in a set).
std::string render_state(const std::vector<WheelEntry>& wheels);
Expected<std::vector<WheelEntry>> parse_state(std::string_view text, const std::string& where);

/// The candidates `state` does not list yet, with each candidate's outcome in `outcomes`;
/// an error (conflict_line) for one whose file name `state` lists with other bytes.
Expected<std::vector<const WheelCandidate*>> plan_additions(
    const std::vector<WheelCandidate>& candidates, const std::vector<WheelEntry>& state,
    std::vector<PublishedWheel>& outcomes);
/// The one line of a conflict: the wheel, its index, both sha256s.
std::string conflict_line(const std::string& path, const WheelEntry& entry,
                          const std::string& published_sha256);

/// One page of the wheelhouse: packages x GPU target sets, each wheel with the torch, CUDA
/// and Python it was built against (from its provenance).
std::string render_wheelhouse_html(const std::vector<WheelEntry>& wheels, const std::string& dir);

}  // namespace tailor::wheelhouse
