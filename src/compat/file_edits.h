// What the rewrites of one file share: its tokens, the edits made to it so far, and the
// #include lines to add at its top. Internal to compat.
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compat/bridge.h"
#include "compat/source_tokens.h"

namespace tailor::compat::detail {

struct Edit {
  size_t begin = 0, end = 0;  ///< the byte range replaced
  std::string text;           ///< by this
};

/// One file being bridged.
struct FileWork {
  const SourceFile* file = nullptr;
  std::vector<Token> tokens;
  std::vector<Edit> edits;
  std::vector<std::string> add_includes;  ///< header names with <> or "", in order
  std::vector<SourceChange> changes;

  std::string_view text(const Token& t) const { return token_text(file->text, t); }
  std::string_view text(size_t i) const {
    return i < tokens.size() ? text(tokens[i]) : std::string_view();
  }
  /// Whether token i is the `include` of an #include directive.
  bool is_include(size_t i) const {
    return i > 0 && tokens[i - 1].line_start && text(i - 1) == "#" &&
           (text(i) == "include" || text(i) == "include_next");
  }
  /// The header names this file #includes, without <> or "" ("THC/THC.h"), read once.
  std::vector<std::string> header_names;
  void read_includes();
  /// Whether it includes exactly this header (<...> or "...").
  bool includes_header(std::string_view header) const;
  /// Adds `#include <header>` at the top, once.
  void add_include(const std::string& header);
  /// The file's new text: edits applied, added includes first, then `#line 1`.
  std::string rewritten() const;
};

/// The package-wide facts a rewrite may depend on.
struct PackageFacts {
  std::set<std::string> defined;          ///< names the package #defines, #ifdef-tests or #undefs
  std::vector<std::string> paths;         ///< every file's path
  std::map<std::string, size_t> by_path;  ///< path -> index into the files
  std::map<std::string, std::vector<size_t>> by_name;  ///< file name -> indices
};

/// Adds the std_header changes of one file (std_headers.cpp); `all` are every file's work,
/// for following the package's own #include "..." lines.
void add_missing_std_headers(FileWork& work, const std::vector<FileWork>& all,
                             const PackageFacts& facts, const Removals& table);

/// The package's -std flags `rule` may raise, given what its files hold (cxx_standard.cpp):
/// none when it names one of `refuse_tokens`; strict standards not when a file holds a
/// trigraph (strict C++11/14 convert them, C++17 does not); C++11 not when a number holds a
/// digit separator (C++11 read `1'2` as 1 and a character literal). Each refusal is a
/// `left_alone` line with the file and line.
CxxRaise cxx_raise_for(const std::vector<FileWork>& work, const CxxStandard& rule,
                       std::vector<std::string>& left_alone);

/// Drops an inline-PTX L2 cache-policy hint the toolchain miscompiles (asm_cache_hint.cpp):
/// in each asm statement whose template creates a `createpolicy.fractional` policy in a register
/// of its own used only as its cp.async copies' cache-policy operand. Anything else that names
/// the register leaves the statement as it is, with a `left_alone` line.
void bridge_asm_cache_hint(FileWork& work, const AsmCacheHint& rule,
                           std::vector<std::string>& left_alone);

}  // namespace tailor::compat::detail
