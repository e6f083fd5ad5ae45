// How job and host names become parts of file and shared-memory names
// (/dev/shm/ncclwatch.<job>.<host>.<pid>, ncclwatch.<host>.<pid>.trace): the shim names its
// segment with it and `ncclwatch run`/`collect` find segments by it, so both use this one rule.
// Standard library only, like format.h.
#pragma once

#include <string>
#include <string_view>

namespace ncclwatch::format {

// [A-Za-z0-9._-] kept, anything else becomes '_', at most 63 characters, never empty.
inline std::string sanitize_name(std::string_view text) {
  std::string out;
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
    if (out.size() == 63) break;
  }
  if (out.empty()) out = "_";
  return out;
}

// The file name of part `part` of a process's trace (format.h, ProcessInfo::part): part 0 keeps
// the name every version used, "ncclwatch.<host>.<pid>.trace"; later parts are
// "ncclwatch.<host>.<pid>.<part>.trace". `host` is already a sanitized name part.
inline std::string trace_file_name(std::string_view host, long long pid, unsigned part) {
  std::string out = "ncclwatch.";
  out += host;
  out += '.';
  out += std::to_string(pid);
  if (part != 0) {
    out += '.';
    out += std::to_string(part);
  }
  out += ".trace";
  return out;
}

}  // namespace ncclwatch::format
