#include "topology/nccl_warnings.h"

namespace ncclwatch::topology {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::string cut(std::string_view text) {
  return std::string(text.substr(0, NcclWarnings::kMaxMessageBytes));
}

}  // namespace

std::string masked(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  std::size_t i = 0;
  while (i < message.size()) {
    std::size_t end = i;
    if (message.compare(i, 2, "0x") == 0 && i + 2 < message.size() && is_hex(message[i + 2])) {
      end = i + 2;
      while (end < message.size() && is_hex(message[end])) ++end;
    } else {
      while (end < message.size() && is_digit(message[end])) ++end;
    }
    if (end > i) {
      out += '#';
      i = end;
    } else {
      out += message[i++];
    }
  }
  return out;
}

void NcclWarnings::add(const std::string& file, const std::string& host, int64_t pid, int dev,
                       std::string_view site, std::string_view message, std::string_view raw) {
  ++lines;
  std::string key = std::string(site) + " " + masked(message.substr(0, kMaxMessageBytes));
  auto [at, added] = index_.try_emplace(std::move(key), groups.size());
  if (added) {
    if (groups.size() == kMaxGroups) {
      index_.erase(at);
      ++ungrouped;
      return;
    }
    WarnGroup g;
    g.key = at->first;
    g.first = {file, host, pid, dev, std::string(site), cut(message), cut(raw)};
    groups.push_back(std::move(g));
    members_.emplace_back();
  }
  WarnGroup& group = groups[at->second];
  ++group.count;
  auto& members = members_[at->second];
  std::pair<std::string, int64_t> who{host, pid};
  if (members.count(who) != 0) return;
  if (members.size() == kMaxProcesses) {
    group.more_processes = true;
    return;
  }
  group.processes.push_back(who);
  members.insert(std::move(who));
}

}  // namespace ncclwatch::topology
