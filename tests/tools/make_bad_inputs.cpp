// make_bad_inputs OUTDIR REAL_LOG: writes the hostile and odd inputs the CLI tests run
// `ncclwatch` on (tests/tools/CMakeLists.txt), generated rather than committed because they are
// large or binary:
//   random-1m.bin            1 MiB of pseudo-random bytes (no NCCL log at all)
//   unreadable.log           an NCCL log nobody but root may read (mode 000)
//   private/nccl.log         an NCCL log in a directory only its owner may enter (mode 0700)
//   fifo.log                 a FIFO no one writes to
//   hung-init-40k.log        40,000 lines of a job hung in init: every thread starts a comm init
//                            and none completes (the shape that made the parser quadratic)
//   nonutf8.log              REAL_LOG with a byte 0xff in every host name
//   bomb.json.gz             a 1 MiB gzip inflating to one 1 GiB Kineto event
//   bomb-events.json.gz      a 1 MiB gzip inflating to 1 GiB of small valid events (a gzip bomb
//                            that only the bound on the inflated size stops)
//   trace-big/               a 2-rank ncclwatch trace directory of 1 M records (64 MiB; its load
//                            peaks at ~520 MB), for the out-of-memory test under `ulimit -v`
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "gzip.h"

#include "synthetic_trace_writer.h"

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

// One complete gzip member holding `bytes` (concatenated members are one stream to gunzip).
std::string gzip_member(const std::string& bytes) {
  return ncclwatch::test_support::gzip(bytes, 9, 9);
}

std::string hung_init_log(int lines) {
  std::string text;
  for (int i = 0; i < lines; ++i) {
    // One process (pid 100) whose init threads each start a comm of their own and hang.
    text += fmt::format(
        "node0:100:{} [0] NCCL INFO ncclCommInitRank comm 0x{:x} rank 0 nranks 2 cudaDev 0 "
        "nvmlDev 0 busId 1000 commId 0x{:x} - Init START\n",
        200 + i, 0x9000 + i, 0x70000 + i);
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_bad_inputs OUTDIR REAL_LOG\n");
    return 2;
  }
  try {
    const fs::path dir = argv[1];
    fs::create_directories(dir);

    std::mt19937_64 rng(42);
    std::string random(1 << 20, '\0');
    for (auto& c : random) c = static_cast<char>(rng() & 0xff);
    write_file(dir / "random-1m.bin", random);

    std::ifstream real(argv[2], std::ios::binary);
    std::stringstream log;
    log << real.rdbuf();
    if (log.str().empty()) throw std::runtime_error(std::string("cannot read ") + argv[2]);
    fs::remove(dir / "unreadable.log");
    write_file(dir / "unreadable.log", log.str());
    fs::permissions(dir / "unreadable.log", fs::perms::none);
    // The same log inside a directory only its owner may enter (0700): for another user a path
    // the CLI cannot reach (permission denied, not "no such file").
    fs::remove_all(dir / "private");
    fs::create_directories(dir / "private");
    write_file(dir / "private" / "nccl.log", log.str());
    fs::permissions(dir / "private", fs::perms::owner_all);

    // Host names are the text before the first ':' of an NCCL line: put 0xff into each.
    std::string bad;
    std::string line;
    std::istringstream lines(log.str());
    while (std::getline(lines, line)) {
      const std::size_t colon = line.find(':');
      if (line.find("NCCL INFO") != std::string::npos && colon != std::string::npos && colon > 0)
        line.insert(colon, "\xff");
      bad += line + "\n";
    }
    write_file(dir / "nonutf8.log", bad);

    fs::remove(dir / "fifo.log");
    if (mkfifo((dir / "fifo.log").c_str(), 0600) != 0) throw std::runtime_error("mkfifo");

    write_file(dir / "hung-init-40k.log", hung_init_log(40000));

    // 1 GiB of 'a' inside one event's name: 64 members of 16 MiB each, compressed once.
    std::string bomb = gzip_member(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": ")");
    const std::string block = gzip_member(std::string(std::size_t{16} << 20, 'a'));
    for (int i = 0; i < 64; ++i) bomb += block;
    bomb += gzip_member(R"(", "ts": 1, "dur": 1}]})");
    write_file(dir / "bomb.json.gz", bomb);

    std::string events;
    while (events.size() < (std::size_t{16} << 20))
      events +=
          R"({"ph": "i", "cat": "cpu_instant_event", "name": "x", "pid": 1, "tid": 1, "ts": 1},)";
    std::string bomb2 = gzip_member(R"({"traceEvents": [)");
    const std::string events_block = gzip_member(events);
    for (int i = 0; i < 64; ++i) bomb2 += events_block;
    bomb2 += gzip_member(R"({"ph": "i", "name": "end", "ts": 1}]})");
    write_file(dir / "bomb-events.json.gz", bomb2);

    fs::remove_all(dir / "trace-big");
    fs::create_directories(dir / "trace-big");
    ncclwatch::bench::SyntheticJob job;
    job.dir = (dir / "trace-big").string();
    job.ranks = 2;
    job.ranks_per_host = 2;
    job.records_per_rank = 1 << 19;
    job.mix = "host";
    ncclwatch::bench::write_synthetic_job(job);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_bad_inputs: %s\n", e.what());
    return 1;
  }
  return 0;
}
