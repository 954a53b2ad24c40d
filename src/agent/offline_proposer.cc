#include "kope/agent/offline_proposer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kope/agent/candidate_language.h"
#include "kope/agent/reflection.h"
#include "kope/base/file.h"
#include "kope/pack/adapter.h"
#include "kope/record/graph_nodes.h"

namespace kope::agent {
namespace {

namespace fs = std::filesystem;
using memory::NodeId;

bool HasLanguageExtension(const fs::path& path, std::string_view language) {
  const std::string ext = path.extension().string();
  if (IsModelNewLanguage(language)) return ext == ".py";
  if (language == "cuda") return ext == ".cu";
  return ext == ".cc" || ext == ".cpp" || ext == ".cxx";
}

// The language fresh starts are written in.
std::string StartLanguage(const ProposalRequest& request) {
  return request.candidate_language.empty() ? request.language : request.candidate_language;
}

// The direction (in list positions) of a recorded move on `tunables`; 0 when unknown.
int ListDirectionOf(const TuningMove& move, const std::vector<Tunable>& tunables) {
  for (const Tunable& t : tunables) {
    if (t.name != move.name) continue;
    auto from = std::find(t.values.begin(), t.values.end(), move.from);
    auto to = std::find(t.values.begin(), t.values.end(), move.to);
    if (from == t.values.end() || to == t.values.end() || from == to) return 0;
    return to > from ? 1 : -1;
  }
  return 0;
}

class OfflineProposer : public Proposer {
 public:
  explicit OfflineProposer(OfflineProposerOptions options) : options_(options) {}

  std::string name() const override { return "offline"; }

  Result<bool> CanStartFresh(const ProposalRequest& request) override {
    KOPE_ASSIGN_OR_RETURN(std::optional<Candidate> start, NextFreshStart(request));
    return start.has_value();
  }

  Result<ProposeResult> Propose(const ProposalRequest& request) override {
    ProposeResult result;
    if (!request.parent) {
      KOPE_ASSIGN_OR_RETURN(std::optional<Candidate> start, NextFreshStart(request));
      if (!start) {
        result.kind = ProposeResult::Kind::kExhausted;
        result.reason =
            "no seed kernel (an annotated file in the task folder) or recorded kernel "
            "of the family is left to start from";
        return result;
      }
      result.kind = ProposeResult::Kind::kCandidate;
      result.candidate = std::move(*start);
      return result;
    }
    return Tune(request);
  }

 private:
  Result<ProposeResult> Tune(const ProposalRequest& request) {
    ProposeResult result;
    result.kind = ProposeResult::Kind::kExhausted;
    TunableScan scan = FindTunables(request.parent_source);
    if (scan.tunables.empty()) {
      result.reason = "the kernel declares no tunables";
      return result;
    }
    std::vector<memory::RankedInsight> insights;
    if (options_.use_insights) {
      memory::InsightQuery query;
      query.op_family = request.task->family;
      query.backend = request.hardware.backend;
      query.device = request.hardware.device;
      query.arch = request.hardware.architecture;
      query.compiler = request.hardware.compiler;
      query.kinds = {std::string(memory::kInsightLesson)};
      query.classes = {"tune-parameters"};
      query.limit = 100;
      KOPE_ASSIGN_OR_RETURN(insights, request.store->FindInsights(query));
    }
    const std::vector<TuningMove> moves = OrderMoves(
        scan.tunables, request.parent->attempt.decision, request.parent_improved, insights);
    for (const TuningMove& move : moves) {
      KOPE_ASSIGN_OR_RETURN(std::string source,
                            ApplyPoint(request.parent_source, {{move.name, move.to}}));
      KOPE_ASSIGN_OR_RETURN(bool tried, SourceTried(request, source));
      if (tried) continue;
      result.kind = ProposeResult::Kind::kCandidate;
      result.candidate.source = std::move(source);
      result.candidate.decision = DescribeMove(move);
      result.candidate.classes = {"tune-parameters"};
      result.candidate.proposer = "tuner";
      return result;
    }
    result.reason = "every neighbouring value of its tunables has been tried";
    return result;
  }

  Result<std::optional<Candidate>> NextFreshStart(const ProposalRequest& request) {
    if (options_.transfer) {
      KOPE_ASSIGN_OR_RETURN(std::optional<Candidate> transfer, NextTransfer(request));
      if (transfer) return transfer;
      KOPE_ASSIGN_OR_RETURN(transfer, NextPackTransfer(request));
      if (transfer) return transfer;
    }
    if (options_.seeds) {
      for (const fs::path& path : FindSeedKernels(*request.task, StartLanguage(request))) {
        KOPE_ASSIGN_OR_RETURN(std::string source, ReadFileText(path));
        KOPE_ASSIGN_OR_RETURN(bool tried, SourceTried(request, source));
        if (tried) continue;
        Candidate c;
        c.source = std::move(source);
        c.decision = fmt::format("seed: start from {} ({})", path.filename().string(),
                                 FormatPoint(CurrentPoint(FindTunables(c.source).tunables)));
        c.proposer = "seed";
        return std::optional<Candidate>(std::move(c));
      }
    }
    return std::optional<Candidate>();
  }

