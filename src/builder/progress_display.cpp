#include "builder/progress_display.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>

#include "builder/build_runner.h"
#include "util/terminal_style.h"
#include "util/text_escape.h"

namespace tailor::builder {
namespace {

/// `SPEAKER: warning: LINE`, the status word painted when `out` is a terminal.
void print_warning(std::FILE* out, const std::string& speaker, std::string_view line) {
  std::fprintf(out, "%s %s\n", paint(speaker + ": warning:", Paint::yellow, fileno(out)).c_str(),
               terminal_safe(line).c_str());
  std::fflush(out);
}

/// The columns of the terminal `out` writes to, else COLUMNS, else 100.
size_t terminal_width(std::FILE* out) {
  struct winsize ws {};
  if (::ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* cols = std::getenv("COLUMNS"); cols && std::atoi(cols) > 0)
    return static_cast<size_t>(std::max(20, std::atoi(cols)));
  return 100;
}

class QuietDisplay : public ProgressDisplay {
 public:
  QuietDisplay(std::FILE* out, std::string speaker) : m_out(out), m_speaker(std::move(speaker)) {}
  void step_started(const plan::Step&, size_t, size_t) override {}
  void progress(const BuildProgress&) override {}
  void step_finished(const StepOutcome&) override {}
  void warn(std::string_view line) override { print_warning(m_out, m_speaker, line); }

 private:
  std::FILE* m_out;
  std::string m_speaker;
};

/// A thread that calls `tick` every second while a step runs, so a quiet build still
/// gets its "still running" line (the runner only reports when output arrives).
class TickThread {
 public:
  explicit TickThread(std::function<void()> tick) : m_tick(std::move(tick)) {}
  ~TickThread() { stop(); }
  void start() {
    stop();
    m_stop = false;
    m_thread = std::thread([this] {
      std::unique_lock lock(m_mutex);
      while (!m_cv.wait_for(lock, std::chrono::seconds(1), [this] { return m_stop; })) {
        lock.unlock();
        m_tick();
        lock.lock();
      }
    });
  }
  void stop() {
    {
      std::lock_guard lock(m_mutex);
      m_stop = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable()) m_thread.join();
  }

 private:
  std::function<void()> m_tick;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_stop = true;
  std::thread m_thread;
};

/// Seconds between "still running" lines: the option, TAILOR_HEARTBEAT_SECONDS, else 30.
std::chrono::seconds heartbeat_interval(const HeartbeatOptions& o) {
  if (o.interval.count() > 0) return o.interval;
  if (const char* v = std::getenv("TAILOR_HEARTBEAT_SECONDS")) {
    int s = std::atoi(v);
    if (s >= 1 && s <= 3600) return std::chrono::seconds(s);
  }
  return std::chrono::seconds(30);
}

ProgressTracker::Clock heartbeat_clock(const HeartbeatOptions& o) {
  if (o.clock) return o.clock;
  return [] { return std::chrono::steady_clock::now(); };
}

/// What the plain and live displays share: where they write, who speaks, the heartbeat and
/// the ticker thread that calls tick() (each display stops it first as it goes away).
class TickingDisplay : public ProgressDisplay {
 protected:
  TickingDisplay(std::FILE* out, const HeartbeatOptions& hb, std::string speaker)
      : m_out(out),
        m_speaker(std::move(speaker)),
        m_heartbeat(heartbeat_interval(hb), heartbeat_clock(hb)),
        m_own_thread(hb.own_thread),
        m_ticker([this] { tick(); }) {}
  std::FILE* m_out;
  std::string m_speaker;
  std::mutex m_mutex;
  Heartbeat m_heartbeat;
  bool m_own_thread = true;
  TickThread m_ticker;
};

/// Plain lines for logs and CI: a line per step; with counts (Ninja, CMake) a line per
/// 10% of progress; without (setuptools without ninja, pip's phases) a line per new
/// extension, compile or phase; and a "still running" line after each quiet interval.
class PlainDisplay : public TickingDisplay {
 public:
  PlainDisplay(std::FILE* out, const HeartbeatOptions& hb, std::string speaker)
      : TickingDisplay(out, hb, std::move(speaker)) {}
  ~PlainDisplay() override { m_ticker.stop(); }
  void step_started(const plan::Step& step, size_t index, size_t count) override {
    m_ticker.stop();
    {
      std::lock_guard lock(m_mutex);
      std::fprintf(m_out, "==> [%zu/%zu] %s\n", index + 1, count, step.title.c_str());
      std::fflush(m_out);
      m_last_decile = -1;
      m_last_shown.clear();
      m_last = BuildProgress{};
      m_heartbeat.start();
    }
    if (m_own_thread) m_ticker.start();
  }
  void progress(const BuildProgress& p) override {
    std::lock_guard lock(m_mutex);
    m_last = p;
    if (p.percent >= 0) {
      int decile = p.percent / 10;
      if (decile == m_last_decile) return;
      m_last_decile = decile;
      print(render_progress_line(p));
      return;
    }
    // No counts: show each new thing once (the elapsed time alone is not news).
    std::string what = fmt::format("{}|{}|{}", p.phase, p.current_command, p.compiles);
    if (what == m_last_shown) return;
    m_last_shown = what;
    print(render_progress_line(p));
  }
  void step_finished(const StepOutcome& o) override {
    m_ticker.stop();
    std::lock_guard lock(m_mutex);
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(o.duration);
    if (o.ok())
      std::fprintf(m_out, "    done in %s\n", format_duration(secs).c_str());
    else if (o.interrupted)  // stopped by a signal: not the step's failure
      std::fprintf(m_out, "    interrupted after %s\n", format_duration(secs).c_str());
    else
      std::fprintf(m_out, "    failed after %s (%s)\n", format_duration(secs).c_str(),
                   !o.started    ? "could not start"
                   : o.timed_out ? "timed out"
                                 : fmt::format("exit {}", o.exit_code).c_str());
    std::fflush(m_out);
  }

