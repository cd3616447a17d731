// The known API removals tailor bridges in its copy of a package's source, from
// data/compat/removals.toml (this is its one loader): what was removed, in which release,
// and what the source gets instead.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"

namespace tailor::compat {

/// Whose release removed an API: torch's, or CUDA's (nvcc's, whose CCCL it ships).
enum class Library { torch, cuda };
std::string_view library_name(Library library);  // "torch", "CUDA"

/// What every removal names: the report's and the diagnosis' words.
struct RemovalInfo {
  std::string id;
  Library library = Library::torch;
  std::string removed_in;  ///< the first release without it: "2.6"
  std::string why;         ///< one line
  /// "torch 2.6", "CUDA 13.0"
  std::string removed_label() const;
};

/// A token sequence replaced by another where the source has it.
struct Rename {
  RemovalInfo info;
  std::string from, to;
  std::string include;         ///< a header `to` needs; "" none
  std::string unless_defined;  ///< a package defining this name itself is left alone
  std::string unless_file;     ///< a package holding a file ending so is left alone
  std::string after;           ///< only where this token comes right before; "" anywhere
};

/// `EXPR.type()` as a type argument of a macro whose name starts with `macro_prefix`.
struct DispatchType {
  RemovalInfo info;
  std::string macro_prefix;  ///< "AT_DISPATCH_"
  std::string to;            ///< "scalar_type"
};

/// A removed header whose #include is pointed at tailor's stand-in.
/// A trailing argument a removed overload took: dropped from a call to NAMESPACE::PREFIX*::F(...)
/// when that argument is exactly one of `last` (CCCL 3's `debug_synchronous` of CUB's device
/// algorithms, which CUB 2 already ignored).
struct DropArgument {
  RemovalInfo info;
  std::string ns;                 ///< "cub": the namespace the call is qualified with
  std::string prefix;             ///< "Device": the class's name starts so
  std::vector<std::string> last;  ///< the argument's whole spelling: "debug_synchronous"
};

struct Shim {
  RemovalInfo info;
  std::string header;             ///< "THC/THC.h"
  std::string text;               ///< the stand-in's text
  std::vector<std::string> also;  ///< other shims' headers it includes ("TH/TH.h")
};

/// A standard header newer libstdc++ stopped including from its other headers.
struct StdHeader {
  std::string header;                   ///< "cstdint"
  std::vector<std::string> same_as;     ///< headers that declare the same names: "stdint.h"
  std::string gcc;                      ///< the GCC whose notes list it; "" none
  std::vector<std::string> names;       ///< "uint32_t", "std::unique_ptr"
  std::vector<std::string> covered_by;  ///< include prefixes that bring it: "torch/"
};

/// A C++ standard the build's torch refuses (its #error), asked for by the package's own
/// compile flags: the build driver raises each such -std flag to `standard` in its family.
struct CxxStandard {
  RemovalInfo info;
  std::string standard;                    ///< "17"
  std::vector<std::string> older;          ///< "c++14", "gnu++11": what -std= it raises
  std::string error;                       ///< the words of torch's #error against them
  std::vector<std::string> refuse_tokens;  ///< "set_unexpected": a package naming one is left alone
};

/// An inline-PTX L2 cache-policy hint that the toolchain from `removed_in` on miscompiles:
/// `createpolicy.fractional` into a register of the same asm statement whose only use is the
/// cache-policy operand of its cp.async copies (marlin's cp_async4_stream). The hint goes and
/// the copies stay: the policy only orders L2 evictions (PTX: one that "may be used during the
/// memory access"), the bytes copied are the same.
struct AsmCacheHint {
  RemovalInfo info;  ///< removed_in: the first nvcc release it is applied with
  std::string note;  ///< the change's words in place of "removed in X"
};

struct Removals {
  std::vector<DispatchType> dispatch_types;
  std::vector<Rename> renames;
  std::vector<DropArgument> drop_arguments;
  std::vector<Shim> shims;
  std::vector<StdHeader> std_headers;
  std::vector<CxxStandard> cxx_standards;
  std::vector<AsmCacheHint> asm_cache_hints;
};

/// The embedded table (data/compat/removals.toml), read once.
const Removals& removals();

/// The same from a text (tests); errors name the key.
Expected<Removals> parse_removals(std::string_view text, const std::string& source);

}  // namespace tailor::compat

namespace tailor::compat {

/// A known removal a compiler's error line names: the API and the release that removed it.
struct RemovalHit {
  std::string id;          ///< the removal's id, or "std-header-<header>"
  std::string api;         ///< "AT_CHECK", "x.type() in AT_DISPATCH_*", "std::unique_ptr"
  std::string removed_in;  ///< "torch 1.5", "GCC 11's libstdc++"
  std::string why;         ///< the table's line
};

/// The removal a compiler error line shows (g++'s and nvcc's words: "‘AT_CHECK’ was not
/// declared", `namespace "cub" has no member "Sum"`, "‘uint32_t’ does not name a type",
/// "THC/THC.h: No such file", a DeprecatedTypeProperties conversion); nullopt for others.
std::optional<RemovalHit> removal_in_error(std::string_view line, const Removals& table);

}  // namespace tailor::compat

namespace tailor::compat {

/// The first compiler error line of a build log that shows a known removal: its 1-based
/// line number, the line, and the removal. At most 4,000 error lines are looked at.
struct RemovalInLog {
  size_t line_number = 0;
  std::string line;
  RemovalHit hit;
};
std::optional<RemovalInLog> removal_in_log(std::string_view log, const Removals& table);

}  // namespace tailor::compat
