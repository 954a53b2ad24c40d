// LlmTestServer: a real HTTP server on 127.0.0.1 that speaks both LLM wire
// formats, for tests. It answers
//   POST /v1/chat/completions  as an OpenAI-compatible server, and
//   POST /v1/messages          as the Anthropic messages API,
// following a script of actions, one per request: a reply, an HTTP error
// (429 with Retry-After, 500, 401, ...), a slow reply, a truncated body,
// malformed JSON, JSON of the wrong shape, or a reply held until several
// requests are in flight at once. It checks requests the way the real APIs do
// (required fields and headers; 400 otherwise), can require an API key (401,
// echoing the wrong key as some servers do) and a set of known models (404),
// and keeps every request it received and the most requests it saw in flight.
//
// Thread-safe. The destructor stops the server and wakes any held request.
#ifndef KOPE_SRC_LLM_TESTING_LLM_TEST_SERVER_H_
#define KOPE_SRC_LLM_TESTING_LLM_TEST_SERVER_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kope/base/status.h"

namespace kope::llm::testing {

struct ServerAction {
  enum class Kind {
    kReply,          // a normal reply with `text`, after `delay`
    kHttpError,      // `status` with a format-appropriate error body
    kTruncatedBody,  // announces a full reply, sends half of it, closes the connection
    kMalformedJson,  // 200 with half a JSON document (complete HTTP body)
    kWrongSchema,    // 200 with valid JSON that is not a reply
    kWaitForPeers,   // a reply sent once `peers` requests are in flight (or after `delay`)
  };
  Kind kind = Kind::kReply;
  std::string text = "ok";
  int64_t prompt_tokens = 11;
  int64_t completion_tokens = 7;
  bool omit_usage = false;
  std::string finish_reason;  // empty: "stop" (OpenAI) or "end_turn" (Anthropic)
  int status = 500;           // kHttpError
  std::string error_message;  // kHttpError; empty: a message fitting the status
  std::string retry_after;    // kHttpError: the Retry-After header, if not empty
  std::chrono::milliseconds delay{0};
  int peers = 0;

  static ServerAction Reply(std::string text, int64_t prompt_tokens = 11,
                            int64_t completion_tokens = 7);
  static ServerAction Error(int status, std::string retry_after = "");
  static ServerAction Slow(std::chrono::milliseconds delay, std::string text = "slow reply");
  static ServerAction TruncatedBody();
  static ServerAction MalformedJson();
  static ServerAction WrongSchema();
  static ServerAction WaitForPeers(int peers, std::chrono::milliseconds max_wait);
};

struct ReceivedRequest {
  std::string path;
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
  std::chrono::steady_clock::time_point arrived;
};

class LlmTestServer {
 public:
  // Binds an ephemeral port on 127.0.0.1 and starts serving in a thread.
  static Result<std::unique_ptr<LlmTestServer>> Start();
  ~LlmTestServer();
  LlmTestServer(const LlmTestServer&) = delete;
  LlmTestServer& operator=(const LlmTestServer&) = delete;

  int port() const;
  std::string openai_base_url() const;     // http://127.0.0.1:PORT/v1
  std::string anthropic_base_url() const;  // http://127.0.0.1:PORT

  // Actions are used one per request in order; then the default (a reply "ok").
  void Enqueue(ServerAction action);
  void SetDefault(ServerAction action);
  // Requests without this key (Bearer or x-api-key) get 401.
  void RequireKey(std::string key);
  // Requests for other models get 404 (model not found). Empty: any model.
  void SetKnownModels(std::vector<std::string> models);

  std::vector<ReceivedRequest> requests() const;
  int max_in_flight() const;
  // Blocks until `n` requests have arrived or `max_wait` passed; returns whether they did.
  bool WaitForRequests(size_t n, std::chrono::milliseconds max_wait) const;

  struct State;

 private:
  LlmTestServer();
  std::unique_ptr<State> state_;
};

}  // namespace kope::llm::testing

#endif  // KOPE_SRC_LLM_TESTING_LLM_TEST_SERVER_H_
