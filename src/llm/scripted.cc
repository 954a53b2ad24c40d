#include "kope/llm/scripted.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kope/base/file.h"

namespace kope::llm {
namespace {

namespace fs = std::filesystem;

// "unavailable", "invalid_argument", "InvalidArgument", ...: compared without
// case and underscores.
Result<StatusCode> ParseStatusCode(std::string_view name) {
  auto squash = [](std::string_view s) {
    std::string out;
    for (char c : s) {
      if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
  };
  for (int c = static_cast<int>(StatusCode::kInvalidArgument);
       c <= static_cast<int>(StatusCode::kInternal); ++c) {
    auto code = static_cast<StatusCode>(c);
    if (squash(StatusCodeName(code)) == squash(name)) return code;
  }
  return Status::InvalidArgument(fmt::format("unknown error code '{}'", name));
}

Result<ScriptedReply> ReplyFromJson(const nlohmann::json& j, const fs::path& base_dir) {
  ScriptedReply reply;
  if (!j.is_object()) return Status::InvalidArgument("a reply is not a JSON object");
  if (auto err = j.find("error"); err != j.end()) {
    KOPE_ASSIGN_OR_RETURN(StatusCode code, ParseStatusCode(err->value("code", "unavailable")));
    reply.error = Status(code, err->value("message", "scripted error"));
    return reply;
  }
  if (auto text = j.find("text"); text != j.end() && text->is_string()) {
    reply.text = text->get<std::string>();
  } else if (auto file = j.find("text_file"); file != j.end() && file->is_string()) {
    KOPE_ASSIGN_OR_RETURN(reply.text, ReadFileText(base_dir / file->get<std::string>()));
  } else {
    return Status::InvalidArgument("a reply has neither \"text\", \"text_file\" nor \"error\"");
  }
  if (j.contains("prompt_tokens") || j.contains("completion_tokens")) {
    LlmUsage usage;
    usage.prompt_tokens = j.value("prompt_tokens", int64_t{0});
    usage.completion_tokens = j.value("completion_tokens", int64_t{0});
    reply.usage = usage;
  }
  reply.finish_reason = j.value("finish_reason", std::string("stop"));
  return reply;
}

Result<std::vector<ScriptedReply>> LoadJsonReplies(const fs::path& path) {
  KOPE_ASSIGN_OR_RETURN(std::string text, ReadFileText(path));
  std::vector<ScriptedReply> replies;
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    const nlohmann::json& list = j.is_object() ? j.at("replies") : j;
    if (!list.is_array()) return Status::InvalidArgument("\"replies\" is not an array");
    for (size_t i = 0; i < list.size(); ++i) {
      Result<ScriptedReply> reply = ReplyFromJson(list[i], path.parent_path());
      if (!reply.ok()) return reply.status().WithContext(fmt::format("reply {}", i));
      replies.push_back(std::move(reply).value());
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(e.what());
  }
  return replies;
}

Result<std::vector<ScriptedReply>> LoadFolderReplies(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  if (ec) return Status::IoError(fmt::format("cannot list {}: {}", dir.string(), ec.message()));
  std::sort(files.begin(), files.end());
  std::vector<ScriptedReply> replies;
  for (const fs::path& f : files) {
    ScriptedReply reply;
    KOPE_ASSIGN_OR_RETURN(reply.text, ReadFileText(f));
    replies.push_back(std::move(reply));
  }
  return replies;
}

}  // namespace

ProviderIdentity ScriptedProvider::DefaultIdentity() {
  return {"scripted", ProviderKind::kScripted, "", "scripted"};
}

ScriptedProvider::ScriptedProvider(std::vector<ScriptedReply> replies, bool cycle,
                                   ProviderIdentity identity)
    : LlmProvider(std::move(identity), {}) {
  script_ = [replies = std::move(replies), cycle](const LlmRequest&, size_t index) {
    if (cycle && !replies.empty()) return replies[index % replies.size()];
    if (index < replies.size()) return replies[index];
    return ScriptedReply::Failure(Status::FailedPrecondition(
        fmt::format("the scripted provider has no reply left: call {} of a script of {}", index + 1,
                    replies.size())));
  };
}

ScriptedProvider::ScriptedProvider(ScriptFunction script, ProviderIdentity identity)
    : LlmProvider(std::move(identity), {}), script_(std::move(script)) {}

Result<std::vector<ScriptedReply>> ScriptedProvider::LoadReplies(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return Status::NotFound(fmt::format("scripted replies {} do not exist", path.string()));
  }
  Result<std::vector<ScriptedReply>> replies =
      fs::is_directory(path, ec) ? LoadFolderReplies(path) : LoadJsonReplies(path);
  if (!replies.ok()) return replies.status().WithContext(path.string());
  return replies;
}

Result<std::unique_ptr<ScriptedProvider>> ScriptedProvider::FromPath(const fs::path& path,
                                                                     bool cycle,
                                                                     ProviderIdentity identity) {
  KOPE_ASSIGN_OR_RETURN(std::vector<ScriptedReply> replies, LoadReplies(path));
  return std::make_unique<ScriptedProvider>(std::move(replies), cycle, std::move(identity));
}

std::vector<LlmRequest> ScriptedProvider::received() const {
  std::lock_guard<std::mutex> lock(mu_);
  return received_;
}

size_t ScriptedProvider::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return received_.size();
}

Result<LlmResponse> ScriptedProvider::DoComplete(const LlmRequest& resolved) {
  size_t index;
  {
    std::lock_guard<std::mutex> lock(mu_);
    index = received_.size();
    received_.push_back(resolved);
    received_.back().cancel = nullptr;
  }
  ScriptedReply reply = script_(resolved, index);
  if (!reply.error.ok()) return reply.error;
  LlmResponse response;
  response.text = std::move(reply.text);
  response.usage =
      reply.usage ? *reply.usage
                  : LlmUsage{EstimatePromptTokens(resolved), EstimateTokens(response.text), true};
  response.model = resolved.model;
  response.finish_reason = reply.finish_reason;
  response.request_id = fmt::format("scripted-{}", index + 1);
  return response;
}

}  // namespace kope::llm
