#include "queue_evaluator.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "kope/backend/backend.h"
#include "kope/base/file.h"
#include "kope/queue/eval_job.h"
#include "kope/record/graph_nodes.h"

namespace kope::cli {

namespace fs = std::filesystem;
using nlohmann::json;

// How long an unreachable queue is waited for, as `kope worker --reconnect` does by default.
constexpr std::chrono::seconds kOutage{300};

std::string EvalJobResult(const Outcome& outcome) {
  json j = json::parse(OutcomeToJson(outcome, -1));
  const memory::OutcomeNode node = record::OutcomeNodeFor(outcome);
  json recorded = {{"stage", node.stage},
                   {"verdict", node.verdict},
                   {"flagged", node.flagged},
                   {"error_message", node.error_message}};
  if (node.speedup) recorded["speedup"] = *node.speedup;
  if (node.time_ms) recorded["time_ms"] = *node.time_ms;
  if (node.roofline) recorded["roofline"] = *node.roofline;
  j["recorded"] = recorded;
  return j.dump();
}

Result<memory::OutcomeNode> OutcomeNodeOfEvalJobResult(std::string_view result_json) {
  json j = json::parse(result_json, nullptr, false);
  if (!j.is_object() || !j.contains("recorded") || !j["recorded"].is_object()) {
    return Status::InvalidArgument("the job's result is not an evaluation's (no 'recorded')");
  }
  const json r = j["recorded"];
  j.erase("recorded");
  memory::OutcomeNode node;
  try {
    node.stage = r.at("stage").get<std::string>();
    node.verdict = r.at("verdict").get<std::string>();
    node.flagged = r.at("flagged").get<bool>();
    node.error_message = r.at("error_message").get<std::string>();
    if (r.contains("speedup")) node.speedup = r["speedup"].get<double>();
    if (r.contains("time_ms")) node.time_ms = r["time_ms"].get<double>();
    if (r.contains("roofline")) node.roofline = r["roofline"].get<double>();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("the job's 'recorded' is malformed: ") + e.what());
  }
  node.evidence_json = j.dump();
  return node;
}

namespace {

// A KernelBench problem imported into this machine's cache is sent as its source: the workers
// import it into theirs.
Status AttachProblem(const Task& task, queue::EvalJob& job) {
  const fs::path imports = DefaultCacheDir() / "kernelbench";
  const fs::path dir = task.dir.lexically_normal();
  if (!task.torch || dir.parent_path() != imports.lexically_normal()) return Status::Ok();
  KOPE_ASSIGN_OR_RETURN(job.problem_source, ReadFileText(dir / "problem.py"));
  std::string stem = dir.filename().string();
  stem = stem.substr(0, stem.rfind('-'));  // "NAME-<hash>"
  job.problem_name = stem + ".py";
  return Status::Ok();
}

}  // namespace

Result<memory::OutcomeNode> QueueEvaluator::Evaluate(const Task& task, std::string_view source,
                                                     std::string_view name,
                                                     const EvalOptions& options) {
  queue::EvalJob job;
  job.task = task.dir.string();
  KOPE_RETURN_IF_ERROR(AttachProblem(task, job));
  job.candidate_name = std::string(name);
  job.candidate_source = std::string(source);
  job.trials = options.trials;
  job.timeout_seconds = options.call_timeout_seconds;
  job.confirm = options.timing_label == "confirm";
  job.no_bubblewrap = !options.use_bubblewrap;
  job.record = false;
  KOPE_ASSIGN_OR_RETURN(
      std::vector<int64_t> ids,
      jobs_.Enqueue({{std::string(queue::kEvalJobKind), queue::EvalJobToJson(job), batch_}}));
  KOPE_ASSIGN_OR_RETURN(queue::JobRecord done, WaitFor(ids.front(), options));
  if (done.state == queue::JobState::kFailed) {
    return Status::Internal("worker " + done.worker + " could not evaluate it: " + done.error);
  }
  KOPE_ASSIGN_OR_RETURN(memory::OutcomeNode node,
                        OutcomeNodeOfEvalJobResult(done.result_json.value_or("")));
  const json evidence = json::parse(node.evidence_json, nullptr, false);
  const std::string device = evidence.value("/hardware/device"_json_pointer, std::string());
  if (device != device_) {
    return Status::FailedPrecondition("worker " + done.worker + " measured it on " + device +
                                      ", and this run's hardware is " + device_ +
                                      ": start the workers on machines like this one");
  }
  return node;
}

// Polls the job until it ends: every 20 ms at first, then less often, up to 50 ms; the
// episode's progress line says whether it waits for a worker or which worker runs it.
Result<queue::JobRecord> QueueEvaluator::WaitFor(int64_t id, const EvalOptions& options) {
  auto pause = std::chrono::milliseconds(20);
  std::string said;
  std::optional<std::chrono::steady_clock::time_point> outage;
  while (true) {
    Result<queue::JobRecord> polled = jobs_.Job(id);
    if (!polled.ok()) {
      // The database restarting: waited out as workers wait it out.
      if (polled.status().code() != StatusCode::kUnavailable) return polled.status();
      if (!outage) outage = std::chrono::steady_clock::now();
      if (std::chrono::steady_clock::now() - *outage > kOutage) return polled.status();
      if (cancel_ != nullptr && cancel_->load()) return Status::Cancelled("cancelled");
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    outage.reset();
    queue::JobRecord& job = *polled;
    if (job.state == queue::JobState::kDone || job.state == queue::JobState::kFailed) return job;
    if (cancel_ != nullptr && cancel_->load()) {
      return Status::Cancelled("cancelled while job " + std::to_string(id) + " waits or runs");
    }
    const std::string line = job.state == queue::JobState::kQueued
                                 ? "queued for a worker (job " + std::to_string(id) + ")"
                                 : "on worker " + job.worker + " (job " + std::to_string(id) + ")";
    if (line != said && options.progress) options.progress(line);
    said = line;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace kope::cli
