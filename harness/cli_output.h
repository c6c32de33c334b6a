// Small helpers shared by the subcommands' human-readable output.
#pragma once

#include <cstdint>
#include <string>

#include "base/text_format.h"

namespace h0::cli {

// Whether stdout gets ANSI colours: --color always / never, else (auto) the user's terminal with
// NO_COLOR unset (report::color_enabled).
bool use_color();
// Wraps `text` in an ANSI color when use_color(); `code` is e.g. "32" (green), "31" (red).
std::string colored(const std::string& text, const char* code);
// A number in %.6g form.
std::string short_number(double v);
// The golden/ directory: `flag` if given, else ./golden, else the source tree's.
std::string golden_root(const std::string& flag);
// Throws InputError unless `path` is an existing results store: the read-only commands never
// create one (a typo would otherwise show an empty new store).
void require_store_file(const std::string& path);
// The platform config: `flag` if given, else configs/platforms/cpu.yaml here or in the source tree.
std::string default_platform(const std::string& flag);

}  // namespace h0::cli
