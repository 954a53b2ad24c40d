// Test support: headless Chromium driven through its DevTools protocol over a pipe
// (--remote-debugging-pipe: JSON messages ending in NUL on descriptors 3 and 4), with one page.
// Start is NotFound when no chromium is installed, so that a test can skip.
#ifndef KOPE_SRC_SERVE_TESTING_CDP_BROWSER_H_
#define KOPE_SRC_SERVE_TESTING_CDP_BROWSER_H_

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "kope/base/status.h"

namespace kope::serve::testing {

class CdpBrowser {
 public:
  // Starts the browser with a fresh profile in `profile_dir` and opens a 1280x1000 page.
  static Result<std::unique_ptr<CdpBrowser>> Start(const std::filesystem::path& profile_dir);
  ~CdpBrowser();  // kills the browser and reaps it

  // Loads `url` and waits for its load event.
  Status Navigate(const std::string& url);
  // The value of a JavaScript expression (promises awaited); an exception is an error.
  Result<nlohmann::json> Evaluate(const std::string& expression);
  // Evaluates `expression` every 50 ms until it is true; DeadlineExceeded after `seconds`.
  Status WaitFor(const std::string& expression, double seconds);
  // A PNG of the page's viewport.
  Status Screenshot(const std::filesystem::path& png);

 private:
  CdpBrowser(int pid, int to_browser, int from_browser);
  Result<nlohmann::json> Call(const std::string& method, nlohmann::json params,
                              double seconds = 20);
  Result<nlohmann::json> Read(double seconds);

  int pid_, to_browser_, from_browser_;
  int next_id_ = 1;
  std::string session_;
  std::string buffer_;
  bool loaded_ = false;  // Page.loadEventFired seen since the last Navigate
};

}  // namespace kope::serve::testing

#endif  // KOPE_SRC_SERVE_TESTING_CDP_BROWSER_H_
