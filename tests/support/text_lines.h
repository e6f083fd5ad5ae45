// A text's lines and words, for tests that check what a report printed (wrapping, widths).
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace ncclwatch::test {

// The lines of a text, without their '\n'.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The words of a text, whatever spaces and line breaks sit between them.
inline std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace ncclwatch::test
