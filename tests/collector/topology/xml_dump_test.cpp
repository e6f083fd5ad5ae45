// The XML reader and NCCL's topology / graph dumps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "topology/dump_reader.h"
#include "topology/log_parser.h"
#include "topology/topology_report.h"
#include "topology/xml_reader.h"

namespace ncclwatch::topology {
namespace {

// The shape of NCCL_TOPO_DUMP_FILE (2.12+): CPUs, PCI switches, GPUs with NVLinks, NICs.
const char* kTopo = R"(<?xml version="1.0"?>
<!-- written by NCCL -->
<system version="1">
  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">
    <pci busid="0000:17:00.0" class="0x060400" vendor="0x10b5" device="0x8747" link_speed="16.0 GT/s PCIe" link_width="16">
      <pci busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x20b0" link_speed="16.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="80" rank="0" gdr="1">
          <nvlink target="0000:c0:00.0" count="12" tclass="0x068000"/>
        </gpu>
      </pci>
      <pci busid="0000:19:00.0" class="0x030200" vendor="0x10de" device="0x20b0" link_speed="16.0 GT/s PCIe" link_width="16">
        <gpu dev="1" sm="80" rank="1" gdr="1">
          <nvlink target="0000:c0:00.0" count="12" tclass="0x068000"/>
        </gpu>
      </pci>
      <pci busid="0000:1a:00.0" class="0x020700" vendor="0x15b3" device="0x101b" link_speed="16.0 GT/s PCIe" link_width="16">
        <nic>
          <net name="mlx5_0" dev="0" speed="200000" port="1" latency="0.000000" guid="0x1" maxconn="131072" gdr="1"/>
        </nic>
      </pci>
    </pci>
  </cpu>
</system>
)";

const char* kGraph = R"(<graphs version="1">
  <graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="24" speedinter="24" latencyinter="0" typeintra="NVL" typeinter="PIX" samechannels="1">
    <channel>
      <net dev="0"/>
      <gpu dev="0"/>
      <gpu dev="1"/>
      <net dev="0"/>
    </channel>
    <channel>
      <net dev="1"/>
      <gpu dev="1"/>
      <gpu dev="0"/>
      <net dev="1"/>
    </channel>
  </graph>
  <graph id="1" pattern="1" crossnic="0" nchannels="1" bwintra="40.0" bwinter="20.5" typeintra="NVL" typeinter="PIX" samechannels="0">
    <channel><net dev="0"/><gpu dev="0"/><gpu dev="1"/><net dev="0"/></channel>
  </graph>
</graphs>
)";

TEST(XmlReader, ElementsAndAttributes) {
  XmlDocument d =
      read_xml(R"(<?xml version="1.0"?><a x="1" y='two &amp; &lt;3'><b/><c z="q">text</c></a>)");
  EXPECT_EQ(d.error, "");
  ASSERT_EQ(d.elements.size(), 4u);
  const XmlElement& a = d.elements[d.elements[0].children.at(0)];
  EXPECT_EQ(a.name, "a");
  ASSERT_NE(a.attribute("y"), nullptr);
  EXPECT_EQ(*a.attribute("y"), "two & <3");
  EXPECT_EQ(a.attribute("nope"), nullptr);
  EXPECT_EQ(a.children.size(), 2u);
}

TEST(XmlReader, BadInputKeepsWhatCameBefore) {
  XmlDocument cut = read_xml("<a><b x=\"1\"/><c x=\"2");
  EXPECT_NE(cut.error, "");
  EXPECT_EQ(cut.elements.size(), 3u);  // root, a, b
  EXPECT_NE(read_xml("<a></b>").error, "");
  EXPECT_NE(read_xml("<a>").error, "");
  EXPECT_NE(read_xml("<!-- never ends").error, "");
  EXPECT_NE(read_xml("<a x=1/>").error, "");
  EXPECT_NE(read_xml("</a>").error, "");
  EXPECT_NE(read_xml("< a/>").error, "");
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<d>";
  EXPECT_NE(read_xml(deep).error, "");
  EXPECT_EQ(read_xml("").error, "");
  EXPECT_EQ(read_xml("just text").elements.size(), 1u);
}

