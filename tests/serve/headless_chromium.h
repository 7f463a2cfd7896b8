// A headless Chromium driven over the Chrome DevTools Protocol on a pipe
// (`--remote-debugging-pipe`: the browser reads commands on its fd 3 and writes
// answers and events on its fd 4, each message JSON ended by a NUL byte). No
// network besides the loopback page under test, no helper language: the serve
// page's browser test (test_web_page.cpp) uses it.
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace vidax::test {

class HeadlessChromium {
 public:
  // The browser on PATH (Debian's package is `chromium`), or "" when there is none.
  static std::string find() {
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "";
    for (size_t at = 0; at <= p.size();) {
      const size_t end = std::min(p.find(':', at), p.size());
      for (const char* name : {"chromium", "chromium-browser"}) {
        const std::filesystem::path exe = std::filesystem::path(p.substr(at, end - at)) / name;
        if (::access(exe.c_str(), X_OK) == 0) return exe.string();
      }
      at = end + 1;
    }
    return "";
  }

  // Starts the browser with a fresh profile in `profile` (its output goes to profile/chromium.log).
  HeadlessChromium(const std::string& exe, const std::filesystem::path& profile) {
    std::filesystem::create_directories(profile);
    log_path_ = (profile / "chromium.log").string();
    std::vector<std::string> args = {exe, "--headless", "--remote-debugging-pipe", "--user-data-dir=" + profile.string(),
                                     "--no-first-run", "--no-default-browser-check", "--disable-gpu",
                                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                                     "--disable-extensions", "--disable-dev-shm-usage", "--mute-audio",
                                     "--autoplay-policy=no-user-gesture-required", "--window-size=1100,800",
                                     "about:blank"};
    // No sandbox: Chromium refuses to run as root with one, and a container without user namespaces
    // (CI's) cannot give it one. The only page it opens is the test's own server on loopback.
    args.insert(args.begin() + 1, "--no-sandbox");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int to_browser[2], from_browser[2];
    if (::pipe(to_browser) != 0 || ::pipe(from_browser) != 0) throw std::runtime_error("pipe() failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork() failed");
    if (pid_ == 0) {  // only async-signal-safe calls until exec
      // Above 4 first, so that the dup2s below cannot overwrite one another's source.
      const int in = ::fcntl(to_browser[0], F_DUPFD, 10), out = ::fcntl(from_browser[1], F_DUPFD, 10);
      ::dup2(in, 3);
      ::dup2(out, 4);
      const int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (log >= 0) {
        ::dup2(log, 1);
        ::dup2(log, 2);
      }
      for (int fd = 5; fd < 1024; ++fd) ::close(fd);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(to_browser[0]);
    ::close(from_browser[1]);
    to_ = to_browser[1];
    from_ = from_browser[0];
    ::fcntl(to_, F_SETFD, FD_CLOEXEC);
    ::fcntl(from_, F_SETFD, FD_CLOEXEC);
  }

  ~HeadlessChromium() {
    if (pid_ > 0) {
      try {
        call("Browser.close", nlohmann::json::object(), "", 5);
      } catch (const std::exception&) {
      }
      ::close(to_);
      ::close(from_);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      int st = 0;
      while (::waitpid(pid_, &st, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &st, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  HeadlessChromium(const HeadlessChromium&) = delete;
  HeadlessChromium& operator=(const HeadlessChromium&) = delete;

  const std::string& log_path() const { return log_path_; }

  // Sends a command (to the browser, or to a page's `session`) and returns its `result`; a CDP
  // error or no answer within `seconds` throws, naming the method.
  nlohmann::json call(const std::string& method, const nlohmann::json& params = nlohmann::json::object(),
                      const std::string& session = "", double seconds = 30) {
    const int id = ++next_id_;
    nlohmann::json msg = {{"id", id}, {"method", method}, {"params", params}};
    if (!session.empty()) msg["sessionId"] = session;
    std::string wire = msg.dump();
    wire.push_back('\0');
    for (size_t done = 0; done < wire.size();) {
      const ssize_t n = ::write(to_, wire.data() + done, wire.size() - done);
      if (n <= 0) throw std::runtime_error("CDP " + method + ": the browser's pipe is closed (" + log_path_ + ")");
      done += static_cast<size_t>(n);
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
    for (;;) {
      const nlohmann::json m = next_message(deadline, method);
      if (!m.contains("id") || m["id"] != id) continue;  // an event, or another command's late answer
      if (m.contains("error")) throw std::runtime_error("CDP " + method + ": " + m["error"].dump());
      return m.value("result", nlohmann::json::object());
    }
  }

  // A new page (tab) attached in flat mode; returns its session id.
  std::string open_page() {
    const std::string target = call("Target.createTarget", {{"url", "about:blank"}})["targetId"];
    return call("Target.attachToTarget", {{"targetId", target}, {"flatten", true}})["sessionId"];
  }

  // Evaluates `expr` in the page (a promise is awaited) and returns its value; a thrown exception throws.
  nlohmann::json eval(const std::string& session, const std::string& expr) {
    const nlohmann::json r = call("Runtime.evaluate", {{"expression", expr}, {"awaitPromise", true}, {"returnByValue", true}},
                                  session);
    if (r.contains("exceptionDetails"))
      throw std::runtime_error("in the page: " + expr.substr(0, 80) + ": " + r["exceptionDetails"].dump().substr(0, 400));
    return r["result"].value("value", nlohmann::json());
  }

  // Polls `expr` until it is true, at most `seconds`; returns whether it became true.
  bool wait_until(const std::string& session, const std::string& expr, double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      if (eval(session, "!!(" + expr + ")") == true) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

 private:
  nlohmann::json next_message(std::chrono::steady_clock::time_point deadline, const std::string& method) {
    for (;;) {
      const size_t end = buf_.find('\0');
      if (end != std::string::npos) {
        const std::string m = buf_.substr(0, end);
        buf_.erase(0, end + 1);
        return nlohmann::json::parse(m);
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) throw std::runtime_error("CDP " + method + ": no answer in time (" + log_path_ + ")");
      pollfd p{from_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[1 << 16];
      const ssize_t n = ::read(from_, chunk, sizeof chunk);
      if (n <= 0) throw std::runtime_error("CDP " + method + ": the browser closed its pipe (" + log_path_ + ")");
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  int next_id_ = 0;
  std::string buf_, log_path_;
};

// RFC 4648 base64 (CDP's screenshots); throws on a character outside the alphabet.
inline std::string base64_decode(const std::string& s) {
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (const char c : s) {
    if (c == '=') break;
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else throw std::runtime_error("base64: unexpected character");
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

}  // namespace vidax::test
