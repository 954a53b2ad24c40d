#include "llm_test_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

namespace kope::llm::testing {

using nlohmann::json;
using std::chrono::milliseconds;

enum class Format { kOpenAi, kAnthropic };

struct LlmTestServer::State {
  httplib::Server server;
  std::thread thread;
  int port = 0;

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool stopping = false;
  std::deque<ServerAction> queue;
  ServerAction fallback;
  std::string required_key;
  std::vector<std::string> known_models;
  std::vector<ReceivedRequest> received;
  int in_flight = 0;
  int max_in_flight = 0;
  int64_t served = 0;
  int64_t peer_releases = 0;

  void Handle(Format format, const httplib::Request& req, httplib::Response& res);
  // Records the request as received and counts it in flight; its number among those served.
  int64_t Receive(const httplib::Request& req);
  // The next queued action, or the fallback when none is queued.
  ServerAction NextAction();
  // Holds the reply as `a` says: its delay, or until enough peers are in flight.
  void Wait(const ServerAction& a, std::unique_lock<std::mutex>& lock);
};

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string Header(const httplib::Request& req, const char* name) {
  return req.has_header(name) ? req.get_header_value(name) : std::string();
}

// The error body each API sends.
std::string ErrorBody(Format format, const std::string& type, const std::string& code,
                      const std::string& message) {
  if (format == Format::kAnthropic) {
    return json{{"type", "error"}, {"error", {{"type", type}, {"message", message}}}}.dump();
  }
  return json{{"error",
               {{"message", message},
                {"type", type},
                {"param", nullptr},
                {"code", code.empty() ? json(nullptr) : json(code)}}}}
      .dump();
}

void SendError(httplib::Response& res, Format format, int status, const std::string& type,
               const std::string& code, const std::string& message) {
  res.status = status;
  res.set_content(ErrorBody(format, type, code, message), "application/json");
}

std::string ReplyBody(Format format, const ServerAction& a, const std::string& model, int64_t n) {
  if (format == Format::kAnthropic) {
    json body = {{"id", fmt::format("msg_test_{}", n)},
                 {"type", "message"},
                 {"role", "assistant"},
                 {"model", model},
                 {"content", json::array({{{"type", "text"}, {"text", a.text}}})},
                 {"stop_reason", a.finish_reason.empty() ? "end_turn" : a.finish_reason},
                 {"stop_sequence", nullptr}};
    if (!a.omit_usage) {
      body["usage"] = {{"input_tokens", a.prompt_tokens},
                       {"output_tokens", a.completion_tokens},
                       {"cache_creation_input_tokens", 0},
                       {"cache_read_input_tokens", 0}};
    }
    return body.dump();
  }
  json body = {
      {"id", fmt::format("chatcmpl-test-{}", n)},
      {"object", "chat.completion"},
      {"created", 1700000000},
      {"model", model},
      {"choices",
       json::array({{{"index", 0},
                     {"message", {{"role", "assistant"}, {"content", a.text}}},
                     {"logprobs", nullptr},
                     {"finish_reason", a.finish_reason.empty() ? "stop" : a.finish_reason}}})}};
  if (!a.omit_usage) {
    body["usage"] = {{"prompt_tokens", a.prompt_tokens},
                     {"completion_tokens", a.completion_tokens},
                     {"total_tokens", a.prompt_tokens + a.completion_tokens}};
  }
  return body.dump();
}

// What the real APIs reject with 400; empty when the body is acceptable.
std::string ValidationError(Format format, const httplib::Request& req, const json& body) {
  if (!body.is_object()) return "the body must be a JSON object";
  if (!body.contains("model") || !body["model"].is_string()) return "model: field required";
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
    return "messages: a non-empty array is required";
  }
  for (const json& m : body["messages"]) {
    if (!m.is_object() || !m.contains("role") || !m.contains("content")) {
      return "messages: each message needs role and content";
    }
    std::string role = m["role"].is_string() ? m["role"].get<std::string>() : "";
    bool ok =
        role == "user" || role == "assistant" || (format == Format::kOpenAi && role == "system");
    if (!ok) return fmt::format("messages: unexpected role '{}'", role);
  }
  if (format == Format::kAnthropic) {
    if (Header(req, "anthropic-version").empty()) return "anthropic-version: header is required";
    if (!body.contains("max_tokens") || !body["max_tokens"].is_number_integer()) {
      return "max_tokens: field required";
    }
  }
  return {};
}

