#include "episode_flags.h"

#include <csignal>

#include "kope/memory/postgres/postgres_store.h"
#include "kope/memory/store_location.h"
#include "queue_evaluator.h"

namespace kope::cli {
namespace {

std::atomic<bool> g_cancel{false};

extern "C" void OnInterrupt(int) {
  g_cancel.store(true);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace

agent::ProposerChoice ProposerChoiceOf(const EpisodeFlags& flags,
                                       const std::string& store_location) {
  agent::ProposerChoice choice;
  choice.llm = flags.llm;
  choice.provider = flags.provider;
  choice.config_path = flags.llm_config;
  choice.store_location = store_location;
  choice.mode = flags.passive ? context::ContextMode::kPassive : context::ContextMode::kActive;
  choice.offline.transfer = !flags.no_transfer;
  return choice;
}

void ApplyEpisodeFlags(const EpisodeFlags& flags, agent::EpisodeOptions& options) {
  options.budgets.attempts = flags.attempts;
  options.budgets.seconds = flags.time;
  options.budgets.tokens = flags.tokens;
  options.stop.patience = flags.patience;
  options.stop.speed_of_light = flags.sol;
  options.confirm = !flags.no_confirm;
  options.language = flags.language;
  options.eval.use_bubblewrap = !flags.no_bubblewrap;
}

Result<WorkerEvaluation> OpenWorkerEvaluation(const EpisodeFlags& flags, Backend& backend,
                                              std::string_view batch) {
  WorkerEvaluation out;
  if (flags.workers.empty()) return out;
  KOPE_ASSIGN_OR_RETURN(std::string url, memory::ResolveStoreLocation(flags.workers));
  if (!memory::IsPostgresLocation(url)) {
    return Status::InvalidArgument(
        "--workers takes the shared PostgreSQL store whose queue the "
        "workers read (postgresql://...), not '" +
        flags.workers + "'");
  }
  KOPE_ASSIGN_OR_RETURN(HardwareInfo hardware, backend.Hardware());
  KOPE_ASSIGN_OR_RETURN(out.queue, queue::OpenJobQueue(url));
  out.evaluator = std::make_unique<QueueEvaluator>(*out.queue, std::string(batch), hardware.device,
                                                   InterruptGuard::cancel());
  return out;
}

InterruptGuard::InterruptGuard() {
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
}

InterruptGuard::~InterruptGuard() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

std::atomic<bool>* InterruptGuard::cancel() { return &g_cancel; }

}  // namespace kope::cli
