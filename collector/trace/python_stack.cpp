#include "trace/python_stack.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

namespace ncclwatch::trace {
namespace {

constexpr std::size_t kMaxLine = 8192;    // longer lines are not py-spy's: skipped
constexpr std::size_t kMaxField = 512;    // a name or a path, as kept
constexpr std::size_t kMaxFrames = 4096;  // per thread (Python's own limit is 1000 by default)
constexpr std::size_t kMaxThreads = 4096;

// Top-level modules of the Python standard library that show up on the stacks of training jobs
// (py-spy prints them shortened to "threading.py", "multiprocessing/queues.py", ...).
constexpr std::string_view kStdlib[] = {"threading",
                                        "queue",
                                        "selectors",
                                        "socket",
                                        "ssl",
                                        "subprocess",
                                        "multiprocessing",
                                        "concurrent",
                                        "asyncio",
                                        "contextlib",
                                        "functools",
                                        "runpy",
                                        "importlib",
                                        "logging",
                                        "json",
                                        "pickle",
                                        "copyreg",
                                        "weakref",
                                        "_weakrefset",
                                        "shutil",
                                        "tempfile",
                                        "os",
                                        "posixpath",
                                        "genericpath",
                                        "io",
                                        "_pyio",
                                        "codecs",
                                        "zipfile",
                                        "tarfile",
                                        "gzip",
                                        "bz2",
                                        "lzma",
                                        "signal",
                                        "random",
                                        "traceback",
                                        "linecache",
                                        "inspect",
                                        "typing",
                                        "abc",
                                        "enum",
                                        "collections",
                                        "dataclasses",
                                        "http",
                                        "urllib",
                                        "socketserver",
                                        "sched",
                                        "heapq",
                                        "copy",
                                        "pathlib",
                                        "glob",
                                        "re",
                                        "warnings",
                                        "pdb",
                                        "bdb",
                                        "code",
                                        "unittest",
                                        "argparse",
                                        "ctypes",
                                        "site",
                                        "pkgutil",
                                        "zipimport",
                                        "tokenize",
                                        "sysconfig",
                                        "uuid"};

// Installed frameworks, for dumps printed with short file names ("torch/utils/data/x.py").
constexpr std::string_view kLibraries[] = {"torch",
                                           "torchvision",
                                           "torchaudio",
                                           "torchdata",
                                           "torchtext",
                                           "lightning",
                                           "pytorch_lightning",
                                           "lightning_fabric",
                                           "transformers",
                                           "accelerate",
                                           "deepspeed",
                                           "megatron",
                                           "apex",
                                           "numpy",
                                           "scipy",
                                           "pandas",
                                           "datasets",
                                           "webdataset",
                                           "streaming",
                                           "tensorflow",
                                           "jax",
                                           "flax",
                                           "horovod",
                                           "fairscale",
                                           "timm",
                                           "huggingface_hub",
                                           "safetensors",
                                           "fsspec",
                                           "s3fs",
                                           "boto3",
                                           "botocore",
                                           "urllib3",
                                           "requests",
                                           "h5py",
                                           "PIL",
                                           "tqdm",
                                           "wandb",
                                           "ray",
                                           "pyarrow",
                                           "triton"};

// Torch's (and decorators') frames that only pass a call on: never the name of where a rank is.
constexpr std::string_view kWrappers[] = {"wrapper", "_wrapper",   "wrapped",
                                          "inner",   "_inner",     "decorate_context",
                                          "_fn",     "_call_impl", "_wrapped_call_impl"};

template <std::size_t N>
bool among(const std::string_view (&set)[N], std::string_view s) {
  return std::find(std::begin(set), std::end(set), s) != std::end(set);
}

// Printable ASCII only, bounded: the text may come from a file anyone could have written, and
// ends up in a terminal.
std::string clean(std::string_view s) {
  std::string out(s.substr(0, kMaxField));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return out;
}

// ESC [ ... letter: a dump copied from a terminal keeps py-spy's colours.
std::string without_ansi(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      std::size_t j = i + 2;
      while (j < text.size() && !std::isalpha(static_cast<unsigned char>(text[j]))) ++j;
      i = j;
      continue;
    }
    if (text[i] != '\r') out += text[i];
  }
  return out;
}

