// Splitting a build log into lines the matchers can trust: CR/LF endings, carriage-return
// progress redraws and ANSI colour codes removed (ninja and pip colour their output).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace tailor::diagnose {

/// The log's lines, 1:1 with its newline-separated lines (so line numbers agree with
/// an editor), each with escape sequences and everything before a bare '\r' removed.
std::vector<std::string> split_log_lines(std::string_view log);

}  // namespace tailor::diagnose
