// NCCL_TOPO_DUMP_FILE (<system> ... <gpu> <nvlink> <nic><net>) and NCCL_GRAPH_DUMP_FILE
// (<graphs><graph pattern.. nchannels..><channel><net dev/><gpu dev/>..) into the LogSet.
#pragma once

#include <string>
#include <string_view>

#include "topology/nccl_log.h"

namespace ncclwatch::topology {

// Reads one XML dump; keeps what is valid and adds a line to set.problems for what is not.
// Returns false if the text is neither a topology nor a graph dump.
bool read_dump(const std::string& file, std::string_view text, LogSet& set);

}  // namespace ncclwatch::topology
