#include "episode_flags.h"

#include <csignal>

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
