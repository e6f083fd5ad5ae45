#include "topology/dump_reader.h"

#include "topology/text_scan.h"
#include "topology/xml_reader.h"

namespace ncclwatch::topology {
namespace {

int int_attr(const XmlElement& e, std::string_view key, int fallback = -1) {
  const std::string* v = e.attribute(key);
  int out = fallback;
  if (v == nullptr || !scan::whole_int(*v, out)) return fallback;
  return out;
}

double num_attr(const XmlElement& e, std::string_view key) {
  const std::string* v = e.attribute(key);
  if (v == nullptr) return 0;
  std::string_view t = *v;
  double out = 0;
  return scan::decimal(t, out) ? out : 0;
}

std::string str_attr(const XmlElement& e, std::string_view key) {
  const std::string* v = e.attribute(key);
  return v == nullptr ? std::string() : *v;
}

void read_graphs(const XmlDocument& doc, std::size_t graphs, GraphDump& out) {
  for (std::size_t gi : doc.elements[graphs].children) {
    const XmlElement& g = doc.elements[gi];
    if (g.name != "graph") continue;
    GraphSearch s;
    s.pattern = int_attr(g, "pattern");
    s.cross_nic = int_attr(g, "crossnic");
    s.nchannels = int_attr(g, "nchannels");
    // Attribute names changed in 2.12 (speed -> bw).
    s.bw_intra = g.attribute("bwintra") ? num_attr(g, "bwintra") : num_attr(g, "speedintra");
    s.bw_inter = g.attribute("bwinter") ? num_attr(g, "bwinter") : num_attr(g, "speedinter");
    s.type_intra = str_attr(g, "typeintra");
    s.type_inter = str_attr(g, "typeinter");
    s.evidence = "<graph id=\"" + str_attr(g, "id") + "\" pattern=\"" + str_attr(g, "pattern") +
                 "\" nchannels=\"" + str_attr(g, "nchannels") + "\">";
    for (std::size_t ci : g.children) {
      const XmlElement& c = doc.elements[ci];
      if (c.name != "channel") continue;
      std::vector<std::string> tokens;
      for (std::size_t ni : c.children) {
        const XmlElement& n = doc.elements[ni];
        if (n.name == "net")
          tokens.push_back("NET/" + str_attr(n, "dev"));
        else if (n.name == "gpu")
          tokens.push_back("GPU/" + str_attr(n, "dev"));
      }
      s.channels.push_back(std::move(tokens));
    }
    out.graphs.push_back(std::move(s));
  }
}

}  // namespace

bool read_dump(const std::string& file, std::string_view text, LogSet& set) {
  XmlDocument doc = read_xml(text);
  set.stats.xml_elements += doc.elements.size() > 0 ? doc.elements.size() - 1 : 0;
  if (!doc.error.empty())
    set.problems.push_back({file, "XML: " + doc.error + " (kept what came before)"});
  const XmlElement& root = doc.elements[0];
  for (std::size_t top : root.children) {
    const XmlElement& t = doc.elements[top];
    if (t.name == "graphs") {
      GraphDump g;
      g.file = file;
      read_graphs(doc, top, g);
      set.graph_dumps.push_back(std::move(g));
      return true;
    }
    if (t.name == "system") {
      TopoDump d;
      d.file = file;
      // Walk the whole subtree (CPU -> PCI -> ... -> GPU/NIC) without recursion.
      std::vector<std::size_t> stack(t.children.begin(), t.children.end());
      while (!stack.empty()) {
        const XmlElement& e = doc.elements[stack.back()];
        stack.pop_back();
        if (e.name == "gpu")
          ++d.gpus;
        else if (e.name == "nvlink")
          ++d.nvlinks;
        else if (e.name == "net") {
          ++d.nics;
          d.nic_names.push_back(str_attr(e, "name"));
        }
        stack.insert(stack.end(), e.children.begin(), e.children.end());
      }
      set.topo_dumps.push_back(std::move(d));
      return true;
    }
  }
  return false;
}

}  // namespace ncclwatch::topology
