#include "testing/cdp_browser.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "kope/base/subprocess.h"

namespace kope::serve::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string FindChromium() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      fs::path candidate = fs::path(dir) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return "";
}

std::string Base64Decode(const std::string& in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0, acc = 0;
  for (char c : in) {
    const int v = value(c);
    if (v < 0) continue;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<CdpBrowser>> CdpBrowser::Start(const fs::path& profile_dir) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) return Status::NotFound("chromium is not installed");
  int to[2], from[2];
  if (::pipe2(to, O_CLOEXEC) != 0 || ::pipe2(from, O_CLOEXEC) != 0) {
    return Status::IoError("pipe failed");
  }
  SpawnOptions spawn;
  spawn.env = {"PATH=/usr/bin:/bin", "HOME=" + profile_dir.string(),
               "DBUS_SESSION_BUS_ADDRESS=disabled:"};
  spawn.fds = {{3, to[0]}, {4, from[1]}};
  auto pid = SpawnProcess(
      {chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
       "--user-data-dir=" + profile_dir.string(), "--no-first-run", "--no-default-browser-check",
       "--disable-extensions", "--disable-dev-shm-usage", "--disable-background-networking",
       "--window-size=1280,1000", "about:blank"},
      spawn);
  ::close(to[0]);
  ::close(from[1]);
  if (!pid.ok()) {
    ::close(to[1]);
    ::close(from[0]);
    return pid.status();
  }
  std::unique_ptr<CdpBrowser> browser(new CdpBrowser(*pid, to[1], from[0]));
  KOPE_ASSIGN_OR_RETURN(json target,
                        browser->Call("Target.createTarget", {{"url", "about:blank"}}));
  KOPE_ASSIGN_OR_RETURN(json attached,
                        browser->Call("Target.attachToTarget",
                                      {{"targetId", target["targetId"]}, {"flatten", true}}));
  browser->session_ = attached["sessionId"].get<std::string>();
  KOPE_RETURN_IF_ERROR(browser->Call("Page.enable", json::object()).status());
  KOPE_RETURN_IF_ERROR(
      browser
          ->Call("Emulation.setDeviceMetricsOverride",
                 {{"width", 1280}, {"height", 1000}, {"deviceScaleFactor", 1}, {"mobile", false}})
          .status());
  return browser;
}

CdpBrowser::CdpBrowser(int pid, int to_browser, int from_browser)
    : pid_(pid), to_browser_(to_browser), from_browser_(from_browser) {}

CdpBrowser::~CdpBrowser() {
  ::close(to_browser_);
  ::close(from_browser_);
  ::kill(-pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

Result<json> CdpBrowser::Read(double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    const size_t end = buffer_.find('\0');
    if (end != std::string::npos) {
      json message = json::parse(buffer_.substr(0, end), nullptr, false);
      buffer_.erase(0, end + 1);
      return message;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Status::DeadlineExceeded("the browser did not answer");
    pollfd p{from_browser_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(from_browser_, chunk, sizeof chunk);
    if (n <= 0) return Status::Unavailable("the browser closed its pipe");
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

Result<json> CdpBrowser::Call(const std::string& method, json params, double seconds) {
  const int id = next_id_++;
  json message = {{"id", id}, {"method", method}, {"params", std::move(params)}};
  if (!session_.empty()) message["sessionId"] = session_;
  const std::string text = message.dump() + std::string(1, '\0');
  if (::write(to_browser_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return Status::IoError("cannot write to the browser");
  }
  while (true) {
    KOPE_ASSIGN_OR_RETURN(json reply, Read(seconds));
    if (reply.value("method", "") == "Page.loadEventFired") loaded_ = true;
    if (!reply.contains("id") || reply["id"] != id) continue;
    if (reply.contains("error")) return Status::Internal(method + ": " + reply["error"].dump());
    return reply["result"];
  }
}

Status CdpBrowser::Navigate(const std::string& url) {
  loaded_ = false;
  KOPE_ASSIGN_OR_RETURN(json result, Call("Page.navigate", {{"url", url}}));
  if (result.contains("errorText")) return Status::Unavailable(url + ": " + result.dump());
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!loaded_) {
    if (Clock::now() > deadline) return Status::DeadlineExceeded(url + " did not load");
    KOPE_ASSIGN_OR_RETURN(json event, Read(20));
    if (event.value("method", "") == "Page.loadEventFired") loaded_ = true;
  }
  return Status::Ok();
}

Result<json> CdpBrowser::Evaluate(const std::string& expression) {
  KOPE_ASSIGN_OR_RETURN(json result, Call("Runtime.evaluate", {{"expression", expression},
                                                               {"returnByValue", true},
                                                               {"awaitPromise", true}}));
  if (result.contains("exceptionDetails")) {
    return Status::InvalidArgument(expression + ": " + result["exceptionDetails"].dump());
  }
  return result["result"].value("value", json());
}

Status CdpBrowser::WaitFor(const std::string& expression, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    KOPE_ASSIGN_OR_RETURN(json value, Evaluate(expression));
    if (value == true) return Status::Ok();
    if (Clock::now() > deadline) return Status::DeadlineExceeded("never true: " + expression);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Status CdpBrowser::Screenshot(const fs::path& png) {
  KOPE_ASSIGN_OR_RETURN(json shot, Call("Page.captureScreenshot", {{"format", "png"}}));
  std::ofstream out(png, std::ios::binary | std::ios::trunc);
  out << Base64Decode(shot["data"].get<std::string>());
  return out ? Status::Ok() : Status::IoError("cannot write " + png.string());
}

}  // namespace kope::serve::testing
