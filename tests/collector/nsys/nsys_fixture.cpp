#include "nsys_fixture.h"

#include <sqlite3.h>

#include <unistd.h>
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace ncclwatch::nsys::testing {
namespace {

// The columns `nsys export` writes (a subset of each table: enough that the reader must pick
// its columns by name among others).
constexpr const char* kSchema = R"SQL(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
  nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
  copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
  srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER,
  migrationCause INTEGER, graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL,
  bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
  int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
  floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL,
  label TEXT NOT NULL);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER NOT NULL, devStateName TEXT NOT NULL,
  name TEXT NOT NULL, nameEnum INTEGER NOT NULL, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT,
  systemClockNs INTEGER);
CREATE TABLE META_DATA_CAPTURE (name TEXT NOT NULL, value TEXT);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.25.0');
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (34, 'NvtxMark', 'NvtxMark'),
  (59, 'NvtxPushPopRange', 'NvtxPushPopRange'), (60, 'NvtxStartEndRange', 'NvtxStartEndRange'),
  (75, 'NvtxDomainCreate', 'NvtxDomainCreate');
)SQL";

constexpr const char* kMinimalSchema = R"SQL(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, globalPid INTEGER,
  shortName INTEGER NOT NULL);
)SQL";

constexpr const char* kGpuInfo = R"SQL(
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
  busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER,
  memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER, uuid TEXT,
  luid INTEGER, chipName TEXT, cuDevice INTEGER);
)SQL";

class Db {
 public:
  explicit Db(const std::string& path) {
    ::unlink(path.c_str());
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) fail("open");
  }
  ~Db() { sqlite3_close(db_); }
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string e = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error("fixture SQL: " + e);
    }
  }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) fail(sql);
    return s;
  }
  // Binds `values` (integers; nullptr-free) and runs the insert.
  void insert(sqlite3_stmt* s, std::initializer_list<int64_t> values) {
    int i = 1;
    for (int64_t v : values) sqlite3_bind_int64(s, i++, v);
    step(s);
  }
  void step(sqlite3_stmt* s) {
    if (sqlite3_step(s) != SQLITE_DONE) fail("insert");
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("fixture SQLite " + what + ": " + sqlite3_errmsg(db_));
  }

 private:
  sqlite3* db_ = nullptr;
};

int64_t global_pid(int64_t pid) {
  return (int64_t{1} << 48) | (pid << 24);
}

}  // namespace

