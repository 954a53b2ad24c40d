// `kope context TASK`: the prompt the context manager would send for one step, each item with
// its score and token count.
//
//   kope context TASK [--node N] [--budget TOKENS] [--store PATH] [--passive] [--hardware H]
//                     [--model NAME] [--summary] [--json]
//
// TASK is a task folder (holding task.toml) or a task node of the store ("t3", "task:3"). The
// hardware is that of --hardware (a stored hardware node, or "cpu" for this machine's CPU), else
// the node's, else this machine's CPU. Tokens are counted with the store's calibration for
// --model. Nothing is written.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "kope/backend/cpu/cpu_backend.h"
#include "kope/context/context_builder.h"
#include "kope/context/token_counter.h"
#include "kope/memory/store_location.h"
#include "kope/torch_bridge/bridge.h"

namespace kope::cli {
namespace {

using nlohmann::json;

struct ContextArgs {
  std::string task;
  std::string node;
  std::string store;
  std::string hardware;
  std::string model;
  int64_t budget = 8000;
  bool budget_given = false;
  bool passive = false;
  bool summary = false;
  bool json = false;
};

int Fail(const Status& status) {
  std::cerr << "kope context: " << status.message() << "\n";
  return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

std::string Ref(const memory::NodeRef& ref) {
  return ref.id == 0 ? "-" : memory::FormatNodeRef(ref);
}

void PrintText(const context::BuiltContext& c, const context::ContextRequest& request,
               const context::TokenCounter& counter, bool summary) {
  std::cout << fmt::format(
      "context: {} mode, task {}, node {}, {} {} {}\n", context::ContextModeName(c.mode),
      Ref({memory::NodeKind::kTask, c.task_id}), Ref({memory::NodeKind::kAttempt, c.node}),
      request.hardware.backend.empty() ? "(the node's hardware)" : request.hardware.backend,
      request.hardware.device, request.hardware.architecture);
  std::cout << fmt::format(
      "tokens: {} of {} (estimate {}, expected {}; counted for model \"{}\" "
      "with ratio {:.3f} and bound {:.3f} from {} observations)\n\n",
      c.total_tokens,
      c.budget_tokens >= context::kUnboundedTokens ? std::string("no budget")
                                                   : fmt::format("a budget of {}", c.budget_tokens),
      c.raw_tokens, c.expected_tokens, request.model, counter.ratio, counter.bound_ratio,
      counter.samples);
  std::cout << fmt::format("{:<14} {:>7} {:>7} {:>6} {:>10} {:>8}\n", "section", "quota", "tokens",
                           "items", "shortened", "dropped");
  for (const context::SectionUsage& s : c.sections) {
    std::cout << fmt::format("{:<14} {:>7} {:>7} {:>6} {:>10} {:>8}\n",
                             context::SectionName(s.section), s.quota, s.tokens, s.items,
                             s.shortened, s.dropped);
  }
  std::cout << fmt::format("\n{:>3}  {:<14} {:<13} {:<14} {:>7} {:>7}  {:<8} {}\n", "#", "section",
                           "kind", "node", "score", "tokens", "form", "first line");
  int n = 0;
  for (const context::ContextItem& item : c.items) {
    std::string first = item.text.substr(item.text.find_first_not_of('\n') == std::string::npos
                                             ? 0
                                             : item.text.find_first_not_of('\n'));
    first = first.substr(0, first.find('\n'));
    if (first.size() > 60) first = first.substr(0, 57) + "...";
    std::cout << fmt::format("{:>3}  {:<14} {:<13} {:<14} {:>7} {:>7}  {:<8} {}\n", ++n,
                             context::SectionName(item.section), item.kind, Ref(item.node),
                             item.score > 0 ? fmt::format("{:.3f}", item.score) : "-", item.tokens,
                             context::FidelityName(item.fidelity), first);
  }
  if (summary) return;
  std::cout << "\n==== system prompt ====\n" << c.system_prompt;
  std::cout << "\n==== user prompt ====\n" << c.user_prompt;
}

void PrintJson(const context::BuiltContext& c) {
  json items = json::array();
  for (const context::ContextItem& item : c.items) {
    items.push_back({{"section", context::SectionName(item.section)},
                     {"kind", item.kind},
                     {"node", item.node.id == 0 ? json(nullptr) : json(Ref(item.node))},
                     {"score", item.score},
                     {"tokens", item.tokens},
                     {"fidelity", context::FidelityName(item.fidelity)},
                     {"text", item.text}});
  }
  json sections = json::array();
  for (const context::SectionUsage& s : c.sections) {
    sections.push_back({{"section", context::SectionName(s.section)},
                        {"quota", s.quota},
                        {"tokens", s.tokens},
                        {"items", s.items},
                        {"shortened", s.shortened},
                        {"dropped", s.dropped}});
  }
  json out = {{"mode", context::ContextModeName(c.mode)},
              {"task", c.task_id},
              {"node", c.node},
              {"hardware", c.hardware_id},
              {"budget_tokens", c.budget_tokens},
              {"total_tokens", c.total_tokens},
              {"expected_tokens", c.expected_tokens},
              {"raw_tokens", c.raw_tokens},
              {"candidates", c.candidates},
              {"sections", sections},
              {"items", items},
              {"system_prompt", c.system_prompt},
              {"user_prompt", c.user_prompt}};
  std::cout << out.dump(2) << "\n";
}

Result<HardwareInfo> LocalCpu() {
  KOPE_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateCpuBackend());
  return backend->Hardware();
}

int RunContext(const ContextArgs& args) {
  if (args.budget <= 0) return Fail(Status::InvalidArgument("--budget must be positive"));
  Result<std::string> location = memory::ResolveStoreLocation(args.store);
  if (!location.ok()) return Fail(location.status());
  memory::StoreOptions store_options;
  store_options.create_if_missing = false;
  Result<std::unique_ptr<memory::GraphStore>> store = memory::OpenStore(*location, store_options);
  if (!store.ok()) return Fail(store.status());

  context::ContextRequest request;
  // The passive history has no budget unless one is given.
  request.budget_tokens =
      args.passive && !args.budget_given ? context::kUnboundedTokens : args.budget;
  request.mode = args.passive ? context::ContextMode::kPassive : context::ContextMode::kActive;
  request.model = args.model;

  std::optional<Task> task;
  if (std::filesystem::is_directory(args.task)) {
    Result<Task> loaded = LoadTaskOrProblem(args.task);
    if (!loaded.ok()) return Fail(loaded.status());
    task = std::move(*loaded);
    request.task = &*task;
  } else {
    Result<memory::NodeRef> ref = memory::ParseNodeRef(args.task);
    if (!ref.ok() || ref->kind != memory::NodeKind::kTask) {
      return Fail(Status::InvalidArgument("'" + args.task +
                                          "' is neither a task folder nor a task node (t3)"));
    }
    request.task_id = ref->id;
  }
  if (!args.node.empty()) {
    Result<memory::NodeRef> ref = memory::ParseNodeRef(args.node);
    if (!ref.ok() || ref->kind != memory::NodeKind::kAttempt) {
      return Fail(Status::InvalidArgument("--node: '" + args.node + "' is not an attempt (a42)"));
    }
    request.node = ref->id;
  }
  if (!args.hardware.empty() && args.hardware != "cpu") {
    Result<memory::NodeRef> ref = memory::ParseNodeRef(args.hardware);
    if (!ref.ok() || ref->kind != memory::NodeKind::kHardware) {
      return Fail(Status::InvalidArgument("--hardware: '" + args.hardware +
                                          "' is neither cpu nor a hardware node (h2)"));
    }
    Result<memory::HardwareNode> h = (*store)->GetHardware(ref->id);
    if (!h.ok()) return Fail(h.status());
    request.hardware.backend = h->backend;
    request.hardware.device = h->device;
    request.hardware.architecture = h->arch;
  } else if (args.hardware == "cpu" || request.node == 0) {
    Result<HardwareInfo> cpu = LocalCpu();
    if (!cpu.ok()) return Fail(cpu.status());
    request.hardware = *cpu;
  }

  Result<std::filesystem::path> calibration_path = context::CalibrationPathFor(*location);
  if (!calibration_path.ok()) return Fail(calibration_path.status());
  context::TokenCalibration calibration(*calibration_path);
  Status loaded = calibration.Load();
  if (!loaded.ok()) return Fail(loaded);
  request.calibration = &calibration;

  Result<context::BuiltContext> built = context::BuildContext(**store, request);
  if (!built.ok()) return Fail(built.status());
  if (args.json) {
    PrintJson(*built);
  } else {
    PrintText(*built, request, calibration.CounterFor(args.model), args.summary);
  }
  return 0;
}

}  // namespace

void RegisterContextCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ContextArgs>();
  CLI::App* cmd = app.add_subcommand(
      "context", "Print the prompt the context manager would send for one optimization step");
  cmd->add_option("task", args->task, "Task folder (holding task.toml) or task node (t3)")
      ->required();
  cmd->add_option("--node", args->node, "The attempt to expand (a42); default: a fresh start");
  cmd->add_option("--budget", args->budget,
                  "Token budget of the prompt (default 8000; with --passive, none)");
  cmd->add_option("--store", args->store,
                  "Experience store (default: $KOPE_STORE, else the "
                  "user's data folder)");
  cmd->add_flag("--passive", args->passive,
                "The passive mode: the episode's full history, without a budget unless --budget "
                "is given");
  cmd->add_option("--hardware", args->hardware,
                  "A stored hardware node (h2), or cpu for this machine; default: the node's");
  cmd->add_option("--model", args->model, "The model whose token calibration counts the prompt");
  cmd->add_flag("--summary", args->summary, "Sections and items only, without the prompts");
  cmd->add_flag("--json", args->json, "Print everything as JSON");
  cmd->callback([args, cmd, exit_code] {
    args->budget_given = cmd->count("--budget") > 0;
    *exit_code = RunContext(*args);
  });
}

}  // namespace kope::cli
