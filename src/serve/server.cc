#include "kope/serve/server.h"

#include <arpa/inet.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "api_params.h"
#include "assets.h"
#include "kope/serve/api.h"

namespace kope::serve {
namespace {

constexpr std::string_view kCookie = "kope_token";

bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string CookieToken(const httplib::Request& req) {
  const std::string cookies = req.get_header_value("Cookie");
  const std::string prefix = std::string(kCookie) + "=";
  size_t at = 0;
  while (at < cookies.size()) {
    size_t end = cookies.find(';', at);
    if (end == std::string::npos) end = cookies.size();
    std::string_view part(cookies.data() + at, end - at);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.substr(0, prefix.size()) == prefix) return std::string(part.substr(prefix.size()));
    at = end + 1;
  }
  return "";
}

void SetCommonHeaders(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Cache-Control", "no-store");
}

// A page's status before the browser asks the API: 404 for an unknown page or node, 400 for a
// malformed id.
int PageStatus(memory::GraphStore& store, const std::string& path) {
  static const std::vector<std::pair<std::string, memory::NodeKind>> kinds = {
      {"runs", memory::NodeKind::kRun},
      {"attempts", memory::NodeKind::kAttempt},
      {"tasks", memory::NodeKind::kTask},
      {"insights", memory::NodeKind::kInsight},
      {"workloads", memory::NodeKind::kWorkload}};
  for (const char* page : {"/", "/suites", "/insights", "/search", "/workloads"}) {
    if (path == page) return 200;
  }
  std::vector<std::string> parts;
  std::stringstream in(path);
  for (std::string part; std::getline(in, part, '/');) {
    if (!part.empty()) parts.push_back(part);
  }
  if (parts.size() < 2 || parts.size() > 3) return 404;
  if (parts.size() == 3 && !(parts[0] == "runs" && parts[2] == "live")) return 404;
  for (const auto& [name, kind] : kinds) {
    if (parts[0] != name) continue;
    Result<memory::NodeId> id = internal::ParseId(parts[1], kind);
    if (!id.ok()) return 400;
    Status found = Status::Ok();
    switch (kind) {
      case memory::NodeKind::kRun:
        found = store.GetRun(*id).status();
        break;
      case memory::NodeKind::kAttempt:
        found = store.GetAttempt(*id).status();
        break;
      case memory::NodeKind::kTask:
        found = store.GetTask(*id).status();
        break;
      case memory::NodeKind::kInsight:
        found = store.GetInsight(*id).status();
        break;
      default:
        found = store.GetWorkload(*id).status();
        break;
    }
    if (found.ok()) return 200;
    return found.code() == StatusCode::kNotFound ? 404 : 500;
  }
  return 404;
}

bool SafeFileName(std::string_view name) {
  if (name.empty() || name.front() == '.') return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
      return false;
    }
  }
  return true;
}

}  // namespace

