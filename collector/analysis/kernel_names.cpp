#include "analysis/kernel_names.h"

#include <array>
#include <cctype>
#include <vector>

namespace ncclwatch::analysis {
namespace {

constexpr std::size_t kMaxNameLength = 200;

void erase_all(std::string& s, std::string_view what) {
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at))
    s.erase(at, what.size());
}

// "0x7f3a..." addresses (lambda captures, pointers printed into a name) carry no meaning.
void erase_addresses(std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '0' && i + 2 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X') &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2])) &&
        (i == 0 || !std::isalnum(static_cast<unsigned char>(s[i - 1])))) {
      i += 2;
      while (i < s.size() && std::isxdigit(static_cast<unsigned char>(s[i]))) ++i;
      --i;
      continue;
    }
    out += s[i];
  }
  s = std::move(out);
}

// The text before the parameter list: up to the first '(' outside template brackets.
std::string_view without_parameters(std::string_view s) {
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>' && depth > 0) --depth;
    if (s[i] == '(' && depth == 0 && i > 0) return s.substr(0, i);
  }
  return s;
}

// The last space-separated word outside template brackets: drops a return type ("void ").
std::string_view without_return_type(std::string_view s) {
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>' && depth > 0) --depth;
    if (s[i] == ' ' && depth == 0 && i + 1 < s.size()) start = i + 1;
  }
  return s.substr(start);
}

struct Stripped {
  std::string name;       // template arguments removed
  std::string first_arg;  // the outermost template's first argument, as written
};

Stripped strip_templates(std::string_view s) {
  Stripped out;
  int depth = 0;
  bool first_done = false;
  for (char c : s) {
    const bool in_first = depth >= 1 && !first_done;
    if (c == '<') {
      if (in_first) out.first_arg += c;  // nested: kept, stripped by the caller
      ++depth;
      continue;
    }
    if (c == '>' && depth > 0) {
      --depth;
      if (depth >= 1 && !first_done) out.first_arg += c;
      if (depth == 0) first_done = true;
      continue;
    }
    if (depth == 0) {
      out.name += c;
    } else if (in_first) {
      if (depth == 1 && c == ',') {
        first_done = true;
      } else {
        out.first_arg += c;
      }
    }
  }
  return out;
}

std::string trim(std::string s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

// Launcher templates whose name says nothing; their operator (first argument) is the kernel.
bool generic_launcher(std::string_view name) {
  const std::size_t colon = name.rfind("::");
  const std::string_view last = colon == std::string_view::npos ? name : name.substr(colon + 2);
  static constexpr std::array<std::string_view, 5> kGeneric = {"Kernel", "Kernel2", "device_kernel",
                                                               "kernel", "KernelWrapper"};
  for (std::string_view g : kGeneric)
    if (last == g) return true;
  return false;
}

bool names_a_type(std::string_view arg) {
  return !arg.empty() && (std::isalpha(static_cast<unsigned char>(arg[0])) || arg[0] == '_') &&
         arg != "true" && arg != "false";
}

}  // namespace

std::string normalize_kernel_name(std::string_view name) {
  std::string s(name.substr(0, 4096));
  erase_all(s, "(anonymous namespace)::");
  erase_all(s, "(anonymous namespace)");
  erase_addresses(s);
  const std::string signature = trim(std::string(without_parameters(s)));
  const std::string_view head = without_return_type(signature);
  Stripped st = strip_templates(head);
  std::string out = trim(st.name);
  const std::string arg = trim(st.first_arg);
  if (generic_launcher(out) && names_a_type(arg)) {
    out += "<" + trim(strip_templates(without_return_type(arg)).name) + ">";
  }
  if (out.empty()) out = trim(s);
  if (out.size() > kMaxNameLength) out.resize(kMaxNameLength);
  return out;
}

std::string nccl_algorithm_of(std::string_view kernel_name) {
  const std::string_view head = without_parameters(kernel_name);
  if (head.find("nccl") == std::string_view::npos) return "";
  std::vector<std::string_view> tokens;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= head.size(); ++i) {
    if (i == head.size() || head[i] == '_') {
      if (i > start) tokens.push_back(head.substr(start, i - start));
      start = i + 1;
    }
  }
  std::string algorithm, protocol;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string_view t = tokens[i];
    const std::string_view next = i + 1 < tokens.size() ? tokens[i + 1] : std::string_view();
    if (algorithm.empty() && (t == "RING" || t == "TREE" || t == "PAT")) {
      algorithm = std::string(t);
    } else if (algorithm.empty() && t == "NVLS") {
      algorithm = next == "TREE" ? "NVLS_TREE" : "NVLS";
      if (next == "TREE") ++i;
    } else if (algorithm.empty() && t == "COLLNET") {
      algorithm =
          (next == "DIRECT" || next == "CHAIN") ? "COLLNET_" + std::string(next) : "COLLNET";
      if (next == "DIRECT" || next == "CHAIN") ++i;
    } else if (!algorithm.empty() && protocol.empty() &&
               (t == "LL" || t == "LL128" || t == "SIMPLE")) {
      protocol = std::string(t);
    }
  }
  if (algorithm.empty()) return "";
  return protocol.empty() ? algorithm : algorithm + "/" + protocol;
}

}  // namespace ncclwatch::analysis
