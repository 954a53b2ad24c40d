#include "episode_job.h"

#include <nlohmann/json.hpp>

namespace kope::cli {

using nlohmann::json;

std::string EpisodeJobToJson(const EpisodeJob& job) {
  const EpisodeFlags& f = job.flags;
  return json{{"task", job.task},
              {"label", job.label},
              {"language", f.language},
              {"llm", f.llm},
              {"provider", f.provider},
              {"llm_config", f.llm_config},
              {"attempts", f.attempts},
              {"time", f.time},
              {"tokens", f.tokens},
              {"patience", f.patience},
              {"sol", f.sol},
              {"fresh", f.fresh},
              {"no_transfer", f.no_transfer},
              {"no_confirm", f.no_confirm},
              {"passive", f.passive},
              {"no_bubblewrap", f.no_bubblewrap}}
      .dump();
}

Result<EpisodeJob> EpisodeJobFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return Status::InvalidArgument("an episode job's payload is not an object");
  EpisodeJob job;
  EpisodeFlags& f = job.flags;
  try {
    job.task = j.at("task").get<std::string>();
    job.label = j.at("label").get<std::string>();
    f.language = j.value("language", f.language);
    f.llm = j.value("llm", f.llm);
    f.provider = j.value("provider", f.provider);
    f.llm_config = j.value("llm_config", f.llm_config);
    f.attempts = j.value("attempts", f.attempts);
    f.time = j.value("time", f.time);
    f.tokens = j.value("tokens", f.tokens);
    f.patience = j.value("patience", f.patience);
    f.sol = j.value("sol", f.sol);
    f.fresh = j.value("fresh", f.fresh);
    f.no_transfer = j.value("no_transfer", f.no_transfer);
    f.no_confirm = j.value("no_confirm", f.no_confirm);
    f.passive = j.value("passive", f.passive);
    f.no_bubblewrap = j.value("no_bubblewrap", f.no_bubblewrap);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("an episode job's payload: ") + e.what());
  }
  if (job.task.empty()) return Status::InvalidArgument("an episode job names no task");
  return job;
}

}  // namespace kope::cli
