// ScriptedProvider: replies from a script instead of a model, for tests and
// ablations (the same recorded replies replayed under different settings).
//
// A script is a list of replies given in order, one per call, or a function
// that answers each request. A reply may be an error instead of text, to play
// a failing provider. When the list runs out, Complete() fails with
// kFailedPrecondition (or, with `cycle`, starts over).
//
// Recorded replies load from a file or a folder:
//   - a JSON file: either an array of replies or {"replies": [...]}, each reply
//     {"text": "..."} or {"text_file": "reply1.md"} (relative to the JSON
//     file's folder), optionally with "prompt_tokens", "completion_tokens",
//     "finish_reason"; or {"error": {"code": "unavailable", "message": "..."}}
//     where code is a StatusCode name ("invalid_argument", "unavailable",
//     "deadline_exceeded", ...);
//   - a folder: every regular file in it, in name order, is one reply's text.
// Without token counts in the script, usage is estimated (about four bytes per
// token) and marked so.
//
// Thread-safe: concurrent calls each take the next reply. The requests
// received are kept (resolved, without their cancel flags) for inspection.
#ifndef KOPE_LLM_SCRIPTED_H_
#define KOPE_LLM_SCRIPTED_H_

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kope/base/status.h"
#include "kope/llm/provider.h"

namespace kope::llm {

struct ScriptedReply {
  ScriptedReply() = default;
  ScriptedReply(std::string reply_text) : text(std::move(reply_text)) {}  // NOLINT: implicit
  static ScriptedReply Failure(Status status) {
    ScriptedReply reply;
    reply.error = std::move(status);
    return reply;
  }

  std::string text;
  std::optional<LlmUsage> usage;  // unset: estimated
  std::string finish_reason = "stop";
  Status error;  // non-ok: the call fails with it
};

class ScriptedProvider : public LlmProvider {
 public:
  // Answers each request by calling `script` with it and the call's 0-based index.
  using ScriptFunction = std::function<ScriptedReply(const LlmRequest&, size_t)>;

  explicit ScriptedProvider(std::vector<ScriptedReply> replies, bool cycle = false,
                            ProviderIdentity identity = DefaultIdentity());
  explicit ScriptedProvider(ScriptFunction script, ProviderIdentity identity = DefaultIdentity());

  // Replies recorded in a JSON file or a folder, as described above.
  static Result<std::vector<ScriptedReply>> LoadReplies(const std::filesystem::path& path);
  static Result<std::unique_ptr<ScriptedProvider>> FromPath(
      const std::filesystem::path& path, bool cycle = false,
      ProviderIdentity identity = DefaultIdentity());

  // {name "scripted", kind scripted, model "scripted"}.
  static ProviderIdentity DefaultIdentity();

  std::vector<LlmRequest> received() const;
  size_t calls() const;

 protected:
  Result<LlmResponse> DoComplete(const LlmRequest& resolved) override;

 private:
  ScriptFunction script_;
  mutable std::mutex mu_;
  std::vector<LlmRequest> received_;
};

}  // namespace kope::llm

#endif  // KOPE_LLM_SCRIPTED_H_
