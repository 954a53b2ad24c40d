// Resolving a context request against the store.
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

#include "kope/base/file.h"
#include "kope/record/graph_nodes.h"
#include "retrieval.h"
#include "text.h"

namespace kope::context::internal {
namespace {

using memory::NodeId;
using memory::NodeKind;

// The task's baseline in `language`, else its first baseline, with its fence language; "" when
// it has none.
Result<std::pair<std::string, std::string>> BaselineSource(const Task& task,
                                                           const std::string& language) {
  auto it = task.baselines.find(language);
  if (it == task.baselines.end()) it = task.baselines.begin();
  if (it == task.baselines.end()) return std::pair<std::string, std::string>();
  KOPE_ASSIGN_OR_RETURN(std::string source, ReadFileText(it->second.path));
  return std::make_pair(std::move(source),
                        it->second.language == "torch" ? std::string("python") : language);
}

// What the proposer writes, checked against the task.
Status ResolveCandidateLanguage(const ContextRequest& request, State* state) {
  const std::string& asked = request.language;
  state->candidate_language = asked.empty() ? state->language : asked;
  state->model_new = asked == "triton" || asked == "torch";
  if (!state->model_new) {
    if (asked.empty() || asked == state->language) return Status::Ok();
    return Status::InvalidArgument("a context for " + state->hardware.backend +
                                   " cannot ask for '" + asked + "' candidates (expected " +
                                   state->language + ", triton or torch)");
  }
  const Task* task = request.task;
  if (task == nullptr || task->baselines.count("torch") == 0) {
    return Status::InvalidArgument("a context for " + asked +
                                   " candidates (ModelNew modules) needs a task with a PyTorch "
                                   "baseline");
  }
  KOPE_ASSIGN_OR_RETURN(state->problem_source, ReadFileText(task->baselines.at("torch").path));
  return Status::Ok();
}

HardwareInfo FromNode(const memory::HardwareNode& node) {
  HardwareInfo info;
  info.backend = node.backend;
  info.device = node.device;
  info.architecture = node.arch;
  nlohmann::json attrs = nlohmann::json::parse(node.attrs_json, nullptr, false);
  if (attrs.is_object()) {
    auto number = [&](const char* key) {
      auto it = attrs.find(key);
      return it != attrs.end() && it->is_number() ? it->get<double>() : 0.0;
    };
    info.cores = static_cast<int>(number("cores"));
    info.bandwidth_bytes_per_s = number("bandwidth_bytes_per_s");
    info.peak_flops = number("peak_flops");
    info.last_level_cache_bytes = static_cast<uint64_t>(number("last_level_cache_bytes"));
    info.memory_bytes = static_cast<uint64_t>(number("memory_bytes"));
    auto compiler = attrs.find("compiler");
    if (compiler != attrs.end() && compiler->is_string())
      info.compiler = compiler->get<std::string>();
  }
  return info;
}

Result<NodeId> FindTaskNode(memory::GraphStore& store, const Task& task) {
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::TaskNode> tasks, store.ListTasks(task.family));
  NodeId found = 0;
  for (const memory::TaskNode& t : tasks) {
    if (t.name == task.name) found = std::max(found, t.id);
  }
  return found;
}

// The task's node: the request's, its node's, or the newest stored under the task's name; the
// task itself or its node is required.
Status ResolveTask(memory::GraphStore& store, const ContextRequest& request, State* state,
                   std::optional<memory::TaskNode>* task_node) {
  NodeId task_id = request.task_id;
  if (task_id == 0 && state->node) task_id = state->node->attempt.task_id;
  if (task_id == 0 && request.task != nullptr) {
    KOPE_ASSIGN_OR_RETURN(task_id, FindTaskNode(store, *request.task));
  }
  if (task_id != 0) {
    KOPE_ASSIGN_OR_RETURN(memory::TaskNode t, store.GetTask(task_id));
    *task_node = std::move(t);
  }
  if (request.task == nullptr && !*task_node) {
    return Status::InvalidArgument("a context needs a task: give the task, its node or a node");
  }
  state->task_id = task_id;
  return Status::Ok();
}

// The hardware: the request's (with its node, when stored), else the node's.
Status ResolveHardware(memory::GraphStore& store, const ContextRequest& request, State* state) {
  state->hardware = request.hardware;
  if (state->hardware.backend.empty()) {
    if (!state->node) {
      return Status::InvalidArgument("a context needs the hardware (or a node that has it)");
    }
    KOPE_ASSIGN_OR_RETURN(memory::HardwareNode h,
                          store.GetHardware(state->node->attempt.hardware_id));
    state->hardware = FromNode(h);
    state->hardware_id = h.id;
    return Status::Ok();
  }
  Result<NodeId> id = store.FindByKey(
      NodeKind::kHardware, memory::HardwareKey(state->hardware.backend, state->hardware.device,
                                               state->hardware.architecture));
  if (id.ok()) {
    state->hardware_id = *id;
  } else if (id.status().code() != StatusCode::kNotFound) {
    return id.status();
  }
  return Status::Ok();
}

// The task's name, family, description and size: from the task when given, else its node.
void DescribeTask(const ContextRequest& request, const std::optional<memory::TaskNode>& task_node,
                  State* state) {
  if (request.task != nullptr) {
    const Task& task = *request.task;
    state->task_name = task.name;
    state->family = task.family;
    state->description = task.description;
    state->size = record::TaskSize(task, state->language);
  } else {
    state->task_name = task_node->name;
    state->family = task_node->op_family;
    state->description = task_node->description;
    state->task_attrs_json = task_node->attrs_json;
    state->size = task_node->size;
  }
  if (state->size <= 0 && task_node) state->size = task_node->size;
}

// The kernel being changed: the node's source, else the task's baseline; and the run.
Status ResolveBase(memory::GraphStore& store, const ContextRequest& request, State* state) {
  if (state->node) {
    KOPE_ASSIGN_OR_RETURN(state->base_source, store.GetSource(state->node->attempt.source_hash));
    state->base_fence = FenceLanguage(state->base_source, state->language);
    state->run = state->node->attempt.run_id;
  } else if (request.task != nullptr && !state->model_new) {
    // (A ModelNew's fresh start has the problem in the task's section instead.)
    KOPE_ASSIGN_OR_RETURN(std::tie(state->base_source, state->base_fence),
                          BaselineSource(*request.task, state->language));
  }
  if (request.run != 0) state->run = request.run;
  return Status::Ok();
}

// The state in words, for text similarity; for the text search, the most specific first: the
// node's classes and decision, then the task.
void CollectWords(State* state) {
  std::vector<std::string> parts;
  if (state->node) {
    for (const std::string& c : state->node->attempt.classes) parts.push_back(c);
    parts.push_back(state->node->attempt.decision);
    if (state->node->outcome) parts.push_back(state->node->outcome->error_signature);
  }
  for (const std::string* p : {&state->task_name, &state->family, &state->description}) {
    parts.push_back(*p);
  }
  std::string all;
  for (const std::string& part : parts) {
    all += part + " ";
    for (std::string& w : Words(part)) {
      if (std::find(state->search_words.begin(), state->search_words.end(), w) ==
          state->search_words.end()) {
        state->search_words.push_back(std::move(w));
      }
    }
  }
  state->query_words = Words(all);
}

}  // namespace

Result<State> ResolveState(memory::GraphStore& store, const ContextRequest& request) {
  State state;
  state.request = &request;
  state.counter = request.calibration != nullptr ? request.calibration->CounterFor(request.model)
                                                 : TokenCounter{};
  if (request.budget_tokens <= 0) {
    return Status::InvalidArgument("the token budget must be positive");
  }
  if (request.node != 0) {
    KOPE_ASSIGN_OR_RETURN(state.lineage, store.Lineage(request.node));
    state.node = state.lineage.back();
  }
  std::optional<memory::TaskNode> task_node;
  KOPE_RETURN_IF_ERROR(ResolveTask(store, request, &state, &task_node));
  KOPE_RETURN_IF_ERROR(ResolveHardware(store, request, &state));
  state.language = state.hardware.backend == "cuda" ? "cuda" : "cpp";
  KOPE_RETURN_IF_ERROR(ResolveCandidateLanguage(request, &state));
  DescribeTask(request, task_node, &state);
  KOPE_RETURN_IF_ERROR(ResolveBase(store, request, &state));
  CollectWords(&state);
  for (const memory::AttemptView& v : state.lineage) {
    state.now = std::max(state.now, v.attempt.created_at);
  }
  return state;
}

}  // namespace kope::context::internal
