// Rewrites the library search path of an ELF64 file in place (DT_RUNPATH, DT_RPATH), keeping
// the entries a caller's rule keeps. The file keeps its size and layout: a shorter string is
// written over the old one in .dynstr and the rest of the old one zeroed; a list left empty
// loses its dynamic entry (the entries after it move up one, a DT_NULL fills the end, as
// patchelf --remove-rpath does), because an empty string would mean the working directory to
// glibc's loader. Refused, with the reason, where an edit could change something else: the old
// string shares bytes with another name of .dynstr (a linker may merge a name into the tail of
// a longer one), the loader's view (PT_DYNAMIC, DT_STRTAB) differs from the section headers,
// or removing DT_RUNPATH would wake a DT_RPATH that says something else. No policy: which
// entries stay is the caller's.
#pragma once
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"

namespace tailor::formats {

struct SearchPathEdit {
  std::string tag;                   ///< "RUNPATH" or "RPATH"
  std::string before;                ///< the whole old string
  std::string after;                 ///< the new string; empty: the entry was removed
  std::vector<std::string> removed;  ///< the entries dropped, in file order
};

/// Keeps the entries of DT_RUNPATH and DT_RPATH for which keep(entry) is true (empty entries
/// are dropped), writing into `file`, a whole ELF file. Returns one edit per changed entry
/// (none when every entry is kept, and for a file without a dynamic section); `file` is
/// untouched when it returns an error.
Expected<std::vector<SearchPathEdit>> rewrite_search_paths(
    std::span<std::byte> file, const std::function<bool(std::string_view)>& keep);

}  // namespace tailor::formats
