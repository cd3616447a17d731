#include "util/terminal_style.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace tailor {
namespace {
std::atomic<ColorMode> g_mode{ColorMode::automatic};
}

Expected<ColorMode> parse_color_mode(std::string_view text) {
  if (text == "auto") return ColorMode::automatic;
  if (text == "always") return ColorMode::always;
  if (text == "never") return ColorMode::never;
  return make_error("--color: expected auto, always or never, not '" + std::string(text) + "'");
}

void set_color_mode(ColorMode mode) { g_mode = mode; }

namespace {

/// Whether text written to `fd` (1 stdout, 2 stderr) is coloured.
bool color_enabled(int fd) {
  switch (g_mode.load()) {
    case ColorMode::always:
      return true;
    case ColorMode::never:
      return false;
    case ColorMode::automatic:
      break;
  }
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  return is_smart_terminal(fd);
}

}  // namespace

bool is_smart_terminal(int fd) {
  const char* term = std::getenv("TERM");
  if (term && std::strcmp(term, "dumb") == 0) return false;
  return ::isatty(fd) == 1;
}

std::string paint(std::string_view text, Paint p, int fd) {
  if (!color_enabled(fd)) return std::string(text);
  const char* code = "1";
  switch (p) {
    case Paint::bold:
      code = "1";
      break;
    case Paint::red:
      code = "1;31";
      break;
    case Paint::green:
      code = "32";
      break;
    case Paint::yellow:
      code = "33";
      break;
  }
  return std::string("\x1b[") + code + "m" + std::string(text) + "\x1b[0m";
}

}  // namespace tailor
