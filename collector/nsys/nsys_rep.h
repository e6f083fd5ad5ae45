// An Nsight Systems report (.nsys-rep, or .qdrep before 2021.3) is nsys' own format; ncclwatch
// reads the SQLite export of it. With `nsys` on PATH the report is exported into a private
// directory (`nsys export --type sqlite`); without it the caller says how to export it.
#pragma once

#include <string>

namespace ncclwatch::nsys {

// A file named like an Nsight Systems report (.nsys-rep, .qdrep).
bool is_report_name(const std::string& path);

// The `nsys` executable on PATH ("" when there is none).
std::string find_nsys();

// The line to say when `report` cannot be converted here.
std::string export_hint(const std::string& report);

// Runs `nsys export --type sqlite --output OUT --force-overwrite true REPORT` (no shell; output
// to /dev/null; at most `timeout_s` seconds). False with `error` set when nsys fails or wrote
// no file.
bool export_report(const std::string& nsys, const std::string& report, const std::string& out,
                   std::string& error, int timeout_s = 1800);

}  // namespace ncclwatch::nsys
