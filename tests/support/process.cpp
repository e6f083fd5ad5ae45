#include "process.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <system_error>

extern char** environ;

namespace ncclwatch::test_support {

TempDir::TempDir(const std::string& prefix) {
  std::string templ = (fs::temp_directory_path() / (prefix + ".XXXXXX")).string();
  if (mkdtemp(templ.data()) == nullptr)
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + templ);
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string slurp(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  std::fclose(f);
  return s;
}

CommandResult run_shell(const std::string& command, const fs::path& scratch,
                        const std::string& stdout_to) {
  CommandResult r;
  const fs::path out = scratch / "sh.stdout", err = scratch / "sh.stderr";
  const std::string line =
      command + " >" + (stdout_to.empty() ? out.string() : stdout_to) + " 2>" + err.string();
  const int status = std::system(line.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = stdout_to.empty() ? slurp(out) : "";
  r.err = slurp(err);
  return r;
}

int run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                std::string* output) {
  // A private file (mkstemp: a name no one planted) rather than a predictable one in /tmp.
  std::string out_path = (fs::temp_directory_path() / "ncclwatch-run.XXXXXX").string();
  const int out_fd = mkstemp(out_path.data());
  const pid_t pid = fork();
  if (pid == 0) {
    if (out_fd >= 0) {
      dup2(out_fd, 1);
      dup2(out_fd, 2);
      close(out_fd);
    }
    std::vector<std::string> envs;
    for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
    for (const std::string& kv : env) {
      const std::string key = kv.substr(0, kv.find('='));
      for (auto it = envs.begin(); it != envs.end();) {
        it = it->rfind(key + "=", 0) == 0 ? envs.erase(it) : it + 1;
      }
      envs.push_back(kv);
    }
    std::vector<char*> cargv, cenv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  if (out_fd >= 0) close(out_fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (output != nullptr) {
    std::ifstream in(out_path);
    output->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  unlink(out_path.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

pid_t start_process(const std::vector<std::string>& argv, const std::string& stderr_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(stderr_path.c_str(), "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(98);
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(99);
  }
  return pid;
}

}  // namespace ncclwatch::test_support