// Sends 401 and returns false when a key is required and the request does not carry it.
bool KeyAccepted(Format format, const std::string& required_key, const httplib::Request& req,
                 httplib::Response& res) {
  if (required_key.empty()) return true;
  std::string given =
      format == Format::kAnthropic ? Header(req, "x-api-key") : Header(req, "Authorization");
  if (format == Format::kOpenAi && given.rfind("Bearer ", 0) == 0) given = given.substr(7);
  if (given == required_key) return true;
  SendError(res, format, 401,
            format == Format::kAnthropic ? "authentication_error" : "invalid_request_error",
            "invalid_api_key", fmt::format("Incorrect API key provided: {}.", given));
  return false;
}

// The request's body when the real APIs would accept it; else sends 400 and returns none.
std::optional<json> AcceptedBody(Format format, const httplib::Request& req,
                                 httplib::Response& res) {
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) {
    SendError(res, format, 400, "invalid_request_error", "", "the body is not valid JSON");
    return std::nullopt;
  }
  if (std::string error = ValidationError(format, req, body); !error.empty()) {
    SendError(res, format, 400, "invalid_request_error", "", error);
    return std::nullopt;
  }
  return body;
}

// Sends 404 and returns false when models are listed and `model` is not among them.
bool ModelKnown(Format format, const std::vector<std::string>& known_models,
                const std::string& model, httplib::Response& res) {
  if (known_models.empty() ||
      std::find(known_models.begin(), known_models.end(), model) != known_models.end()) {
    return true;
  }
  if (format == Format::kAnthropic) {
    SendError(res, format, 404, "not_found_error", "", "model: " + model);
  } else {
    SendError(res, format, 404, "invalid_request_error", "model_not_found",
              fmt::format("The model `{}` does not exist or you do not have access to it.", model));
  }
  return false;
}

void SendHttpError(Format format, const ServerAction& a, httplib::Response& res) {
  std::string type =
      a.status == 429   ? (format == Format::kAnthropic ? "rate_limit_error" : "requests")
      : a.status == 529 ? "overloaded_error"
                        : (format == Format::kAnthropic ? "api_error" : "server_error");
  std::string message = !a.error_message.empty() ? a.error_message
                        : a.status == 429        ? "Rate limit reached; slow down."
                                                 : "The server had an error.";
  SendError(res, format, a.status, type, "", message);
  if (!a.retry_after.empty()) res.set_header("Retry-After", a.retry_after);
}

// The reply, or the fault `a` asks for in its place.
void SendAction(Format format, const ServerAction& a, const std::string& reply,
                httplib::Response& res) {
  using Kind = ServerAction::Kind;
  switch (a.kind) {
    case Kind::kReply:
    case Kind::kWaitForPeers:
      res.set_content(reply, "application/json");
      return;
    case Kind::kHttpError:
      SendHttpError(format, a, res);
      return;
    case Kind::kTruncatedBody: {
      auto full = std::make_shared<std::string>(reply);
      res.set_content_provider(full->size(), "application/json",
                               [full](size_t offset, size_t, httplib::DataSink& sink) {
                                 if (offset == 0) sink.write(full->data(), full->size() / 2);
                                 return false;  // closes the connection mid-body
                               });
      return;
    }
    case Kind::kMalformedJson:
      res.set_content(reply.substr(0, reply.size() / 2), "application/json");
      return;
    case Kind::kWrongSchema:
      if (format == Format::kAnthropic) {
        res.set_content(json{{"id", "msg_wrong"}, {"type", "message"}, {"content", a.text}}.dump(),
                        "application/json");
      } else {
        res.set_content(
            json{{"id", "chatcmpl-wrong"}, {"object", "chat.completion"}, {"result", a.text}}
                .dump(),
            "application/json");
      }
      return;
  }
}

}  // namespace

int64_t LlmTestServer::State::Receive(const httplib::Request& req) {
  ++in_flight;
  max_in_flight = std::max(max_in_flight, in_flight);
  const int64_t n = ++served;
  ReceivedRequest record;
  record.path = req.path;
  for (const auto& [name, value] : req.headers) record.headers[Lower(name)] = value;
  record.body = req.body;
  record.arrived = std::chrono::steady_clock::now();
  received.push_back(std::move(record));
  cv.notify_all();
  return n;
}

ServerAction LlmTestServer::State::NextAction() {
  ServerAction a = fallback;
  if (!queue.empty()) {
    a = queue.front();
    queue.pop_front();
  }
  return a;
}

void LlmTestServer::State::Wait(const ServerAction& a, std::unique_lock<std::mutex>& lock) {
  using Kind = ServerAction::Kind;
  if (a.kind == Kind::kReply && a.delay.count() > 0) {
    cv.wait_for(lock, a.delay, [&] { return stopping; });
  }
  if (a.kind == Kind::kWaitForPeers) {
    // A barrier: the request that brings the count to `peers` releases every
    // request waiting, even those that wake up after some have left.
    if (in_flight >= a.peers) {
      ++peer_releases;
      cv.notify_all();
    } else {
      const int64_t seen = peer_releases;
      cv.wait_for(lock, a.delay, [&] { return stopping || peer_releases != seen; });
    }
  }
}