TEST(Dumps, TopologyDump) {
  LogSet set;
  ASSERT_TRUE(read_dump("nccl-topo.node0.xml", kTopo, set));
  ASSERT_EQ(set.topo_dumps.size(), 1u);
  EXPECT_EQ(set.topo_dumps[0].gpus, 2);
  EXPECT_EQ(set.topo_dumps[0].nics, 1);
  EXPECT_EQ(set.topo_dumps[0].nvlinks, 2);
  EXPECT_EQ(set.topo_dumps[0].nic_names, std::vector<std::string>{"mlx5_0"});
  EXPECT_TRUE(set.problems.empty());
}

TEST(Dumps, GraphDumpOldAndNewAttributes) {
  LogSet set;
  ASSERT_TRUE(read_dump("nccl-graph.node0.xml", kGraph, set));
  ASSERT_EQ(set.graph_dumps.size(), 1u);
  const auto& g = set.graph_dumps[0].graphs;
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].pattern, 4);
  EXPECT_EQ(g[0].nchannels, 2);
  EXPECT_DOUBLE_EQ(g[0].bw_intra, 24.0);
  EXPECT_EQ(g[0].type_inter, "PIX");
  ASSERT_EQ(g[0].channels.size(), 2u);
  EXPECT_EQ(g[0].channels[1], (std::vector<std::string>{"NET/1", "GPU/1", "GPU/0", "NET/1"}));
  EXPECT_DOUBLE_EQ(g[1].bw_inter, 20.5);
}

TEST(Dumps, TruncatedAndForeignXml) {
  LogSet set;
  std::string cut(kGraph, 400);
  EXPECT_TRUE(read_dump("g.xml", cut, set));  // what came before the cut is kept
  ASSERT_EQ(set.problems.size(), 1u);
  EXPECT_EQ(set.problems[0].source, "g.xml");
  EXPECT_EQ(set.problems[0].message.rfind("XML: ", 0), 0u) << set.problems[0].message;
  EXPECT_FALSE(read_dump("pom.xml", "<project><modelVersion>4</modelVersion></project>", set));
  // Through the parser: an XML file that is no dump is one problem line.
  LogParser p;
  p.add_text("other.xml", "<project/>");
  p.add_text("nccl-topo.x.xml", kTopo);
  LogSet s = p.take();
  EXPECT_EQ(s.topo_dumps.size(), 1u);
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_EQ(s.problems[0].source, "other.xml");
  EXPECT_EQ(s.problems[0].message, "XML, but not an NCCL topology or graph dump");
}

// The shim names the dumps nccl-topo.<host>.<pid>.xml / nccl-graph.<host>.<pid>.xml (like the
// trace); traces written before were nccl-topo.<host>.xml. A trace dir finds and reads both.
TEST(Dumps, BothNamingsAreFoundInATraceDirAndRead) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("ncclwatch-dumps-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "nccl-topo.node0.xml") << kTopo;         // before the pid was added
  std::ofstream(dir / "nccl-topo.node1.4242.xml") << kTopo;    // now
  std::ofstream(dir / "nccl-graph.node1.4242.xml") << kGraph;  // now
  std::ofstream(dir / "nccl-topo.node1.4242.xml.swp") << "";   // not a dump
  const std::vector<std::string> logs = find_logs(dir.string());
  LogParser p;
  for (const auto& path : logs) p.add_file(path);
  const LogSet set = p.take();
  fs::remove_all(dir);
  ASSERT_EQ(logs.size(), 3u);
  EXPECT_EQ(set.topo_dumps.size(), 2u);
  EXPECT_EQ(set.graph_dumps.size(), 1u);
  EXPECT_TRUE(set.problems.empty());
}

}  // namespace
}  // namespace ncclwatch::topology
