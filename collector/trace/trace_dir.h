// A directory that salvage writes trace files into, opened once and checked, with every file in
// it opened relative to that descriptor and never through a symbolic link. See
// docs/threat-model.md: the directory may be writable by other users (a shared /tmp-like trace
// dir), so a name in it may be a symlink, a hard link to someone else's file or a planted file by
// the time it is opened; everything is decided on the opened descriptor, never on the name.
#pragma once

#include <sys/types.h>

#include <string>

namespace ncclwatch::trace {

class TraceDir {
 public:
  TraceDir() = default;
  ~TraceDir();
  TraceDir(const TraceDir&) = delete;
  TraceDir& operator=(const TraceDir&) = delete;

  // Opens `path` (absolute) and checks that this user may safely write into it: a directory
  // owned by this user or by root, and not writable by others unless sticky (then others can
  // plant names but not replace ours). false: error() says why.
  bool open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }
  int fd() const { return fd_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  enum class Opened { kOk, kMissing, kRefused };
  // Opens the existing file `name` (flags: O_RDONLY or O_RDWR) without following a symlink,
  // and checks it is a regular file of this user with a single link (a hard link to another
  // file would make us write that file). kMissing: there is no such name. kRefused: `why` says
  // why. On kOk, `fd` is the open descriptor (the caller closes it).
  Opened open_existing(const std::string& name, int flags, int& fd, std::string& why) const;

  // Creates `name` exclusively (fails if anything, a dangling symlink included, has the name).
  // -1 with `why` set on failure.
  int create(const std::string& name, mode_t mode, std::string& why) const;

 private:
  std::string path_;
  std::string error_;
  int fd_ = -1;
};

// "ncclwatch.<host>.<pid>.trace" parts and job ids are [A-Za-z0-9._-] (the shim's rule): true if
// `text` is such a name part (non-empty, no '/', not "." or "..").
bool is_name_part(const std::string& text);

}  // namespace ncclwatch::trace
