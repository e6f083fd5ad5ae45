// Runs a program (fork + execve, no shell: preloading through /bin/sh breaks sanitized runs)
// with extra environment variables; returns its exit status (128 + signal if signalled).
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern char** environ;

namespace ncclwatch::testing {

inline int run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       std::string* output = nullptr) {
  std::string out_path = "/tmp/ncclwatch-run-" + std::to_string(getpid()) + ".out";
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<std::string> envs;
    for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
    for (const std::string& kv : env) {
      std::string key = kv.substr(0, kv.find('='));
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
  int status = 0;
  waitpid(pid, &status, 0);
  if (output != nullptr) {
    std::ifstream in(out_path);
    output->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  unlink(out_path.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ncclwatch::testing
