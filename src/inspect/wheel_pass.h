// How the wheel pass of inspect_wheel spends memory (wheel_inspector.cpp explains the
// plan): which members are inflated whole and whether the archive's pages are handed back.
#pragma once
#include <cstdint>
#include <string>

#include "inspect/inspect_report.h"

namespace tailor::inspect {

struct WheelPassOptions {
  /// Deflated members up to this size are inflated whole (libdeflate) while the budget of
  /// whole buffers allows; larger ones are streamed (zlib) and, when libraries, spilled to
  /// an unlinked temporary file. Tests set 0 to stream every member.
  uint64_t whole_member_bytes = uint64_t{64} << 20;
  /// The bytes given to inspect_wheel are the caller's own private read-only map of the
  /// file (MappedFile): pages are handed back to the kernel once read. Must stay false for
  /// bytes in ordinary memory, which MADV_DONTNEED would zero.
  bool release_file_pages = false;
};

/// inspect_wheel with the memory plan spelled out.
Expected<WheelReport> inspect_wheel(Bytes file, const std::string& path,
                                    const InspectOptions& options, const WheelPassOptions& pass);

}  // namespace tailor::inspect