  Result<std::optional<Candidate>> NextTransfer(const ProposalRequest& request) {
    memory::BestQuery query;
    query.op_family = request.task->family;
    query.hardware_id = request.hardware_id;
    query.limit = 10 * options_.max_transfers + 10;
    if (query.hardware_id == 0) return std::optional<Candidate>();
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::AttemptView> best,
                          request.store->BestAttempts(query));
    const std::string signature = record::KernelSignature(*request.task);
    std::set<std::string> seen;
    std::map<NodeId, memory::TaskNode> tasks;
    for (const memory::AttemptView& view : best) {
      if (static_cast<int>(seen.size()) >= options_.max_transfers) break;
      if (view.attempt.task_id == request.task_id) continue;
      if (!seen.insert(view.attempt.source_hash).second) continue;
      auto it = tasks.find(view.attempt.task_id);
      if (it == tasks.end()) {
        KOPE_ASSIGN_OR_RETURN(memory::TaskNode node, request.store->GetTask(view.attempt.task_id));
        it = tasks.emplace(view.attempt.task_id, std::move(node)).first;
      }
      const std::string other = record::SignatureOfNode(it->second);
      if (!other.empty() && other != signature) {
        seen.erase(view.attempt.source_hash);
        continue;
      }
      KOPE_ASSIGN_OR_RETURN(memory::RunNode run, request.store->GetRun(view.attempt.run_id));
      if (pack::KernelSpecOfRunConfig(run.config_json).ok()) {  // pack kernels: adapted below
        seen.erase(view.attempt.source_hash);
        continue;
      }
      KOPE_ASSIGN_OR_RETURN(std::string source, request.store->GetSource(view.attempt.source_hash));
      if (LanguageOfSource(source, request.language) != StartLanguage(request)) continue;
      KOPE_ASSIGN_OR_RETURN(bool tried, SourceTried(request, source));
      if (tried) continue;
      Candidate c;
      c.source = std::move(source);
      c.decision = fmt::format(
          "transfer: the best kernel recorded for {} (attempt a{}, {:.2f}x there), to be "
          "re-tuned here",
          it->second.name, view.attempt.id,
          view.outcome && view.outcome->speedup ? *view.outcome->speedup : 0.0);
      c.proposer = "transfer";
      return std::optional<Candidate>(std::move(c));
    }
    return std::optional<Candidate>();
  }

  // A kernel of an imported pack (recorded on any hardware of this backend) whose roles fit the
  // task, through a generated adapter (kope/pack/adapter.h); kernels whose op the task's name
  // mentions first, then by recorded speedup.
  Result<std::optional<Candidate>> NextPackTransfer(const ProposalRequest& request) {
    KOPE_ASSIGN_OR_RETURN(std::vector<PackStart> starts, PackStarts(request));
    std::stable_sort(starts.begin(), starts.end(), [&](const PackStart& a, const PackStart& b) {
      const bool na = NamesOp(*request.task, a.spec.op), nb = NamesOp(*request.task, b.spec.op);
      if (na != nb) return na;
      return SpeedupOf(a.view) > SpeedupOf(b.view);
    });
    int tried_here = 0;
    for (const PackStart& start : starts) {
      if (tried_here >= options_.max_transfers) break;
      KOPE_ASSIGN_OR_RETURN(std::string kernel,
                            request.store->GetSource(start.view.attempt.source_hash));
      if (LanguageOfSource(kernel, request.language) != StartLanguage(request)) continue;
      KOPE_ASSIGN_OR_RETURN(std::optional<std::string> source,
                            pack::AdaptKernel(start.spec, kernel, *request.task));
      if (!source) continue;
      KOPE_ASSIGN_OR_RETURN(bool tried, SourceTried(request, *source));
      if (tried) {
        ++tried_here;
        continue;
      }
      Candidate c;
      c.source = std::move(*source);
      c.decision = fmt::format(
          "transfer: pack kernel {} of pack {} (op {}, {:.2f}x where it was measured), adapted to "
          "this task's inputs, to be re-tuned here",
          start.spec.name, start.spec.pack, start.spec.op, SpeedupOf(start.view));
      c.proposer = "transfer";
      return std::optional<Candidate>(std::move(c));
    }
    return std::optional<Candidate>();
  }