bool IsLoopbackAddress(std::string_view address) {
  if (address == "localhost" || address == "::1") return true;
  in_addr v4{};
  const std::string text(address);
  return inet_pton(AF_INET, text.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

struct Server::State {
  State(memory::GraphStore& s, ServerOptions o) : store(s), options(std::move(o)), api(s) {}

  bool Authorized(const httplib::Request& req, httplib::Response& res) const;
  void Serve(const httplib::Request& req, httplib::Response& res) const;
  void ServeHighlight(const std::string& name, httplib::Response& res) const;

  memory::GraphStore& store;
  const ServerOptions options;
  const ServeApi api;
  httplib::Server http;
  std::thread thread;
  int port = 0;
  bool stopped = false;
};

bool Server::State::Authorized(const httplib::Request& req, httplib::Response& res) const {
  if (options.token.empty()) return true;
  const std::string bearer = req.get_header_value("Authorization");
  if (bearer.rfind("Bearer ", 0) == 0 && SameSecret(bearer.substr(7), options.token)) return true;
  if (SameSecret(CookieToken(req), options.token)) return true;
  if (req.has_param("token") && SameSecret(req.get_param_value("token"), options.token)) {
    res.set_header("Set-Cookie", std::string(kCookie) + "=" + options.token +
                                     "; Path=/; HttpOnly; SameSite=Strict");
    return true;
  }
  return false;
}

void Server::State::ServeHighlight(const std::string& name, httplib::Response& res) const {
  std::filesystem::path file = std::filesystem::path(options.highlight_dir);
  if (name.rfind("styles/", 0) == 0 && SafeFileName(name.substr(7))) {
    file /= "styles/" + name.substr(7);
  } else if (SafeFileName(name)) {
    file /= name;
  } else {
    res.status = 404;
    return;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    res.status = 404;
    res.set_content("highlight.js is not installed", "text/plain");
    return;
  }
  std::stringstream body;
  body << in.rdbuf();
  res.set_content(body.str(), std::string(internal::ContentTypeFor(name)));
}

void Server::State::Serve(const httplib::Request& req, httplib::Response& res) const {
  SetCommonHeaders(res);
  const std::string& path = req.path;
  if (path.rfind("/api/", 0) == 0) {
    ApiRequest request{path, {}};
    for (const auto& [name, value] : req.params) {
      if (name != "token") request.params.emplace(name, value);
    }
    ApiResponse answer = api.Handle(request);
    res.status = answer.status;
    res.set_content(answer.body, answer.content_type);
    return;
  }
  if (path.rfind("/static/hljs/", 0) == 0) return ServeHighlight(path.substr(13), res);
  if (path.rfind("/static/", 0) == 0) {
    const internal::Asset* asset = internal::FindAsset(path.substr(8));
    if (asset == nullptr) {
      res.status = 404;
      res.set_content("no such file", "text/plain");
      return;
    }
    res.set_content(std::string(asset->body), std::string(internal::ContentTypeFor(asset->name)));
    return;
  }
  // Every page is the same shell; its script reads the path and asks the API.
  res.status = PageStatus(store, path);
  res.set_content(std::string(internal::FindAsset("app.html")->body), "text/html; charset=utf-8");
}

Server::Server(std::unique_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>> Server::Start(memory::GraphStore& store,
                                              const ServerOptions& options) {
  if (!IsLoopbackAddress(options.bind) && options.token.empty()) {
    return Status::InvalidArgument("listening on " + options.bind +
                                   " (not the loopback interface) needs a token (--token)");
  }
  auto state = std::make_unique<State>(store, options);
  State* s = state.get();
  s->http.set_pre_routing_handler([s](const httplib::Request& req, httplib::Response& res) {
    if (s->options.on_request) s->options.on_request(req.method, req.path);
    if (s->Authorized(req, res)) return httplib::Server::HandlerResponse::Unhandled;
    SetCommonHeaders(res);
    res.status = 401;
    res.set_content(R"({"error": {"status": 401, "message": "a token is required"}})",
                    "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
  // A browser keeps up to six connections open per page; each holds a thread while idle.
  s->http.new_task_queue = [] { return new httplib::ThreadPool(24); };
  s->http.set_keep_alive_timeout(1);
  s->http.Get(".*",
              [s](const httplib::Request& req, httplib::Response& res) { s->Serve(req, res); });
  if (options.port == 0) {
    s->port = s->http.bind_to_any_port(options.bind);
    if (s->port <= 0) return Status::Unavailable("cannot listen on " + options.bind);
  } else {
    if (!s->http.bind_to_port(options.bind, options.port)) {
      return Status::Unavailable("cannot listen on " + options.bind + ":" +
                                 std::to_string(options.port) + " (in use?)");
    }
    s->port = options.port;
  }
  s->thread = std::thread([s] { s->http.listen_after_bind(); });
  return std::unique_ptr<Server>(new Server(std::move(state)));
}

int Server::port() const { return state_->port; }

void Server::Stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  state_->http.stop();
  if (state_->thread.joinable()) state_->thread.join();
}

}  // namespace kope::serve
