#include "report/text_wrap.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace ncclwatch::report {

std::size_t output_width(std::FILE* out) {
  std::size_t width = kDefaultWidth;
  const char* env = std::getenv("COLUMNS");
  char* end = nullptr;
  const long from_env = env != nullptr ? std::strtol(env, &end, 10) : 0;
  winsize ws{};
  if (env != nullptr && end != env && *end == '\0' && from_env > 0) {
    width = static_cast<std::size_t>(from_env);
  } else if (out != nullptr && isatty(fileno(out)) == 1 &&
             ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    width = ws.ws_col;
  }
  return std::max(width, kMinWidth);
}

std::size_t columns(std::string_view text) {
  std::size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80 ? 1 : 0;  // not a continuation byte
  return n;
}

std::string wrap(std::string_view head, std::string_view text, std::size_t width,
                 std::string_view indent) {
  std::string out(head);
  if (width == 0) {
    out.append(text);
    out += '\n';
    return out;
  }
  std::size_t used = columns(head);
  bool line_has_word = false;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t word_at = i;
    while (word_at < text.size() && text[word_at] == ' ') ++word_at;
    std::size_t word_end = word_at;
    while (word_end < text.size() && text[word_end] != ' ') ++word_end;
    if (word_at == word_end) break;  // trailing spaces
    const std::string_view gap = text.substr(i, word_at - i);
    const std::string_view word = text.substr(word_at, word_end - word_at);
    const std::size_t w = columns(word);
    if (line_has_word && used + gap.size() + w > width) {
      out += '\n';
      out += indent;
      used = columns(indent);
    } else {
      out += gap;  // also a prose line's own indentation, before its first word
      used += gap.size();
    }
    out += word;
    used += w;
    line_has_word = true;
    i = word_end;
  }
  out += '\n';
  return out;
}

std::string wrap_prose_line(std::string_view line, std::size_t width) {
  const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
  const bool aligned = line.find("  ", indent) != std::string_view::npos;
  if (width == 0 || aligned || columns(line) <= width) return std::string(line) + '\n';
  return wrap("", line, width, std::string(indent + 2, ' '));
}

}  // namespace ncclwatch::report
