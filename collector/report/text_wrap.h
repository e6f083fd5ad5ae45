// Fitting the text report to the reader's terminal: how wide it is, and long lines broken at
// spaces with their continuation lines indented. Only the terminal text is wrapped; the JSON
// keeps every text whole.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace ncclwatch::report {

inline constexpr std::size_t kDefaultWidth = 100;  // not a terminal and no $COLUMNS
inline constexpr std::size_t kMinWidth = 40;       // below this, wrapping helps nobody

// The width a report printed to `out` wraps at: $COLUMNS when it is a positive number (the user
// asked for it, as `ls` and Python honour it), else the terminal's width when `out` is one, else
// kDefaultWidth; never below kMinWidth.
std::size_t output_width(std::FILE* out);

// Columns a UTF-8 text takes: one per code point ("—", "σ", "µ" are one column each).
std::size_t columns(std::string_view text);

// `head` then `text`, broken at spaces into lines of at most `width` columns, each continuation
// line starting with `indent`; the spaces at a break are dropped, all others kept. A word longer
// than a line (a path) stays whole, alone on its line. Width 0: one line. Ends with '\n'.
std::string wrap(std::string_view head, std::string_view text, std::size_t width,
                 std::string_view indent);

// One line of a section's body (without its '\n'), wrapped when it is prose: a line with a run of
// two spaces after its indentation is a table row or aligned text and is left as it is, as is a
// line that fits. Continuation lines are indented two more than the line. Ends with '\n'.
std::string wrap_prose_line(std::string_view line, std::size_t width);

}  // namespace ncclwatch::report
