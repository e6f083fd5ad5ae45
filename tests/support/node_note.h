// What a report merged from node files (`ncclwatch reduce`) adds to the report from the traces:
// one note saying so (pipeline/node_merge.h). The tests that prove the two reports the same
// compare them without it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ncclwatch::test_support {

inline constexpr const char* kNodeFileNote = "read from node files";

// `text` without the lines of the node-file note.
inline std::string without_node_note(const std::string& text) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string line = text.substr(at, end - at);
    if (line.find(kNodeFileNote) == std::string::npos) out += line;
    at = end;
  }
  return out;
}

// `j` without the array elements (notes, findings) that carry the node-file note.
inline nlohmann::json without_node_note(const nlohmann::json& j) {
  const auto carries = [](const nlohmann::json& e) {
    if (!e.is_object()) return false;
    for (const auto& [key, value] : e.items()) {
      if (value.is_string() && value.get<std::string>().find(kNodeFileNote) != std::string::npos)
        return true;
    }
    return false;
  };
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : j) {
      if (!carries(e)) out.push_back(without_node_note(e));
    }
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, value] : j.items()) out[key] = without_node_note(value);
    return out;
  }
  return j;
}

}  // namespace ncclwatch::test_support
