// The one live recorder of a process: settings, segment + ring, trace file and drain thread.
// Created by ensure_recorder() at the first NCCL call; finished by the atexit handler.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "record/ring.h"
#include "record/segment.h"
#include "record/settings.h"
#include "record/trace_writer.h"

namespace ncclwatch::shim {

class RecorderInstance {
 public:
  // nullptr + *error (one line) when the segment or the trace file cannot be created.
  static std::unique_ptr<RecorderInstance> create(const Settings& settings, std::string* error);
  ~RecorderInstance();

  Ring& ring() { return ring_; }
  const Settings& settings() const { return settings_; }
  format::SegmentHeader* header() const { return segment_->header(); }
  const std::string& segment_name() const { return segment_->name(); }
  const std::string& trace_path() const { return trace_path_; }

  // Updates the header's identity (rank, world, local rank, device) and records it.
  void set_identity(int rank, int world_size, int local_rank, int device,
                    format::RankSource source);

  // Stops the drain thread, drains the rest, closes the trace file, removes the segment.
  void finish();
  // Forked child: forget everything the parent owns without touching it.
  void abandon();

 private:
  RecorderInstance() = default;
  void drain_loop();
  bool drain_once();
  void emit_clock();

  Settings settings_;
  std::unique_ptr<Segment> segment_;
  std::unique_ptr<TraceWriter> writer_;
  std::string trace_path_;
  Ring ring_;
  std::thread drain_;
  std::atomic<bool> stop_{false};
  bool write_failed_ = false;
  bool finished_ = false;
};

}  // namespace ncclwatch::shim
