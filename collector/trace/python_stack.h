// Where a stuck rank is in its Python code (docs/always-on.md, "Where a stuck rank is"): the text
// `py-spy dump` prints (py-spy 0.4: with or without --full-filenames, --locals, --native), read
// into threads and frames, and reduced to the one frame that says where the rank is. Parsing only:
// running py-spy is live/py_spy.h, the saved files are trace/stack_file.h. The text is untrusted
// (a saved file may be anything): every line is bounded, every name made printable.
#pragma once

#include <string>
#include <vector>

namespace ncclwatch::trace {

struct PyFrame {
  std::string function;  // "__next__", "Thread.run", "<module>"; native: "clock_nanosleep"
  std::string file;  // as printed: a full path, a short one ("torch/x.py"), "<string>", "libc.so.6"
  int line = 0;      // 0 = none printed (a native frame)
};

struct PyThread {
  std::string id;               // "25832", "0x7F3A..."
  std::string state;            // "idle", "active", "active+gil", ...
  std::string name;             // "MainThread"; "" if py-spy printed none
  std::vector<PyFrame> frames;  // innermost first, as py-spy prints them
};

struct PyDump {
  std::string python;  // "3.11.7", "" if not printed
  std::vector<PyThread> threads;
};

// Reads py-spy's dump text. Lines it does not know are skipped; a dump with no "Thread" line has no
// threads (the caller says "no Python stack").
PyDump parse_py_spy_dump(const std::string& text);

// What a frame's file is.
enum class FrameKind {
  kStandardLibrary,  // the interpreter's own ("/usr/lib/python3.11/threading.py", "queue.py",
                     // "<frozen importlib._bootstrap>")
  kLibrary,          // an installed package (".../site-packages/torch/...", "torch/...")
  kApplication,      // the job's own code ("/home/a/train.py", "train.py", "<string>")
  kNative,           // a C/C++ frame (py-spy --native): "libc.so.6", no line
};
FrameKind frame_kind(const PyFrame& f);

// "torch/utils/data/dataloader.py" for ".../site-packages/torch/utils/data/dataloader.py"; the
// file name alone for the application's own full paths ("/home/a/proj/train.py" -> "train.py");
// short names as printed.
std::string display_file(const PyFrame& f);

// Where a process is (see python_stack.cpp for the rule, and why).
struct StackLocation {
  bool found = false;  // a Python frame to name
  std::string thread;  // the thread it was read from ("MainThread")
  std::string where;   // "torch/utils/data/dataloader.py:__next__"
  int line = 0;
  std::string innermost;  // the innermost frame outside the standard library, if not `where`
  std::string caller;     // "train.py:88 (train)": the code that called into `where`'s library
};
StackLocation locate(const PyDump& dump);

// "torch/utils/data/dataloader.py:__next__, called from train.py:88 (train)"; "" if not found.
std::string describe(const StackLocation& loc);

}  // namespace ncclwatch::trace
