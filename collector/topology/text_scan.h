// Small, bounds-checked helpers for scanning log text (no exceptions, no locale).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace ncclwatch::topology::scan {

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

inline void skip_spaces(std::string_view& s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
}

inline bool eat(std::string_view& s, std::string_view word) {
  if (s.substr(0, word.size()) != word) return false;
  s.remove_prefix(word.size());
  return true;
}

// A decimal integer with optional '-'; at most 9 digits (rank and channel numbers), so it never
// overflows. Leaves `s` after the number on success, untouched on failure.
inline bool integer(std::string_view& s, int64_t& out) {
  std::string_view t = s;
  bool neg = eat(t, "-");
  if (t.empty() || !is_digit(t.front())) return false;
  int64_t v = 0;
  int digits = 0;
  while (!t.empty() && is_digit(t.front())) {
    if (++digits > 18) return false;
    v = v * 10 + (t.front() - '0');
    t.remove_prefix(1);
  }
  out = neg ? -v : v;
  s = t;
  return true;
}

inline bool small_int(std::string_view& s, int& out) {
  std::string_view t = s;
  int64_t v = 0;
  if (!integer(t, v) || v > 100000000 || v < -100000000) return false;
  out = static_cast<int>(v);
  s = t;
  return true;
}

// The whole of `s` is one small integer.
inline bool whole_int(std::string_view s, int& out) {
  return small_int(s, out) && s.empty();
}

// A decimal number like "40.000000" or "12" (no exponent); bounded.
inline bool decimal(std::string_view& s, double& out) {
  std::string_view t = s;
  int64_t whole = 0;
  if (!integer(t, whole)) return false;
  double v = static_cast<double>(whole < 0 ? -whole : whole);
  if (eat(t, ".")) {
    double scale = 0.1;
    int digits = 0;
    while (!t.empty() && is_digit(t.front())) {
      if (++digits <= 12) v += (t.front() - '0') * scale;
      scale /= 10;
      t.remove_prefix(1);
    }
  }
  out = whole < 0 || s.substr(0, 1) == "-" ? -v : v;
  s = t;
  return true;
}

// Splits on runs of spaces.
inline std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  s = trim(s);
  while (!s.empty()) {
    std::size_t n = 0;
    while (n < s.size() && !is_space(s[n])) ++n;
    out.push_back(s.substr(0, n));
    s.remove_prefix(n);
    skip_spaces(s);
  }
  return out;
}

}  // namespace ncclwatch::topology::scan