  void phase(std::string_view line) override { detail(line); }
  void detail(std::string_view line) override {
    std::lock_guard lock(m_mutex);
    std::fprintf(m_out, "%s: %s\n", m_speaker.c_str(), terminal_safe(line).c_str());
    std::fflush(m_out);
  }
  void warn(std::string_view line) override {
    std::lock_guard lock(m_mutex);
    print_warning(m_out, m_speaker, line);
  }

  void tick() override {
    std::lock_guard lock(m_mutex);
    if (m_heartbeat.due()) {
      std::fprintf(m_out, "    %s\n", render_heartbeat_line(m_last, m_heartbeat.elapsed()).c_str());
      std::fflush(m_out);
    }
  }

 private:
  void print(const std::string& line) {
    std::fprintf(m_out, "    %s\n", line.c_str());
    std::fflush(m_out);
    m_heartbeat.shown();
  }
  int m_last_decile = -1;
  std::string m_last_shown;
  BuildProgress m_last;
};

/// One status line rewritten in place, cut to the terminal width; redrawn with the elapsed
/// time and the last command after each quiet heartbeat interval. A command of phases gets
/// each phase as a line and below it a status line redrawn every tick: a spinner, the
/// seconds the phase has taken, what is under way.
class LiveDisplay : public TickingDisplay {
 public:
  LiveDisplay(std::FILE* out, const HeartbeatOptions& hb, std::string speaker)
      : TickingDisplay(out, hb, std::move(speaker)) {}
  ~LiveDisplay() override { stop(); }
  void step_started(const plan::Step& step, size_t index, size_t count) override {
    m_ticker.stop();
    {
      std::lock_guard lock(m_mutex);
      // The step's place only when there are several: a lone step's "[1/1]" beside Ninja's
      // "[3/12]" read as two nested counters.
      m_title = count > 1 ? fmt::format("step {}/{} {}", index + 1, count, step.title) : step.title;
      m_last = BuildProgress{};
      m_have_progress = false;
      m_heartbeat.start();
      draw(m_title);
    }
    if (m_own_thread) m_ticker.start();
  }
  void progress(const BuildProgress& p) override {
    std::lock_guard lock(m_mutex);
    m_last = p;
    m_last_at = m_heartbeat.elapsed();
    m_have_progress = true;
    draw(m_title + ": " + render_progress_line(p));
    m_heartbeat.shown();
  }
  void step_finished(const StepOutcome& o) override {
    m_ticker.stop();
    std::lock_guard lock(m_mutex);
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(o.duration);
    draw(m_title +
         (o.ok()          ? ": done in "
          : o.interrupted ? ": interrupted after "
                          : ": FAILED after ") +
         format_duration(secs));
    std::fputc('\n', m_out);
    std::fflush(m_out);
  }

