#include "cli_output.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "base/error.h"
#include "report/terminal.h"

namespace h0::cli {

bool use_color() {
  static const bool color = report::color_enabled(STDOUT_FILENO);
  return color;
}

std::string colored(const std::string& text, const char* code) {
  if (!use_color()) return text;
  return std::string("\033[") + code + "m" + text + "\033[0m";
}

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string golden_root(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (std::filesystem::is_directory("golden")) return "golden";
  return std::string(HARNESS_SOURCE_DIR) + "/golden";
}

}  // namespace h0::cli

namespace h0::cli {

std::string default_platform(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* rel = "configs/platforms/cpu.yaml";
  if (std::filesystem::exists(rel)) return rel;
  return std::string(HARNESS_SOURCE_DIR) + "/" + rel;
}

void require_store_file(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw InputError(path, "no results store here (write one with `harness run`, or pass --db)");
  }
}

}  // namespace h0::cli
