// `--steps A:B` (with --trace) on `report` and `run`: checked while parsing, so a malformed
// window is a usage error (exit 2) before any work.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "export/chrome_trace.h"

namespace ncclwatch::tools {

inline CLI::Validator steps_validator() {
  return CLI::Validator(
      [](std::string& text) {
        exporter::StepWindow w;
        return exporter::StepWindow::parse(text, w)
                   ? std::string()
                   : std::string("expected A:B, A: or A (1-based step numbers, A <= B)");
      },
      "A:B");
}

}  // namespace ncclwatch::tools
