// What a built wheel makes importable, read from the wheel itself: the import check never
// guesses a module name from the distribution's name (a package named FooBar whose module
// is foobar, or torch-foo whose module is tfoo).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"

namespace tailor::outputs {

/// The wheel's top-level import names: its dist-info's top_level.txt when it has one, else
/// what its members hold at the top level: a folder with an `__init__.py`, a module
/// (`NAME.py`) or an extension module (`NAME.so`, `NAME.cpython-311-x86_64-linux-gnu.so`),
/// else a folder holding Python files further down (a namespace package). Only names that
/// are Python identifiers (they are written into the check's Python code); sorted, unique.
/// Errors: the file is not a readable wheel.
Expected<std::vector<std::string>> wheel_top_level_names(const std::string& wheel_path);

/// Which of `names` the import check imports: those that are the distribution's name
/// (compared without case, `-`, `_` and `.`), else every name but test, doc, example and
/// benchmark folders and private ones (`_foo`); all of them when that leaves none.
std::vector<std::string> import_names_to_check(const std::vector<std::string>& names,
                                               std::string_view distribution);

/// Whether `name` is a Python identifier of ASCII letters, digits and underscores.
bool is_python_identifier(std::string_view name);

}  // namespace tailor::outputs
