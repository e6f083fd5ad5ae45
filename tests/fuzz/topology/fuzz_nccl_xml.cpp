// Any bytes as an NCCL topology or graph XML dump: must never crash or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "topology/dump_reader.h"
#include "topology/xml_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ncclwatch::topology::XmlDocument doc = ncclwatch::topology::read_xml(text);
  for (const auto& e : doc.elements)
    for (std::size_t c : e.children)
      if (c >= doc.elements.size()) __builtin_trap();  // indices must stay inside the document
  ncclwatch::topology::LogSet set;
  ncclwatch::topology::read_dump("fuzz.xml", text, set);
  return 0;
}
