// Renderers of one inspect result: JSON with stable field names for scripts, and text
// tables (a bar per target showing its share of the bytes) for people.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inspect/inspect_report.h"
#include "inspect/verdicts.h"

namespace tailor::inspect {

nlohmann::json to_json(const InspectReport& report, const Verdicts* verdicts = nullptr);

struct TextOptions {
  bool color = false;          // reserved: plain text today
  bool all_libraries = false;  // full detail also for libraries without device code
};
std::string render_text(const InspectReport& report, const Verdicts* verdicts = nullptr,
                        const TextOptions& options = {});

/// One self-contained HTML page (util/html.h) of the same result: bytes per target per
/// library as stacked bars, totals, compression, the verdicts as a library x GPU grid.
/// `inputs` are the paths as given, for the title.
std::string render_html(const InspectReport& report, const Verdicts* verdicts,
                        const std::vector<std::string>& inputs);

/// "████░░░░░░" for a share in [0,1], `width` cells.
std::string share_bar(double share, int width = 10);

}  // namespace tailor::inspect
