#include "bench_ablation.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "kope/agent/backend_choice.h"
#include "kope/base/file.h"
#include "kope/bench_suite/ablation.h"
#include "kope/bench_suite/suite_file.h"
#include "kope/memory/store_location.h"

namespace kope::cli {
namespace {

int Fail(const Status& status) {
  std::cerr << "kope bench: " << status.message() << "\n";
  const StatusCode code = status.code();
  return code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound ? 2 : 1;
}

void Print(const bench_suite::AblationReport& report, const std::string& out, bool as_json) {
  if (as_json) {
    std::cout << bench_suite::AblationReportToJson(report) << "\n";
    return;
  }
  std::cout << bench_suite::FormatAblationSummary(report);
  std::cout << "report: " << out << "/ablation.json, ablation.svg; graphs: " << out << "/graphs\n";
}

// The runs of a written report, judged again (its repetitions cut short left out).
int Rejudge(const AblationArgs& args) {
  Result<std::string> text = ReadFileText(args.from_report);
  if (!text.ok()) return Fail(text.status());
  Result<bench_suite::AblationReport> report = bench_suite::AblationReportFromJson(*text);
  if (!report.ok()) return Fail(report.status());
  const std::string out =
      args.out.empty() ? std::filesystem::path(args.from_report).parent_path().string() : args.out;
  Status written = bench_suite::WriteAblationReport(*report, out.empty() ? "." : out);
  if (!written.ok()) return Fail(written);
  Print(*report, out, args.episode.json);
  return 0;
}

}  // namespace

int RunBenchAblation(const AblationArgs& args) {
  if (!args.from_report.empty()) return Rejudge(args);
  Result<bench_suite::AblationFactor> factor = bench_suite::ParseAblationFactor(args.factor);
  if (!factor.ok()) return Fail(factor.status());
  Result<bench_suite::SuiteFile> suite = bench_suite::ResolveSuite(args.suite, args.kernelbench);
  if (!suite.ok()) return Fail(suite.status());
  Result<std::unique_ptr<Backend>> backend =
      agent::OpenBackend({args.episode.backend, nullptr, {}});
  if (!backend.ok()) return Fail(backend.status());

  bench_suite::AblationOptions options;
  options.suite = args.name.empty() ? suite->name : args.name;
  options.factor = *factor;
  options.repeat = args.repeat;
  const std::string out =
      args.out.empty() ? "kope-ablation-" + options.suite + "-" + args.factor : args.out;
  options.work_dir = out;
  for (const std::string& f : args.imports) options.imports.emplace_back(f);
  options.context_budget_tokens = args.context_budget;
  ApplyEpisodeFlags(args.episode, options.episode);
  options.episode.cancel = InterruptGuard::cancel();
  if (!args.episode.quiet) options.log = &std::cerr;
  // The arms' proposers: the flags' choice, with the arm's context mode and transfer.
  // Tokens are counted with the calibration of the user's store (that of their model).
  Result<std::string> location = memory::ResolveStoreLocation(args.episode.store);
  const std::string calibration = location.ok() ? *location : out + "/graphs/calibration.db";
  options.open_proposers = [&args, calibration](const bench_suite::AblationArm& arm) {
    agent::ProposerChoice choice = ProposerChoiceOf(args.episode, calibration);
    choice.context_budget_tokens = args.context_budget;
    choice.mode = arm.mode;
    choice.offline.transfer = arm.transfer;
    return agent::OpenProposers(choice);
  };

  Result<bench_suite::AblationReport> report = [&] {
    InterruptGuard guard;
    return bench_suite::RunAblation(**backend, suite->tasks, options);
  }();
  if (!report.ok()) return Fail(report.status());
  Status written = bench_suite::WriteAblationReport(*report, out);
  if (!written.ok()) return Fail(written);
  Print(*report, out, args.episode.json);
  if (InterruptGuard::cancel()->load()) return 130;
  for (const bench_suite::AblationArmResult& arm : report->arms) {
    for (const bench_suite::AblationRun& run : arm.runs) {
      for (const bench_suite::AblationTaskRun& t : run.tasks) {
        if (t.stop_reason == "error") return 1;
      }
    }
  }
  return 0;
}

}  // namespace kope::cli