  struct PackStart {
    pack::KernelSpec spec;
    memory::AttemptView view;
  };

  static double SpeedupOf(const memory::AttemptView& view) {
    return view.outcome && view.outcome->speedup ? *view.outcome->speedup : 0.0;
  }

  // The valid evaluations of pack kernels of the task's family (one per kernel source), from
  // the pack runs of the family's tasks; timing flags do not matter: the kernel is judged here.
  Result<std::vector<PackStart>> PackStarts(const ProposalRequest& request) {
    std::vector<PackStart> starts;
    std::map<std::string, size_t> by_source;
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::TaskNode> tasks,
                          request.store->ListTasks(request.task->family));
    for (const memory::TaskNode& task : tasks) {
      KOPE_ASSIGN_OR_RETURN(std::vector<memory::RunNode> runs, request.store->ListRuns(task.id));
      for (const memory::RunNode& run : runs) {
        Result<pack::KernelSpec> spec = pack::KernelSpecOfRunConfig(run.config_json);
        if (!spec.ok() || spec->family != request.task->family) continue;
        KOPE_ASSIGN_OR_RETURN(std::vector<memory::AttemptView> views,
                              request.store->RunAttempts(run.id));
        for (memory::AttemptView& view : views) {
          if (!view.outcome || view.outcome->verdict != "valid") continue;
          auto [it, inserted] = by_source.emplace(view.attempt.source_hash, starts.size());
          if (inserted) {
            starts.push_back({*spec, std::move(view)});
          } else if (SpeedupOf(view) > SpeedupOf(starts[it->second].view)) {
            starts[it->second].view = std::move(view);
          }
        }
      }
    }
    return starts;
  }

  // Whether the task's name or description mentions the op ("RMSNorm" for rmsnorm).
  static bool NamesOp(const Task& task, const std::string& op) {
    auto squash = [](std::string_view s) {
      std::string out;
      for (char c : s) {
        if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(c));
      }
      return out;
    };
    const std::string o = squash(op);
    return squash(task.name).find(o) != std::string::npos ||
           squash(task.description).find(o) != std::string::npos;
  }

  OfflineProposerOptions options_;
};

}  // namespace

std::vector<fs::path> FindSeedKernels(const Task& task, std::string_view language) {
  std::vector<fs::path> seeds;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(task.dir, ec)) {
    if (!entry.is_regular_file(ec) || !HasLanguageExtension(entry.path(), language)) continue;
    Result<std::string> text = ReadFileText(entry.path());
    if (!text.ok() || !MentionsTunables(*text)) continue;
    // A ModelNew seed is one in the language asked for (a problem file defines no ModelNew).
    if (IsModelNewLanguage(language) && LanguageOfSource(*text, "") != language) continue;
    if (FindTunables(*text).tunables.empty()) continue;
    seeds.push_back(entry.path());
  }
  std::sort(seeds.begin(), seeds.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });
  return seeds;
}

std::vector<TuningMove> OrderMoves(const std::vector<Tunable>& tunables,
                                   std::string_view parent_decision, bool parent_improved,
                                   const std::vector<memory::RankedInsight>& insights) {
  std::vector<TuningMove> moves = NeighbourMoves(tunables);
  std::optional<TuningMove> previous = ParseMoveDescription(parent_decision);
  const int previous_direction = previous ? ListDirectionOf(*previous, tunables) : 0;
  std::vector<double> score(moves.size(), 0.0);
  for (size_t i = 0; i < moves.size(); ++i) {
    const TuningMove& m = moves[i];
    if (previous && parent_improved && m.name == previous->name &&
        m.list_direction == previous_direction) {
      score[i] += 10;
    }
    if (m.numeric_direction == 0) continue;
    for (const memory::RankedInsight& r : insights) {
      std::optional<std::string> name = TunableOfInsight(r.insight.text);
      if (!name || *name != m.name) continue;
      const double p =
          (r.insight.support + 1.0) / (r.insight.support + r.insight.contradiction + 2.0);
      score[i] += 2 * (m.numeric_direction > 0 ? p - 0.5 : 0.5 - p);
    }
  }
  std::vector<size_t> order(moves.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return score[a] > score[b]; });
  std::vector<TuningMove> sorted;
  sorted.reserve(moves.size());
  for (size_t i : order) sorted.push_back(moves[i]);
  return sorted;
}

std::unique_ptr<Proposer> CreateOfflineProposer(OfflineProposerOptions options) {
  return std::make_unique<OfflineProposer>(options);
}

}  // namespace kope::agent
