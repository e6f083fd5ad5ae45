// Splits a Chrome-trace JSON document, fed in chunks, into its events without parsing it whole:
// a small state machine that knows strings, escapes and nesting finds each element of the
// `traceEvents` array (or of a bare top-level array, which the Chrome format also allows) and
// hands it to a sink as one complete JSON object. Top-level values the caller asks for (e.g.
// `distributedInfo`) are handed over the same way. Each event is passed in place when it lies
// inside one chunk, and copied only when it straddles two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ncclwatch::kineto {

// Bytes readable after every buffer handed to a sink (what simdjson needs to parse in place).
inline constexpr std::size_t kSplitterPadding = 64;

class EventSplitter {
 public:
  class Sink {
   public:
    virtual ~Sink() = default;
    // `json` is one complete object; at least kSplitterPadding readable bytes follow it.
    virtual void on_event(std::string_view json) = 0;
    virtual void on_top_level(std::string_view key, std::string_view json) = 0;
  };

  // An event (or wanted top-level value) longer than this fails the document: a Kineto event is
  // a few hundred bytes, and one of a gigabyte (a gzip bomb, a corrupt file) must not be copied
  // into memory.
  static constexpr std::size_t kDefaultMaxEventBytes = std::size_t{16} << 20;

  EventSplitter(Sink& sink, std::vector<std::string> wanted_top_level_keys,
                std::size_t max_event_bytes = kDefaultMaxEventBytes);

  // `data` must have kSplitterPadding readable bytes after `len` (they are not interpreted).
  void feed(const char* data, std::size_t len);
  // End of input. Afterwards error() says what, if anything, was wrong with the document.
  void finish();

  bool failed() const { return state_ == State::kError; }
  const std::string& error() const { return error_; }
  bool found_events() const { return events_depth_ != 0; }
  bool complete() const { return complete_; }  // the document closed properly
  uint64_t events() const { return events_; }
  uint64_t bytes() const { return bytes_; }

 private:
  enum class State : uint8_t { kStart, kBody, kDone, kError };
  void fail(std::string message);
  void start_capture(std::size_t at, bool top_level);
  void end_capture(const char* data, std::size_t end);
  void structural(const char* data, std::size_t i, char c);
  bool carry_fits(std::size_t more);

  Sink& sink_;
  std::vector<std::string> wanted_;
  State state_ = State::kStart;
  std::string error_;
  bool complete_ = false;
  bool in_string_ = false;
  bool escape_ = false;
  bool top_is_object_ = false;
  bool expect_key_ = false;    // depth 1 of the top object: next string is a key
  bool key_string_ = false;    // inside that key string
  bool expect_value_ = false;  // depth 1: after ':'
  std::string key_;            // last key at depth 1
  uint32_t depth_ = 0;
  uint32_t events_depth_ = 0;  // depth inside the events array, 0 until found
  // Capture of the current event (or wanted top-level value).
  bool capturing_ = false;
  bool capture_top_ = false;
  bool carrying_ = false;      // the capture began in an earlier chunk: its head is in carry_
  std::size_t cap_begin_ = 0;  // where the capture starts in the current chunk
  std::string carry_;
  std::size_t max_event_bytes_;
  std::string top_key_;
  uint64_t events_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace ncclwatch::kineto
