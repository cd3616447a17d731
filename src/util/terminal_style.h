// Colour on a terminal, the way people expect it: `--color=auto` (the default) colours
// only output that goes to a terminal whose TERM is not "dumb", and never when NO_COLOR is
// set to anything non-empty (no-color.org); `--color=always` and `--color=never` decide
// outright. Colour marks status words only (PASS/FAIL, ok/warn, error): the text reads the
// same without it, and piped output carries no escape sequences.
#pragma once
#include <string>
#include <string_view>

#include "util/expected.h"

namespace tailor {

enum class ColorMode { automatic, always, never };

/// "auto", "always", "never"; an error for anything else.
Expected<ColorMode> parse_color_mode(std::string_view text);

/// Set once by the command line (before any output).
void set_color_mode(ColorMode mode);

/// Whether `fd` is a terminal that redraws (isatty, TERM not "dumb"): the one test behind
/// colour and the live progress lines.
bool is_smart_terminal(int fd);

enum class Paint { bold, red, green, yellow };

/// `text` wrapped in the SGR sequence for `paint` and a reset, when colour is enabled for
/// `fd`; otherwise `text` unchanged.
std::string paint(std::string_view text, Paint paint, int fd = 1);

}  // namespace tailor
