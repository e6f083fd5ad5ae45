// The shim's NCCL log capture, through the environment (no LD_PRELOAD needed).
#include "nccl_log_capture.h"
#include "ncclwatch/names.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace {

const char* const kVars[] = {"NCCL_DEBUG",
                             "NCCL_DEBUG_FILE",
                             "NCCL_DEBUG_SUBSYS",
                             "NCCL_TOPO_DUMP_FILE",
                             "NCCL_TOPO_DUMP_FILE_RANK",
                             "NCCL_GRAPH_DUMP_FILE",
                             "NCCL_GRAPH_DUMP_FILE_RANK",
                             "LOCAL_RANK",
                             "RANK",
                             "OMPI_COMM_WORLD_LOCAL_RANK",
                             "OMPI_COMM_WORLD_RANK",
                             "SLURM_LOCALID",
                             "SLURM_PROCID",
                             "MPI_LOCALRANKID",
                             "PMI_RANK",
                             "PMIX_RANK",
                             "MV2_COMM_WORLD_LOCAL_RANK",
                             "MV2_COMM_WORLD_RANK"};

// As the load-time constructor calls it: with the marker the process inherited (and the host
// name from gethostname, as without NCCLWATCH_HOST).
void prepare(const char* trace_dir, const char* host = nullptr) {
  ncclwatch::shim::prepare_nccl_logging(trace_dir, host,
                                        std::getenv(ncclwatch::shim::kNcclEnvMarker));
}

class Capture : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) ::unsetenv(v);
  }
  void TearDown() override { SetUp(); }
  static std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? "<unset>" : v;
  }
  // "<host>.<pid>" of this process's dump names (the trace's naming).
  static std::string host_pid() {
    char h[256] = {};
    ::gethostname(h, sizeof h - 1);
    return ncclwatch::format::sanitize_name(h) + "." + std::to_string(::getpid());
  }
};

TEST_F(Capture, NothingSetGivesInfoLogIntoTheTraceDirAndDumpsOnLocalRankZero) {
  ::setenv("LOCAL_RANK", "0", 1);
  ::setenv("RANK", "8", 1);
  prepare("/tmp/trace");
  EXPECT_EQ(env("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(env("NCCL_DEBUG_FILE"), "/tmp/trace/nccl-debug.%h.%p.log");
  std::string subsys = env("NCCL_DEBUG_SUBSYS");
  EXPECT_NE(subsys.find("INIT"), std::string::npos);
  EXPECT_NE(subsys.find("GRAPH"), std::string::npos);
  EXPECT_EQ(env("NCCL_TOPO_DUMP_FILE"), "/tmp/trace/nccl-topo." + host_pid() + ".xml");
  EXPECT_EQ(env("NCCL_GRAPH_DUMP_FILE"), "/tmp/trace/nccl-graph." + host_pid() + ".xml");
  EXPECT_EQ(env("NCCL_TOPO_DUMP_FILE_RANK"), "8");
  EXPECT_EQ(env("NCCL_GRAPH_DUMP_FILE_RANK"), "8");
}

// Containers that share a host name share the dump's directory too: the pid keeps their dumps
// apart (NCCL does not expand %p in these variables), and the host name is sanitized like in
// the trace's name (a '/' would leave the directory).
TEST_F(Capture, DumpNamesAreTheSanitizedHostAndThePid) {
  prepare("/tmp/trace", "node 7/../x<y>");
  const std::string pid = std::to_string(::getpid());
  EXPECT_EQ(env("NCCL_TOPO_DUMP_FILE"), "/tmp/trace/nccl-topo.node_7_.._x_y_." + pid + ".xml");
  EXPECT_EQ(env("NCCL_GRAPH_DUMP_FILE"), "/tmp/trace/nccl-graph.node_7_.._x_y_." + pid + ".xml");
  SetUp();
  prepare("/tmp/trace", "");  // no name given: this host's, sanitized
  EXPECT_EQ(env("NCCL_TOPO_DUMP_FILE"), "/tmp/trace/nccl-topo." + host_pid() + ".xml");
}

TEST_F(Capture, OtherLocalRanksDumpNothing) {
  ::setenv("SLURM_LOCALID", "3", 1);
  ::setenv("SLURM_PROCID", "11", 1);
  prepare("/tmp/trace");
  EXPECT_EQ(env("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(env("NCCL_TOPO_DUMP_FILE"), "<unset>");
  EXPECT_EQ(env("NCCL_GRAPH_DUMP_FILE"), "<unset>");
  EXPECT_EQ(env("NCCL_TOPO_DUMP_FILE_RANK"), "<unset>");
}

TEST_F(Capture, UnknownRankLeavesNcclsDefaultDumpRank) {
  prepare("/tmp/trace");
  EXPECT_NE(env("NCCL_TOPO_DUMP_FILE"), "<unset>");
  EXPECT_EQ(env("NCCL_TOPO_DUMP_FILE_RANK"), "<unset>");
}

TEST_F(Capture, UsersSubsysIsKept) {
  ::setenv("NCCL_DEBUG_SUBSYS", "COLL", 1);
  prepare("/tmp/trace");
  EXPECT_EQ(env("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(env("NCCL_DEBUG_SUBSYS"), "COLL");
}

TEST_F(Capture, UsersDebugWithoutFileIsLeftAlone) {
  // INFO with no file goes to the user's stdout: adding a file would hide it from them.
  ::setenv("NCCL_DEBUG", "WARN", 1);
  prepare("/tmp/trace");
  EXPECT_EQ(env("NCCL_DEBUG"), "WARN");
  EXPECT_EQ(env("NCCL_DEBUG_FILE"), "<unset>");
  EXPECT_EQ(env("NCCL_DEBUG_SUBSYS"), "<unset>");
}

TEST_F(Capture, UsersFileWithoutLevelIsLeftAlone) {
  ::setenv("NCCL_DEBUG_FILE", "/home/me/nccl.log", 1);
  prepare("/tmp/trace");
  EXPECT_EQ(env("NCCL_DEBUG"), "<unset>");
  EXPECT_EQ(env("NCCL_DEBUG_FILE"), "/home/me/nccl.log");
}

TEST_F(Capture, UsersDumpFilesWin) {
  ::setenv("NCCL_TOPO_DUMP_FILE", "/mine.xml", 1);
  ::setenv("RANK", "0", 1);
  prepare("/tmp/trace");
  EXPECT_EQ(env("NCCL_TOPO_DUMP_FILE"), "/mine.xml");
  EXPECT_EQ(env("NCCL_TOPO_DUMP_FILE_RANK"), "<unset>");
  EXPECT_NE(env("NCCL_GRAPH_DUMP_FILE"), "<unset>");
}

TEST_F(Capture, NoTraceDirOrAHugeOneDoesNothing) {
  prepare(nullptr);
  prepare("");
  EXPECT_EQ(env("NCCL_DEBUG"), "<unset>");
  std::string huge(5000, 'd');
  prepare(huge.c_str());
  // Never NCCL_DEBUG without its file (it would print into the user's output).
  EXPECT_EQ(env("NCCL_DEBUG"), "<unset>");
  EXPECT_EQ(env("NCCL_DEBUG_FILE"), "<unset>");
  EXPECT_EQ(env("NCCL_TOPO_DUMP_FILE"), "<unset>");
}

TEST_F(Capture, GarbageLocalRankIsIgnored) {
  ::setenv("LOCAL_RANK", "abc", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  prepare("/tmp/trace");
  EXPECT_EQ(env("NCCL_TOPO_DUMP_FILE"), "<unset>");  // the next launcher variable says local rank 1
}

}  // namespace