// "Thread 25832 (idle): "MainThread"" / "Thread 0x7F3A (active+gil)".
bool parse_thread_line(std::string_view line, PyThread& t) {
  if (!line.starts_with("Thread ")) return false;
  line.remove_prefix(7);
  const auto space = line.find(' ');
  t.id = clean(line.substr(0, space));
  if (space == std::string_view::npos) return true;
  line.remove_prefix(space + 1);
  if (line.starts_with("(")) {
    const auto close = line.find(')');
    if (close != std::string_view::npos) {
      t.state = clean(line.substr(1, close - 1));
      line.remove_prefix(close + 1);
    }
  }
  const auto open_quote = line.find('"');
  const auto close_quote = line.rfind('"');
  if (line.starts_with(":") && open_quote != std::string_view::npos && close_quote > open_quote)
    t.name = clean(line.substr(open_quote + 1, close_quote - open_quote - 1));
  return true;
}

// True if every '(' and '<' in `s` is closed, in order ("<module>", "f<int>()", not "f<void").
bool balanced(std::string_view s) {
  std::string open;
  for (char c : s) {
    if (c == '(' || c == '<') open += c;
    if (c == ')' || c == '>') {
      if (open.empty() || open.back() != (c == ')' ? '(' : '<')) return false;
      open.pop_back();
    }
  }
  return open.empty();
}

// "    function (file:line)" or "    function (file)" (a native frame). A file name may have " ("
// in it ("/home/a (copy)/x.py"), a C++ name from --native too ("std::function<void ()>::operator()
// (libtorch.so)"): the split is at the first " (" that leaves the name's brackets balanced.
bool parse_frame_line(std::string_view line, PyFrame& f) {
  if (!line.starts_with("    ") || line.size() < 8 || line[4] == ' ' || !line.ends_with(")"))
    return false;
  line.remove_prefix(4);
  line.remove_suffix(1);
  auto split = line.find(" (");
  while (split != std::string_view::npos && !balanced(line.substr(0, split)))
    split = line.find(" (", split + 1);
  if (split == std::string_view::npos) return false;
  const std::string_view func = line.substr(0, split);
  std::string_view loc = line.substr(split + 2);
  const auto colon = loc.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < loc.size() &&
      std::all_of(loc.begin() + static_cast<std::ptrdiff_t>(colon) + 1, loc.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    if (loc.size() - colon - 1 > 9) return false;  // no source file has a billion lines
    f.line = std::atoi(std::string(loc.substr(colon + 1)).c_str());
    loc = loc.substr(0, colon);
  }
  if (func.empty() || loc.empty()) return false;
  f.function = clean(func);
  f.file = clean(loc);
  return true;
}

bool has_python_frame(const PyThread& t) {
  return std::any_of(t.frames.begin(), t.frames.end(),
                     [](const PyFrame& f) { return frame_kind(f) != FrameKind::kNative; });
}

// The thread that says where the rank is: its main thread (the training loop), else the first
// thread with a Python frame.
const PyThread* pick_thread(const PyDump& dump) {
  for (const PyThread& t : dump.threads)
    if (t.name == "MainThread" && has_python_frame(t)) return &t;
  for (const PyThread& t : dump.threads)
    if (has_python_frame(t)) return &t;
  return nullptr;
}

constexpr std::string_view kSitePackages[] = {"/site-packages/", "/dist-packages/"};

// "torch" for ".../site-packages/torch/x.py" and for "torch/x.py".
std::string package_of(const std::string& file) {
  std::string_view rest = file;
  for (std::string_view marker : kSitePackages) {
    const auto at = rest.rfind(marker);
    if (at != std::string_view::npos) {
      rest.remove_prefix(at + marker.size());
      break;
    }
  }
  return std::string(rest.substr(0, rest.find('/')));
}

// Where the file name starts below "/lib/python3.11/" (or lib64, python2.7): the interpreter's
// own library; npos if the path has no such part.
std::size_t below_stdlib_root(const std::string& file) {
  for (std::string_view lib : {"/lib/python", "/lib64/python"}) {
    for (auto at = file.find(lib); at != std::string::npos; at = file.find(lib, at + 1)) {
      const std::size_t v = at + lib.size();
      if (v < file.size() && std::isdigit(static_cast<unsigned char>(file[v])) != 0) {
        const auto slash = file.find('/', v);
        if (slash != std::string::npos) return slash + 1;
      }
    }
  }
  return std::string::npos;
}

std::string frame_text(const PyFrame& f) {
  return display_file(f) + ":" + f.function;
}

}  // namespace

PyDump parse_py_spy_dump(const std::string& raw) {
  PyDump dump;
  const std::string text = without_ansi(raw);
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    const std::string_view line(text.data() + at, nl - at);
    at = nl + 1;
    if (line.size() > kMaxLine) continue;
    if (line.starts_with("Python v") && dump.python.empty()) {
      const auto space = line.find(' ', 8);
      dump.python = clean(line.substr(8, space == std::string_view::npos ? space : space - 8));
      continue;
    }
    PyThread t;
    if (parse_thread_line(line, t)) {
      if (dump.threads.size() < kMaxThreads) dump.threads.push_back(std::move(t));
      continue;
    }
    PyFrame f;
    if (!dump.threads.empty() && parse_frame_line(line, f) &&
        dump.threads.back().frames.size() < kMaxFrames)
      dump.threads.back().frames.push_back(std::move(f));
  }
  return dump;
}

