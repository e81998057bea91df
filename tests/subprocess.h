// Running the real `rewind` binary from a test: spawn with extra environment, read its
// stderr, signal it, wait for its exit code. A sanitizer report in the child's stderr fails
// the test and is copied to the test's own output (scripts/sanitize).
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern char** environ;

namespace rw::testing {

// The bytes of the file at `path` ("" when it cannot be read): what a child wrote.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class Subprocess {
 public:
  // stdout goes to `stdout_file` (default: discarded).
  Subprocess(const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
             const std::string& stdout_file = "/dev/null") {
    int fds[2];
    if (pipe(fds) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_file.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    // The extra variables replace inherited ones of the same name.
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
      const std::string var(*e), name = var.substr(0, var.find('='));
      bool replaced = false;
      for (const auto& x : extra_env) replaced = replaced || x.substr(0, x.find('=')) == name;
      if (!replaced) env_strings.push_back(var);
    }
    for (const auto& e : extra_env) env_strings.push_back(e);
    if (!args.empty()) argv0_ = args[0];
    std::vector<char*> argv, envp;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    fd_ = fds[0];
  }
  ~Subprocess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      Wait();
    }
    if (fd_ >= 0) close(fd_);
  }

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& err() const { return err_; }

  // Reads stderr until it contains `text` or `seconds` pass; true if it appeared.
  bool WaitFor(const std::string& text, double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (err_.find(text) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      if (!ReadSome(static_cast<int>(left.count()))) return err_.find(text) != std::string::npos;
    }
    return true;
  }

  void Signal(int sig) { kill(pid_, sig); }

  // Waits for the exit; returns the exit code, or 128 + signal.
  int Wait() {
    while (ReadSome(100)) {
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    exited_ = true;
    while (ReadSome(0)) {
    }
    PassOnSanitizerReport();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  // A sanitized child's report (UBSan writes to stderr whatever log_path says) would be lost
  // in `err_`, which a test may never print.
  void PassOnSanitizerReport() const {
    for (const char* marker : {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
                               "runtime error:"}) {
      if (err_.find(marker) == std::string::npos) continue;
      std::fprintf(stderr, "---- the child's stderr (%s)\n%s\n----\n", argv0_.c_str(), err_.c_str());
      ADD_FAILURE() << "a sanitizer report in the stderr of " << argv0_;
      return;
    }
  }

  bool ReadSome(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n <= 0) return false;
    err_.append(buf, static_cast<size_t>(n));
    return true;
  }

  std::string argv0_;
  pid_t pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
  std::string err_;
};

}  // namespace rw::testing
