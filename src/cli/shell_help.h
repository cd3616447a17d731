// Shell completion scripts and the man page, generated from the CLI11 definitions.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "util/expected.h"

namespace tailor::cli {

/// The completion script for `shell` (bash, zsh, fish); an error for another shell.
Expected<std::string> completion_script(const CLI::App& app, std::string_view shell);

/// The man page (roff, section 1) of every command and option.
std::string man_page(const CLI::App& app, std::string_view version);

}  // namespace tailor::cli
