#include "kineto/event_splitter.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace ncclwatch::kineto {
namespace {
// Top-level keys are only compared with a few short names: a longer one need not be kept whole.
constexpr std::size_t kMaxKeyBytes = 256;
}  // namespace

EventSplitter::EventSplitter(Sink& sink, std::vector<std::string> wanted_top_level_keys,
                             std::size_t max_event_bytes)
    : sink_(sink), wanted_(std::move(wanted_top_level_keys)), max_event_bytes_(max_event_bytes) {}

// Whether the capture may grow by `more` bytes; fails the document when it may not.
bool EventSplitter::carry_fits(std::size_t more) {
  if (carry_.size() + more <= max_event_bytes_) return true;
  fail(
      fmt::format("{} #{} is larger than {} MiB: not a profiler trace event (corrupt file or "
                  "gzip bomb?)",
                  capture_top_ ? "top-level value" : "event", events_ + 1, max_event_bytes_ >> 20));
  carry_.clear();
  carry_.shrink_to_fit();
  return false;
}

void EventSplitter::fail(std::string message) {
  if (state_ == State::kError) return;
  state_ = State::kError;
  error_ = std::move(message);
  capturing_ = false;
}

void EventSplitter::start_capture(std::size_t at, bool top_level) {
  capturing_ = true;
  capture_top_ = top_level;
  carrying_ = false;
  cap_begin_ = at;
  if (top_level) top_key_ = key_;
}

void EventSplitter::end_capture(const char* data, std::size_t end) {
  std::string_view json;
  if (carrying_) {
    if (!carry_fits(end - cap_begin_)) return;
    carry_.append(data + cap_begin_, end - cap_begin_);
    const std::size_t len = carry_.size();
    carry_.resize(len + kSplitterPadding, ' ');  // padding simdjson may read
    json = std::string_view(carry_.data(), len);
  } else {
    if (end - cap_begin_ > max_event_bytes_) return (void)carry_fits(end - cap_begin_);
    json = std::string_view(data + cap_begin_, end - cap_begin_);
  }
  capturing_ = false;
  if (capture_top_) {
    sink_.on_top_level(top_key_, json);
  } else {
    ++events_;
    sink_.on_event(json);
  }
  if (carrying_) {
    carry_.clear();
    carrying_ = false;
  }
}

// One structural character (outside strings) at index i of the current chunk.
void EventSplitter::structural(const char* data, std::size_t i, char c) {
  switch (c) {
    case '{':
    case '[':
      if (depth_ == 1 && top_is_object_) {
        if (expect_value_) {
          expect_value_ = false;
          if (key_ == "traceEvents") {
            if (c != '[') return fail("\"traceEvents\" is not an array");
            if (events_depth_ != 0) return fail("two \"traceEvents\" arrays");
            events_depth_ = 2;
          } else if (std::find(wanted_.begin(), wanted_.end(), key_) != wanted_.end()) {
            start_capture(i, true);
          }
        }
      } else if (events_depth_ != 0 && depth_ == events_depth_ && c == '{') {
        start_capture(i, false);
      }
      ++depth_;
      return;
    case '}':
    case ']':
      if (depth_ == 0) return fail("unbalanced '" + std::string(1, c) + "'");
      --depth_;
      if (capturing_ && depth_ == (capture_top_ ? 1u : events_depth_)) {
        end_capture(data, i + 1);
      }
      if (depth_ == 0) {
        state_ = State::kDone;
        complete_ = true;
      }
      return;
    case ',':
      if (depth_ == 1 && top_is_object_) {
        expect_key_ = true;
        expect_value_ = false;
      }
      return;
    case ':':
      if (depth_ == 1 && top_is_object_) expect_value_ = true;
      return;
    default:
      // A scalar value at depth 1: it is not the array we look for.
      if (depth_ == 1 && top_is_object_ && expect_value_ && c != ' ' && c != '\n' && c != '\r' &&
          c != '\t') {
        expect_value_ = false;
        if (key_ == "traceEvents") fail("\"traceEvents\" is not an array");
      }
      return;
  }
}

void EventSplitter::feed(const char* data, std::size_t len) {
  bytes_ += len;
  std::size_t i = 0;
  if (capturing_) {
    carrying_ = true;
    cap_begin_ = 0;
  }
  if (state_ == State::kStart) {
    while (i < len && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t'))
      ++i;
    if (i == len) return;
    if (data[i] == '{') {
      top_is_object_ = true;
      expect_key_ = true;
    } else if (data[i] == '[') {
      events_depth_ = 1;  // the Chrome "JSON array format": the document is the events array
    } else {
      return fail("not JSON (starts with neither '{' nor '[')");
    }
    depth_ = 1;
    state_ = State::kBody;
    ++i;
  }
  while (i < len && state_ == State::kBody) {
    if (in_string_) {
      if (escape_) {  // the escaped character ended the previous chunk's scan
        escape_ = false;
        ++i;
        continue;
      }
      // Fast scan to the end of the string; most bytes of a trace are inside strings.
      const char* p = data + i;
      const char* end = data + len;
      while (p < end && *p != '"' && *p != '\\') {
        if (key_string_ && key_.size() < kMaxKeyBytes) key_.push_back(*p);
        ++p;
      }
      i = static_cast<std::size_t>(p - data);
      if (p == end) break;
      if (*p == '\\') {
        if (key_string_ && key_.size() < kMaxKeyBytes) key_.push_back('\\');
        if (i + 1 < len) {
          if (key_string_ && key_.size() < kMaxKeyBytes) key_.push_back(data[i + 1]);
          i += 2;
        } else {
          escape_ = true;
          ++i;
        }
        continue;
      }
      in_string_ = false;
      key_string_ = false;
      ++i;
      continue;
    }
    const char c = data[i];
    if (c == '"') {
      in_string_ = true;
      if (depth_ == 1 && top_is_object_) {
        if (expect_key_) {
          key_.clear();
          key_string_ = true;
          expect_key_ = false;
        } else if (expect_value_) {
          expect_value_ = false;
          if (key_ == "traceEvents") fail("\"traceEvents\" is not an array");
        }
      }
    } else if (c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':') {
      structural(data, i, c);
    } else if (depth_ == 1 && expect_value_) {
      structural(data, i, c);
    }
    ++i;
  }
  if (capturing_) {
    if (!carrying_) carry_.clear();
    if (!carry_fits(len - cap_begin_)) return;
    carry_.append(data + cap_begin_, len - cap_begin_);
    carrying_ = true;
  }
}

void EventSplitter::finish() {
  if (state_ == State::kError) return;
  if (state_ == State::kStart) return fail("empty file");
  if (state_ == State::kDone) {
    if (events_depth_ == 0) fail("not a Chrome trace (no \"traceEvents\" array)");
    return;
  }
  // Ended inside the document. The bare-array format may legally omit its closing ']'.
  if (!top_is_object_ && depth_ == 1 && !in_string_) {
    complete_ = true;
    state_ = State::kDone;
    return;
  }
  capturing_ = false;
  carry_.clear();
  if (events_depth_ == 0)
    return fail("not a Chrome trace (no \"traceEvents\" array before the end)");
  complete_ = false;  // truncated: the events before the cut were delivered
  state_ = State::kDone;
}

}  // namespace ncclwatch::kineto
