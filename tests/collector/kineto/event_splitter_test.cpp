// The event splitter: strings, escapes and nesting; chunk boundaries anywhere; the two Chrome
// trace layouts; and what it says about documents that are not traces.
#include "kineto/event_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ncclwatch::kineto {
namespace {

struct Collect : EventSplitter::Sink {
  std::vector<std::string> events;
  std::vector<std::pair<std::string, std::string>> tops;
  void on_event(std::string_view json) override { events.emplace_back(json); }
  void on_top_level(std::string_view key, std::string_view json) override {
    tops.emplace_back(key, json);
  }
};

struct Result {
  std::vector<std::string> events;
  std::vector<std::pair<std::string, std::string>> tops;
  bool failed;
  bool complete;
  std::string error;
};

// Feeds `doc` in chunks of `chunk` bytes, each followed by padding, as the loader does.
Result run(const std::string& doc, std::size_t chunk) {
  Collect c;
  EventSplitter s(c, {"distributedInfo"});
  std::string buf;
  for (std::size_t at = 0; at < doc.size(); at += chunk) {
    const std::size_t n = std::min(chunk, doc.size() - at);
    buf.assign(doc, at, n);
    buf.append(kSplitterPadding, ' ');
    s.feed(buf.data(), n);
  }
  s.finish();
  return {c.events, c.tops, s.failed(), s.complete(), s.error()};
}

const std::string kTricky =
    R"({"schemaVersion": 1, "note": "a } and a ] and \" and \\", "traceEvents": [)"
    R"({"name": "a{b}[c]", "args": {"x": [1, {"y": "\"}"}]}},)"
    "\n  "
    R"({"name": "esc\\\"\\", "ph": "X"}, 5, "str", [1, 2], {"name": "last"}],)"
    R"( "distributedInfo": {"rank": 3, "ranks": [0, 1], "s": "}"}})";

TEST(EventSplitter, SplitsEventsWhateverTheChunking) {
  const Result whole = run(kTricky, kTricky.size());
  ASSERT_FALSE(whole.failed) << whole.error;
  EXPECT_TRUE(whole.complete);
  ASSERT_EQ(whole.events.size(), 3u);  // non-object elements are not events
  EXPECT_EQ(whole.events[0], R"({"name": "a{b}[c]", "args": {"x": [1, {"y": "\"}"}]}})");
  EXPECT_EQ(whole.events[1], R"({"name": "esc\\\"\\", "ph": "X"})");
  EXPECT_EQ(whole.events[2], R"({"name": "last"})");
  // The wanted top-level value comes after the events: still delivered, whole.
  ASSERT_EQ(whole.tops.size(), 1u);
  EXPECT_EQ(whole.tops[0].first, "distributedInfo");
  EXPECT_EQ(whole.tops[0].second, R"({"rank": 3, "ranks": [0, 1], "s": "}"})");
  for (std::size_t chunk : {1u, 2u, 3u, 7u, 16u, 64u}) {
    const Result r = run(kTricky, chunk);
    EXPECT_FALSE(r.failed) << chunk;
    EXPECT_EQ(r.events, whole.events) << "chunk " << chunk;
    EXPECT_EQ(r.tops, whole.tops) << "chunk " << chunk;
  }
}

TEST(EventSplitter, BareArrayLayoutWithAndWithoutClosingBracket) {
  const Result closed = run(R"([{"a": 1}, {"b": "]"}])", 5);
  ASSERT_FALSE(closed.failed);
  EXPECT_EQ(closed.events.size(), 2u);
  EXPECT_TRUE(closed.complete);
  // The Chrome trace format lets the ']' go missing (a process killed while writing).
  const Result open = run("[{\"a\": 1},\n{\"b\": 2},\n", 4);
  ASSERT_FALSE(open.failed) << open.error;
  EXPECT_EQ(open.events.size(), 2u);
  EXPECT_TRUE(open.complete);
}

TEST(EventSplitter, TruncatedDocumentKeepsWholeEvents) {
  const std::string doc = R"({"traceEvents": [{"a": 1}, {"b": 2}, {"c": "cut here)";
  const Result r = run(doc, 8);
  EXPECT_FALSE(r.failed);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.events.size(), 2u);
}

TEST(EventSplitter, SaysWhatIsWrongWithNonTraces) {
  EXPECT_EQ(run("hello world", 4).error, "not JSON (starts with neither '{' nor '[')");
  EXPECT_EQ(run("\x1f\x8b\x08 binary", 4).error, "not JSON (starts with neither '{' nor '[')");
  EXPECT_EQ(run("   \n ", 4).error, "empty file");
  EXPECT_EQ(run("", 4).error, "empty file");
  EXPECT_EQ(run(R"({"a": [1, 2], "b": {"traceEvents": []}})", 3).error,
            "not a Chrome trace (no \"traceEvents\" array)");  // nested key does not count
  EXPECT_EQ(run(R"({"traceEvents": {"a": 1}})", 3).error, "\"traceEvents\" is not an array");
  EXPECT_EQ(run(R"({"traceEvents": 12})", 3).error, "\"traceEvents\" is not an array");
  EXPECT_EQ(run(R"({"traceEvents": "x"})", 3).error, "\"traceEvents\" is not an array");
  EXPECT_EQ(run(R"({"a": 1, "b": [1, 2)", 3).error,
            "not a Chrome trace (no \"traceEvents\" array before the end)");
  EXPECT_EQ(run(R"({"traceEvents": []}]})", 3).error, "");  // trailing bytes after the end: ignored
}

}  // namespace
}  // namespace ncclwatch::kineto
