// A small XML reader for NCCL's topology and graph dumps (elements and attributes only; text,
// comments, declarations and DOCTYPE are skipped). Untrusted input: on an error it keeps the
// elements read so far and says where it stopped. Depth and size are bounded.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ncclwatch::topology {

struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::size_t parent = 0;  // index into XmlDocument::elements; the root's parent is itself
  std::vector<std::size_t> children;  // indices into XmlDocument::elements

  // The attribute's value, or nullptr.
  const std::string* attribute(std::string_view key) const;
};

struct XmlDocument {
  std::vector<XmlElement>
      elements;       // elements[0] is a synthetic root named "" holding the top level
  std::string error;  // empty when the whole input was well formed
};

inline constexpr std::size_t kXmlMaxDepth = 64;
inline constexpr std::size_t kXmlMaxElements = 1u << 20;

XmlDocument read_xml(std::string_view text);

}  // namespace ncclwatch::topology
