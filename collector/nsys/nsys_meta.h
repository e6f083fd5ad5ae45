// What an Nsight Systems export says about where and when it was captured: the host name, the
// wall clock of its timestamps, each device's PCI bus id, and the rank the launched process had
// in its job (from the environment nsys recorded for it).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "nsys/nsys_schema.h"
#include "nsys/sqlite_file.h"

namespace ncclwatch::nsys {

struct FileMeta {
  std::string host;            // TARGET_INFO_SYSTEM_ENV Hostname
  int64_t wall_offset_ns = 0;  // realtime = timestamp + this (TARGET_INFO_SESSION_START_TIME)
  std::map<int32_t, std::string> bus_ids;  // device -> PCI bus id (TARGET_INFO_GPU)
  int32_t env_rank = -1;                   // launcher rank variable, -1 if none recorded
  std::string env_rank_variable;
  int32_t env_world_size = -1;
  int32_t env_node = -1;  // GROUP_RANK, NODE_RANK, SLURM_NODEID
};

FileMeta read_meta(const SqliteFile& db, const ExportSchema& schema);

// NAME="value" (META_DATA_CAPTURE's PROCESS_n:ENVIRONMENT_VARIABLE rows) or NAME=value: false
// when `entry` is neither.
bool parse_environment_entry(std::string_view entry, std::string& name, std::string& value);

}  // namespace ncclwatch::nsys