uint64_t write_nsys_export(const std::string& path, const FixtureSpec& spec,
                           std::vector<FixtureSpan>* spans) {
  Db db(path);
  db.exec(spec.minimal_schema ? kMinimalSchema : kSchema);
  if (spec.target_info_gpu && !spec.minimal_schema) db.exec(kGpuInfo);
  db.exec("BEGIN");
  sqlite3_stmt* str = db.prepare("INSERT INTO StringIds VALUES (?, ?)");
  std::map<std::string, int64_t> ids;
  auto id_of = [&](const std::string& s) {
    auto [it, fresh] = ids.try_emplace(s, static_cast<int64_t>(ids.size() + 1));
    if (fresh) {
      sqlite3_bind_int64(str, 1, it->second);
      sqlite3_bind_text(str, 2, s.c_str(), -1, SQLITE_TRANSIENT);
      db.step(str);
    }
    return it->second;
  };
  sqlite3_stmt* kernel =
      spec.minimal_schema
          ? db.prepare("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?)")
          : db.prepare(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, "
                "streamId, correlationId, globalPid, demangledName, shortName, "
                "registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
                "staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, "
                "gridId) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, 32, 4, 1, 1, 256, 1, 1, 0, 0, 0, 0, "
                "?)");
  sqlite3_stmt* runtime = spec.minimal_schema
                              ? nullptr
                              : db.prepare(
                                    "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES "
                                    "(?, ?, 0, ?, ?, ?, 0, NULL)");
  sqlite3_stmt* memcpy = spec.minimal_schema
                             ? nullptr
                             : db.prepare(
                                   "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, "
                                   "deviceId, contextId, streamId, correlationId, "
                                   "globalPid, bytes, copyKind) VALUES (?, ?, ?, 1, 7, ?, "
                                   "?, ?, 1)");
  sqlite3_stmt* memset = spec.minimal_schema
                             ? nullptr
                             : db.prepare(
                                   "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, "
                                   "deviceId, contextId, streamId, correlationId, "
                                   "globalPid, value, bytes) VALUES (?, ?, ?, 1, 7, ?, ?, "
                                   "0, ?)");
  sqlite3_stmt* nvtx = spec.minimal_schema
                           ? nullptr
                           : db.prepare(
                                 "INSERT INTO NVTX_EVENTS (start, end, eventType, text, "
                                 "globalTid, textId, domainId) VALUES (?, ?, ?, ?, ?, ?, ?)");
  auto range = [&](int64_t start, int64_t end, int64_t gtid, const std::string& text,
                   bool registered) {
    sqlite3_bind_int64(nvtx, 1, start);
    sqlite3_bind_int64(nvtx, 2, end);
    sqlite3_bind_int64(nvtx, 3, 59);
    if (registered)
      sqlite3_bind_null(nvtx, 4);
    else
      sqlite3_bind_text(nvtx, 4, text.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(nvtx, 5, gtid);
    if (registered)
      sqlite3_bind_int64(nvtx, 6, id_of(text));
    else
      sqlite3_bind_null(nvtx, 6);
    sqlite3_bind_int64(nvtx, 7, 0);
    db.step(nvtx);
  };

  const std::string gemm = "ampere_sgemm_128x64_tn";
  const std::string nccl =
      spec.generic_kernels
          ? "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"
          : "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  const int64_t launch_name = id_of("cudaLaunchKernel_v7000");
  int64_t max_delay = 0;
  for (const auto& p : spec.processes) max_delay = std::max(max_delay, p.nccl_delay_us);
  uint64_t rows = 0;
  int64_t corr = 1;
  for (std::size_t pi = 0; pi < spec.processes.size(); ++pi) {
    const FixtureProcess& p = spec.processes[pi];
    const int64_t gpid = global_pid(p.pid), gtid = gpid | p.pid;
    const int last = p.last_step >= 0 ? p.last_step : spec.steps - 1;
    auto gpu = [&](const std::string& name, int64_t stream, int64_t launch_us, int64_t start_us,
                   int64_t end_us, bool comm, int64_t step_base) {
      const int64_t c = corr++;
      const int64_t s = spec.base_ns + (step_base + start_us) * 1000;
      const int64_t e = spec.base_ns + (step_base + end_us) * 1000;
      if (spec.minimal_schema) {
        db.insert(kernel, {s, e, p.device, stream, gpid, id_of(name)});
      } else {
        db.insert(kernel, {s, e, p.device, stream, c, gpid, id_of(name), id_of(name), c});
        const int64_t l = spec.base_ns + (step_base + launch_us) * 1000;
        db.insert(runtime, {l, l + 4000, gtid, c, launch_name});
      }
      ++rows;
      if (spans != nullptr) spans->push_back({pi, comm, s, e});
    };
    for (int st = p.first_step; st <= last; ++st) {
      const int64_t b = st * spec.step_us;
      for (int k = 0; k < 4; ++k) gpu(gemm, 7, k * 2000 - 10, k * 2000, k * 2000 + 1500, false, b);
      for (int j = 0; j < spec.allreduces_per_step; ++j) {
        const int64_t launch = 1000 + 3000 * j + p.nccl_delay_us;
        gpu(nccl, 13, launch, launch + 10, 1000 + 3000 * j + max_delay + 710, true, b);
        if (spec.nccl_nvtx && nvtx != nullptr) {
          const int64_t l = spec.base_ns + (b + launch) * 1000;
          range(l - 5000, l + 8000, gtid, "ncclAllReduce", true);
        }
      }
      if (spec.minimal_schema) continue;
      const int64_t m = spec.base_ns + (b + 9000) * 1000;
      db.insert(memcpy, {m, m + 200'000, p.device, corr++, gpid, 4 << 20});
      db.insert(memset, {m + 300'000, m + 310'000, p.device, corr++, gpid, 4096});
      if (spec.nvtx_steps) {
        const int64_t s0 = spec.base_ns + b * 1000;
        range(s0, s0 + (spec.step_us - 200) * 1000, gtid, "train_step", st % 2 == 0);
        // PyTorch's emit_nvtx operator ranges: operators, never steps, even named "step".
        range(s0 + 8'000'000, s0 + 8'500'000, gtid, "Optimizer.step#SGD.step, op_id = 77", false);
        range(s0 + 100'000, s0 + 120'000, gtid, "aten::mm, op_id = 12", false);
      }
    }
  }
  if (!spec.minimal_schema) {
    sqlite3_stmt* proc = db.prepare("INSERT INTO PROCESSES VALUES (?, ?, ?)");
    for (const auto& p : spec.processes) {
      sqlite3_bind_int64(proc, 1, global_pid(p.pid));
      sqlite3_bind_int64(proc, 2, p.pid);
      sqlite3_bind_text(proc, 3, "python3", -1, SQLITE_STATIC);
      db.step(proc);
    }
    sqlite3_bind_int64(proc, 1, global_pid(42));
    sqlite3_bind_int64(proc, 2, 42);
    sqlite3_bind_text(proc, 3, "torchrun", -1, SQLITE_STATIC);
    db.step(proc);
    sqlite3_finalize(proc);
    sqlite3_stmt* env = db.prepare(
        "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES "
        "(281474976710656, 'Local (CLI)', ?, 619, ?)");
    sqlite3_bind_text(env, 1, "Hostname", -1, SQLITE_STATIC);
    sqlite3_bind_text(env, 2, spec.hostname.c_str(), -1, SQLITE_TRANSIENT);
    db.step(env);
    sqlite3_finalize(env);
    sqlite3_stmt* start =
        db.prepare("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?, '', '', ?)");
    db.insert(start, {spec.utc_epoch_ns, spec.system_clock_ns});
    sqlite3_finalize(start);
    sqlite3_stmt* meta = db.prepare("INSERT INTO META_DATA_CAPTURE VALUES (?, ?)");
    auto add_meta = [&](const std::string& name, const std::string& value) {
      sqlite3_bind_text(meta, 1, name.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(meta, 2, value.c_str(), -1, SQLITE_TRANSIENT);
      db.step(meta);
    };
    add_meta("PROCESS_0:COMMAND", "python");
    add_meta("PROCESS_0:ENVIRONMENT_VARIABLE", "PATH=\"/usr/bin\"");
    for (const auto& [k, v] : spec.env)
      add_meta("PROCESS_0:ENVIRONMENT_VARIABLE", fmt::format("{}=\"{}\"", k, v));
    sqlite3_finalize(meta);
    if (spec.target_info_gpu) {
      sqlite3_stmt* gpu = db.prepare(
          "INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation) "
          "VALUES (0, ?, 'NVIDIA H100 80GB HBM3', ?)");
      for (const auto& p : spec.processes) {
        sqlite3_bind_int64(gpu, 1, p.device);
        const std::string bus = fmt::format("0000:{:02x}:00.0", 0x18 + p.device);
        sqlite3_bind_text(gpu, 2, bus.c_str(), -1, SQLITE_TRANSIENT);
        db.step(gpu);
      }
      sqlite3_finalize(gpu);
    }
  }
  for (sqlite3_stmt* s : {str, kernel, runtime, memcpy, memset, nvtx}) sqlite3_finalize(s);
  db.exec("COMMIT");
  return rows;
}

}  // namespace ncclwatch::nsys::testing
