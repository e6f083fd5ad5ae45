// fake_launcher: a torchrun-like launcher for tests.
//
//   fake_launcher --nproc N [--rdzv DIR] [--env KEY=VAL]... [--env-rank R KEY=VAL]... -- CMD ARGS
//
// Spawns N processes of CMD (exec'd directly, no shell: preloading into sanitized binaries works)
// with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK=0 and FAKE_RDZV_DIR (a fresh
// directory for the unique-id exchange, removed at the end unless --rdzv was given). Forwards
// SIGINT/SIGTERM to the ranks. Like torchrun, when a rank fails the others are sent SIGTERM.
// Exit status: the first non-zero rank status (128 + signal for a signalled rank), else 0.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

std::vector<pid_t> g_children;

void forward(int sig) {
  for (pid_t p : g_children) {
    if (p > 0) kill(p, sig);
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: fake_launcher --nproc N [--rdzv DIR] [--env KEY=VAL]... "
               "[--env-rank R KEY=VAL]... -- CMD ARGS\n");
  return 2;
}

void remove_dir(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      unlink((dir + "/" + e->d_name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int nproc = 0;
  std::string rdzv;
  std::vector<std::string> env_all;
  std::vector<std::pair<int, std::string>> env_rank;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--nproc" && i + 1 < argc) {
      nproc = std::atoi(argv[++i]);
    } else if (a == "--rdzv" && i + 1 < argc) {
      rdzv = argv[++i];
    } else if (a == "--env" && i + 1 < argc) {
      env_all.emplace_back(argv[++i]);
    } else if (a == "--env-rank" && i + 2 < argc) {
      int r = std::atoi(argv[++i]);
      env_rank.emplace_back(r, argv[++i]);
    } else {
      return usage();
    }
  }
  if (nproc < 1 || i >= argc) return usage();
  bool own_rdzv = rdzv.empty();
  if (own_rdzv) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr ? tmp : "/tmp") + "/fake_rdzv.XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      std::perror("fake_launcher: mkdtemp");
      return 1;
    }
    rdzv = buf.data();
  }

  struct sigaction sa {};
  sa.sa_handler = &forward;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  g_children.assign(nproc, 0);
  for (int r = 0; r < nproc; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("fake_launcher: fork");
      forward(SIGTERM);
      return 1;
    }
    if (pid == 0) {
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("GROUP_RANK", "0", 1);
      setenv("FAKE_RDZV_DIR", rdzv.c_str(), 1);
      for (const std::string& kv : env_all) putenv(const_cast<char*>(kv.c_str()));
      for (const auto& [rank, kv] : env_rank) {
        if (rank == r) putenv(const_cast<char*>(kv.c_str()));
      }
      execvp(argv[i], argv + i);
      std::fprintf(stderr, "fake_launcher: cannot exec %s: %s\n", argv[i], std::strerror(errno));
      _exit(127);
    }
    g_children[r] = pid;
  }

  int first_failure = 0;
  int remaining = nproc;
  while (remaining > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (pid_t& p : g_children) {
      if (p == pid) p = 0;
    }
    --remaining;
    int code = WIFEXITED(status)     ? WEXITSTATUS(status)
               : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                     : 1;
    if (code != 0 && first_failure == 0) {
      first_failure = code;
      forward(SIGTERM);  // torchrun tears the job down when a worker fails
    }
  }
  if (own_rdzv) remove_dir(rdzv);
  return first_failure;
}
