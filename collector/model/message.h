// The one way ncclwatch speaks to a person on stderr (README, "Exit codes": every message starts
// with "ncclwatch: "): every command of the CLI and the library code it calls (report, dump, ...)
// say their lines through say(), never with a prefix of their own.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace ncclwatch::model {

inline constexpr std::string_view kMessagePrefix = "ncclwatch: ";

// "ncclwatch: TEXT\n" on `to`, one line: a line break inside TEXT (a path or a name taken from an
// input) becomes a space, so that one message is one line whatever it quotes.
inline void say(std::FILE* to, std::string_view text) {
  std::string line(kMessagePrefix);
  line.reserve(kMessagePrefix.size() + text.size() + 1);
  for (char c : text) line += (c == '\n' || c == '\r') ? ' ' : c;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), to);
}

}  // namespace ncclwatch::model
