#include "kope/queue/eval_job.h"

#include <nlohmann/json.hpp>

#include "kope/base/hash.h"

namespace kope::queue {

std::string EvalJobToJson(const EvalJob& job) {
  nlohmann::json j = {{"task", job.task},
                      {"candidate_name", job.candidate_name},
                      {"candidate_source", job.candidate_source},
                      {"trials", job.trials},
                      {"timeout_seconds", job.timeout_seconds},
                      {"confirm", job.confirm},
                      {"no_bubblewrap", job.no_bubblewrap},
                      {"record", job.record},
                      {"decision", job.decision}};
  if (!job.problem_source.empty()) {
    j["problem_name"] = job.problem_name;
    j["problem_source"] = job.problem_source;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<EvalJob> EvalJobFromJson(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("an eval job's payload is not a JSON object");
  }
  EvalJob job;
  try {
    job.task = j.at("task").get<std::string>();
    job.candidate_source = j.at("candidate_source").get<std::string>();
    job.candidate_name = j.value("candidate_name", std::string("candidate"));
    job.trials = j.value("trials", job.trials);
    job.timeout_seconds = j.value("timeout_seconds", job.timeout_seconds);
    job.confirm = j.value("confirm", job.confirm);
    job.no_bubblewrap = j.value("no_bubblewrap", job.no_bubblewrap);
    job.record = j.value("record", job.record);
    job.decision = j.value("decision", std::string());
    job.problem_name = j.value("problem_name", std::string());
    job.problem_source = j.value("problem_source", std::string());
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("bad eval job payload: ") + e.what());
  }
  if (job.task.empty()) return Status::InvalidArgument("an eval job names no task");
  if (job.trials < 5) return Status::InvalidArgument("an eval job needs at least 5 trials");
  if (!job.problem_source.empty() &&
      (job.problem_name.empty() || job.problem_name.find('/') != std::string::npos ||
       !job.problem_name.ends_with(".py"))) {
    return Status::InvalidArgument("an eval job's problem_name must be a plain NAME.py");
  }
  return job;
}

EvalJobKeys KeysForEvalJob(std::string_view job_key, std::string_view batch,
                           std::string_view task) {
  return {ContentHash({"kope-job-run", batch, task}), ContentHash({"kope-job-attempt", job_key}),
          ContentHash({"kope-job-outcome", job_key})};
}

}  // namespace kope::queue