FrameKind frame_kind(const PyFrame& f) {
  const std::string& file = f.file;
  if (file.starts_with("<frozen")) return FrameKind::kStandardLibrary;
  if (file.starts_with("<")) return FrameKind::kApplication;  // "<string>", "<stdin>"
  const bool python_source = file.find(".py") != std::string::npos;
  if (f.line == 0 && !python_source) return FrameKind::kNative;
  if (file.starts_with("/")) {
    for (std::string_view marker : kSitePackages)
      if (file.find(marker) != std::string::npos) return FrameKind::kLibrary;
    return below_stdlib_root(file) != std::string::npos ? FrameKind::kStandardLibrary
                                                        : FrameKind::kApplication;
  }
  std::string top = file.substr(0, file.find('/'));
  if (top.ends_with(".py")) top.resize(top.size() - 3);
  if (among(kStdlib, top)) return FrameKind::kStandardLibrary;
  if (among(kLibraries, top)) return FrameKind::kLibrary;
  return FrameKind::kApplication;
}

std::string display_file(const PyFrame& f) {
  const std::string& file = f.file;
  if (!file.starts_with("/")) return file;
  for (std::string_view marker : kSitePackages) {
    const auto at = file.rfind(marker);
    if (at != std::string::npos) return file.substr(at + marker.size());
  }
  // "/usr/lib/python3.11/multiprocessing/queues.py" -> "multiprocessing/queues.py"
  if (const auto below = below_stdlib_root(file); below != std::string::npos)
    return file.substr(below);
  return file.substr(file.rfind('/') + 1);
}

// The rule. A stuck rank's main thread reads, innermost first, e.g.
//   wait (threading.py)  get (queue.py)                        <- the standard library: skipped
//   _try_get_data, _get_data, _next_data, __next__ (torch/utils/data/dataloader.py)
//   train (train.py:88)
// The innermost frame outside the standard library is in torch, deep in its internals; what a
// person wants is the call into the library their code made (`__next__`, "the data loader"), and
// who made it (train.py:88). So: inside a library, walk outwards over that library's frames (and
// the standard library's in between) and name the outermost one that is not a mere wrapper
// (torch.distributed's c10d_logger `wrapper`, `decorate_context`, nn.Module's `_call_impl`);
// the first frame past them is the caller. In the application's own code, the innermost frame
// is the answer (`load_batch` in train.py).
StackLocation locate(const PyDump& dump) {
  StackLocation loc;
  const PyThread* t = pick_thread(dump);
  if (t == nullptr) return loc;
  loc.thread = t->name.empty() ? "thread " + t->id : t->name;
  std::vector<const PyFrame*> frames;
  for (const PyFrame& f : t->frames)
    if (frame_kind(f) != FrameKind::kNative) frames.push_back(&f);
  std::size_t i = 0;
  while (i < frames.size() && frame_kind(*frames[i]) == FrameKind::kStandardLibrary) ++i;
  loc.found = true;
  if (i == frames.size()) {  // nothing but the interpreter's own code: its innermost frame
    loc.where = frame_text(*frames.front());
    loc.line = frames.front()->line;
    return loc;
  }
  std::size_t entry = i;
  if (frame_kind(*frames[i]) == FrameKind::kLibrary) {
    const std::string package = package_of(frames[i]->file);
    std::size_t j = i;
    for (; j < frames.size(); ++j) {
      const FrameKind k = frame_kind(*frames[j]);
      if (k == FrameKind::kStandardLibrary) continue;
      if (k != FrameKind::kLibrary || package_of(frames[j]->file) != package) break;
      if (!among(kWrappers, frames[j]->function)) entry = j;  // else: wrappers all the way
    }
    while (j < frames.size() && frame_kind(*frames[j]) == FrameKind::kStandardLibrary) ++j;
    if (j < frames.size())
      loc.caller =
          fmt::format("{}:{} ({})", display_file(*frames[j]), frames[j]->line, frames[j]->function);
    if (entry != i) loc.innermost = frame_text(*frames[i]);
  }
  loc.where = frame_text(*frames[entry]);
  loc.line = frames[entry]->line;
  return loc;
}

std::string describe(const StackLocation& loc) {
  if (!loc.found) return "";
  return loc.caller.empty() ? loc.where : loc.where + ", called from " + loc.caller;
}

}  // namespace ncclwatch::trace
