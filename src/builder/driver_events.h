// The build driver's events (driver/tailor_driver/say.py): one JSON object a line,
// {"v": 1, "kind": KIND, fields}, on the descriptor the build runner hands the driver
// (TAILOR_EVENTS_FD). Kinds and fields are data/driver/events.toml's; this is its one
// loader and the one reader of the events. What a build's events say is `DriverFacts`, the
// typed facts the runner collects as they come and run_plan returns: the modules built at
// once (progress), the package's own choices, target variants, split units and
// compatibility changes (the report and the wheel's provenance). Nothing reads the
// driver's printed lines back.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "util/expected.h"

namespace tailor::builder {

/// data/driver/events.toml's version; an event of another is refused.
int driver_events_version();

/// One event, checked against the schema: a known kind with exactly its fields, each of
/// its type (a count 0..1000000, a text of at most 1000 bytes).
struct DriverEvent {
  std::string kind;
  std::map<std::string, std::variant<int64_t, std::string>> fields;
  int64_t count(const std::string& name) const;     ///< 0 when not a count field
  std::string text(const std::string& name) const;  ///< "" when not a text field
};

/// The event on one line; an error saying what is wrong (not JSON, another version, a kind
/// or field the schema does not have, a field missing or of the wrong type).
Expected<DriverEvent> parse_driver_event(std::string_view line);

/// What a build's events said, each fact once; bounded (64 choices, 256 split units).
struct DriverFacts {
  int modules = 0;  ///< extension modules built at once (0: the driver did not say)
  int units = 0;    ///< their compile units: the Ninja edges of the package
  int cuda_units = 0;
  int split_compile = 0;  ///< nvcc -split-compile=K on every CUDA unit; 0: none
  int units_known = 0;    ///< units whose times ordered the build
  std::string unit_order_source;
  std::vector<std::string> choices;  ///< the package's own choices taken back, in order
  std::vector<std::string> compat;   ///< compatibility changes, in order
  /// target -> the arch-specific variant of its own capability built for it ("sm_90" ->
  /// "sm_90a"); any other pair is dropped.
  std::map<std::string, std::string> variants;
  std::map<std::string, int> split_units;  ///< unit -> K
  size_t refused = 0;                      ///< lines that were no valid event
  std::string first_refusal;

  void add(const DriverEvent& e);
};

/// Reads the events written to a descriptor as they come: `poll` hands each complete new
/// line's event to `facts` (a line that is no event is counted as refused), reading with
/// pread up to the descriptor's file offset, which the writers (the steps, sharing the open
/// file) move; bounded by `max_bytes` over the whole run (4 MiB) and 64 KiB a line.
class DriverEventReader {
 public:
  explicit DriverEventReader(int fd, uint64_t max_bytes = uint64_t{4} << 20)
      : m_fd(fd), m_max(max_bytes) {}
  /// Reads what was appended since the last call; returns the events read now.
  std::vector<DriverEvent> poll(DriverFacts& facts);

 private:
  int m_fd;
  uint64_t m_max;
  uint64_t m_offset = 0;
  std::string m_partial;
  bool m_overlong = false;  ///< the line being read is over the bound: dropped to its end
};

}  // namespace tailor::builder