  void phase(std::string_view line) override {
    bool start_ticker = false;
    {
      std::lock_guard lock(m_mutex);
      if (m_stopped) return;
      clear_status();
      std::fprintf(m_out, "%s: %s\n", m_speaker.c_str(), terminal_safe(line).c_str());
      m_detail.clear();
      m_heartbeat.start();
      start_ticker = !m_phases && m_own_thread;
      m_phases = true;
      draw_phase_status();
    }
    if (start_ticker) m_ticker.start();
  }
  void detail(std::string_view line) override {
    std::lock_guard lock(m_mutex);
    m_detail = terminal_safe(line);
    draw_phase_status();
  }
  void warn(std::string_view line) override {
    std::lock_guard lock(m_mutex);
    clear_status();
    print_warning(m_out, m_speaker, line);
    draw_phase_status();
  }
  void stop() override {
    m_ticker.stop();
    std::lock_guard lock(m_mutex);
    if (m_stopped) return;
    m_stopped = true;
    clear_status();
  }

  void tick() override {
    std::lock_guard lock(m_mutex);
    if (m_phases) {
      ++m_spin;
      draw_phase_status();
      return;
    }
    // With progress, the line is redrawn every tick, in place: its elapsed time and ETA move
    // while the build prints nothing ("elapsed 2s, extension 8" stood still for 31 s).
    // Before any, the heartbeat line comes at the heartbeat's pace.
    if (!m_have_progress && !m_heartbeat.due()) return;
    // The status line with the elapsed time of the step, whatever the build printed last;
    // its ETA counts down from when that was, and gives way once it has run out.
    BuildProgress p = aged(m_last, m_heartbeat.elapsed() - m_last_at);
    p.elapsed = m_heartbeat.elapsed();
    draw(m_title + ": " +
         (m_have_progress ? render_progress_line(p) : render_heartbeat_line(p, p.elapsed)));
  }

 private:
  void draw(const std::string& line) {
    std::fprintf(m_out, "\r\033[K%s", fit_status_line(line, terminal_width(m_out)).c_str());
    std::fflush(m_out);
  }
  /// A phase's status line: spinner, the phase's seconds, what is under way.
  void draw_phase_status() {
    if (!m_phases || m_stopped) return;
    static constexpr char k_spin[] = {'|', '/', '-', '\\'};
    draw(fmt::format("  {} {} s  {}", k_spin[m_spin % 4], m_heartbeat.elapsed().count(), m_detail));
    m_status_shown = true;
  }
  void clear_status() {
    if (m_status_shown) std::fputs("\r\033[K", m_out);
    m_status_shown = false;
    std::fflush(m_out);
  }
  std::string m_title;
  BuildProgress m_last;
  std::chrono::seconds m_last_at{0};  ///< the step's elapsed time when m_last came
  bool m_have_progress = false;
  bool m_phases = false;        ///< a command of phases (phase() came)
  bool m_status_shown = false;  ///< a phase's status line is on the screen
  bool m_stopped = false;
  std::string m_detail;  ///< what is under way in the phase
  unsigned m_spin = 0;
};

}  // namespace

std::unique_ptr<ProgressDisplay> make_progress_display(DisplayStyle style, std::FILE* out,
                                                       HeartbeatOptions heartbeat,
                                                       std::string speaker) {
  switch (style) {
    case DisplayStyle::live:
      return std::make_unique<LiveDisplay>(out, heartbeat, std::move(speaker));
    case DisplayStyle::plain:
      return std::make_unique<PlainDisplay>(out, heartbeat, std::move(speaker));
    case DisplayStyle::quiet:
      break;
  }
  return std::make_unique<QuietDisplay>(out, std::move(speaker));
}

DisplayStyle default_display_style(std::FILE* out) {
  return is_smart_terminal(fileno(out)) ? DisplayStyle::live : DisplayStyle::plain;
}

std::string fit_status_line(std::string line, size_t width) {
  if (line.size() < width) return line;
  size_t cut = width > 4 ? width - 4 : width;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80)
    --cut;  // not inside a UTF-8 character
  return line.substr(0, cut) + "...";
}

}  // namespace tailor::builder
