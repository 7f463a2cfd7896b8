// Runs the built `vidax` binary as a child process, as a user or a script
// would: its exit code (128+N when signal N killed it), its stderr and stdout,
// optionally with a file-size limit (a "disk full" for one file), stdin from a
// file, or extra environment. One helper for every CLI test (tests/cli,
// tests/pipeline/test_cli_*.cpp). The child is started with fork + execve and
// only async-signal-safe calls between them, so it is safe from a threaded test.
#pragma once
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace vidax::test::cli {

inline const std::string& vidax_binary() {
  static const std::string p = std::string(VIDAX_BINARY_DIR) + "/bin/vidax";
  return p;
}
inline const std::string& tiny_spiece() {
  static const std::string p = std::string(VIDAX_TEST_DATA_DIR) + "/text/data/tiny_spiece.model";
  return p;
}

struct ChildOptions {
  std::vector<std::string> env;  // "NAME=value" added to the environment
  long file_size_limit = -1;     // RLIMIT_FSIZE in bytes (writes past it fail with EFBIG); -1 = none
  long address_space_limit = -1; // RLIMIT_AS in bytes (`ulimit -v`: allocations past it fail); -1 = none
  std::string stdin_path = "/dev/null";
  bool capture_stdout = false;  // else stdout goes to /dev/null
  unsigned timeout_s = 0;       // > 0: SIGALRM ends the child after this long (exit 142), a hang fails fast
};

struct Child {
  pid_t pid = -1;
  int err_fd = -1;           // read end of the child's stderr
  std::string stdout_path;   // when captured: a file the child's stdout goes to
};

inline Child spawn(const std::vector<std::string>& args, const ChildOptions& opt = {}) {
  std::vector<std::string> envs;
  // opt.env replaces a variable of the same name (getenv takes the first: an appended copy was ignored).
  auto overridden = [&](const std::string& e) {
    for (const auto& o : opt.env)
      if (o.substr(0, o.find('=') + 1) == e.substr(0, e.find('=') + 1)) return true;
    return false;
  };
  for (char** e = environ; *e; ++e)
    if (!overridden(*e)) envs.emplace_back(*e);
  envs.insert(envs.end(), opt.env.begin(), opt.env.end());
  std::vector<char*> envp, argv{const_cast<char*>(vidax_binary().c_str())};
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Child c;
  static int counter = 0;
  const std::string out = opt.capture_stdout ? (std::filesystem::temp_directory_path() /
                                                ("vidax_cli_stdout_" + std::to_string(::getpid()) + "_" +
                                                 std::to_string(counter++)))
                                                   .string()
                                             : "/dev/null";
  c.stdout_path = opt.capture_stdout ? out : "";
  int p[2];
  EXPECT_EQ(::pipe(p), 0);
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(p[1], 2);
    ::close(p[0]);
    ::close(p[1]);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o >= 0) ::dup2(o, 1);
    const int i = ::open(opt.stdin_path.c_str(), O_RDONLY);
    if (i >= 0) ::dup2(i, 0);
    if (opt.file_size_limit >= 0) {
      struct rlimit rl {static_cast<rlim_t>(opt.file_size_limit), static_cast<rlim_t>(opt.file_size_limit)};
      ::setrlimit(RLIMIT_FSIZE, &rl);
      ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails (EFBIG) instead of killing the child
    }
    if (opt.address_space_limit >= 0) {
      struct rlimit rl {static_cast<rlim_t>(opt.address_space_limit), static_cast<rlim_t>(opt.address_space_limit)};
      ::setrlimit(RLIMIT_AS, &rl);
    }
    if (opt.timeout_s > 0) ::alarm(opt.timeout_s);  // a pending alarm survives execve
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  EXPECT_GT(c.pid, 0) << "fork";
  ::close(p[1]);
  c.err_fd = p[0];
  return c;
}

// Reads stderr until `until` appears (or EOF); returns what was read.
inline std::string read_err(int fd, const std::string& until = "") {
  std::string s;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) {
    s.append(buf, static_cast<size_t>(n));
    if (!until.empty() && s.find(until) != std::string::npos) break;
  }
  return s;
}

// The exit code as a shell reports it: 128+N for a child killed by signal N.
inline int wait_exit(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct CmdResult {
  int code;
  std::string err;  // stderr
  std::string out;  // stdout, when captured
  std::string all() const { return out + err; }  // what a `2>&1` capture held (stdout first)
};

inline CmdResult run(const std::vector<std::string>& args, const ChildOptions& opt = {}) {
  Child c = spawn(args, opt);
  std::string err = read_err(c.err_fd);
  ::close(c.err_fd);
  CmdResult r{wait_exit(c.pid), err, ""};
  if (!c.stdout_path.empty()) {
    std::ifstream in(c.stdout_path);
    std::stringstream ss;
    ss << in.rdbuf();
    r.out = ss.str();
    std::error_code ec;
    std::filesystem::remove(c.stdout_path, ec);
  }
  return r;
}

// A command line split at spaces, for tests whose arguments hold none (temporary paths, flags).
inline std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> w;
  std::istringstream in(line);
  for (std::string t; in >> t;) w.push_back(t);
  return w;
}
// run() on a command line with stdout captured: `run_line("inspect --json f").all()`.
inline CmdResult run_line(const std::string& line, ChildOptions opt = {}) {
  opt.capture_stdout = true;
  return run(words(line), opt);
}

// Whether `dir` holds a writer's temporary (`.NAME.partial-PID`).
inline bool has_partial(const std::filesystem::path& dir) {
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().filename().string().find(".partial-") != std::string::npos) return true;
  return false;
}

}  // namespace vidax::test::cli