void LlmTestServer::State::Handle(Format format, const httplib::Request& req,
                                  httplib::Response& res) {
  std::unique_lock<std::mutex> lock(mu);
  const int64_t n = Receive(req);
  struct InFlight {
    State* s;
    std::unique_lock<std::mutex>* lock;
    ~InFlight() {
      if (!lock->owns_lock()) lock->lock();
      --s->in_flight;
      s->cv.notify_all();
    }
  } in_flight_guard{this, &lock};

  if (!KeyAccepted(format, required_key, req, res)) return;
  const std::optional<json> body = AcceptedBody(format, req, res);
  if (!body.has_value()) return;
  const std::string model = (*body)["model"].get<std::string>();
  if (!ModelKnown(format, known_models, model, res)) return;
  const ServerAction a = NextAction();
  Wait(a, lock);
  res.set_header(format == Format::kAnthropic ? "request-id" : "x-request-id",
                 fmt::format("req-test-{}", n));
  SendAction(format, a, ReplyBody(format, a, model, n), res);
}

ServerAction ServerAction::Reply(std::string text, int64_t prompt_tokens,
                                 int64_t completion_tokens) {
  ServerAction a;
  a.text = std::move(text);
  a.prompt_tokens = prompt_tokens;
  a.completion_tokens = completion_tokens;
  return a;
}

ServerAction ServerAction::Error(int status, std::string retry_after) {
  ServerAction a;
  a.kind = Kind::kHttpError;
  a.status = status;
  a.retry_after = std::move(retry_after);
  return a;
}

ServerAction ServerAction::Slow(milliseconds delay, std::string text) {
  ServerAction a = Reply(std::move(text));
  a.delay = delay;
  return a;
}

ServerAction ServerAction::TruncatedBody() {
  ServerAction a;
  a.kind = Kind::kTruncatedBody;
  a.text = std::string(2000, 'x');
  return a;
}

ServerAction ServerAction::MalformedJson() {
  ServerAction a;
  a.kind = Kind::kMalformedJson;
  return a;
}

ServerAction ServerAction::WrongSchema() {
  ServerAction a;
  a.kind = Kind::kWrongSchema;
  return a;
}

ServerAction ServerAction::WaitForPeers(int peers, milliseconds max_wait) {
  ServerAction a;
  a.kind = Kind::kWaitForPeers;
  a.peers = peers;
  a.delay = max_wait;
  return a;
}

LlmTestServer::LlmTestServer() : state_(std::make_unique<State>()) {}

Result<std::unique_ptr<LlmTestServer>> LlmTestServer::Start() {
  std::unique_ptr<LlmTestServer> server(new LlmTestServer());
  State* s = server->state_.get();
  s->server.new_task_queue = [] { return new httplib::ThreadPool(24); };
  s->server.Post("/v1/chat/completions", [s](const httplib::Request& req, httplib::Response& res) {
    s->Handle(Format::kOpenAi, req, res);
  });
  s->server.Post("/v1/messages", [s](const httplib::Request& req, httplib::Response& res) {
    s->Handle(Format::kAnthropic, req, res);
  });
  s->port = s->server.bind_to_any_port("127.0.0.1");
  if (s->port <= 0) return Status::Unavailable("the test server could not bind a port");
  s->thread = std::thread([s] { s->server.listen_after_bind(); });
  for (int i = 0; i < 500 && !s->server.is_running(); ++i) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  if (!s->server.is_running()) return Status::Unavailable("the test server did not start");
  return server;
}

LlmTestServer::~LlmTestServer() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  state_->server.stop();
  if (state_->thread.joinable()) state_->thread.join();
}

int LlmTestServer::port() const { return state_->port; }

std::string LlmTestServer::openai_base_url() const {
  return fmt::format("http://127.0.0.1:{}/v1", state_->port);
}

std::string LlmTestServer::anthropic_base_url() const {
  return fmt::format("http://127.0.0.1:{}", state_->port);
}

void LlmTestServer::Enqueue(ServerAction action) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->queue.push_back(std::move(action));
}

void LlmTestServer::SetDefault(ServerAction action) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->fallback = std::move(action);
}

void LlmTestServer::RequireKey(std::string key) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->required_key = std::move(key);
}

void LlmTestServer::SetKnownModels(std::vector<std::string> models) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->known_models = std::move(models);
}

std::vector<ReceivedRequest> LlmTestServer::requests() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->received;
}

int LlmTestServer::max_in_flight() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->max_in_flight;
}

bool LlmTestServer::WaitForRequests(size_t n, milliseconds max_wait) const {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->cv.wait_for(lock, max_wait, [&] { return state_->received.size() >= n; });
}

}  // namespace kope::llm::testing
