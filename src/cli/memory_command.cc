// `kope memory`: look into the experience graph and move experience packs in and out.
//
//   kope memory [--store PATH] stats | show NODE | lineage NODE | search TEXT | export FILE |
//               import FILE
//
// The store is --store, else $KOPE_STORE, else $XDG_DATA_HOME/kope/experience.db (or
// ~/.local/share/kope/experience.db). Only `import` creates a store that does not exist.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "kope/memory/exchange.h"
#include "kope/memory/graph_store.h"
#include "kope/memory/store_location.h"
#include "kope/pack/pack_file.h"
#include "memory_nodes.h"

namespace kope::cli {
namespace {

using memory::AttemptView;
using memory::GraphStore;
using memory::NodeKind;
using nlohmann::json;

struct MemoryArgs {
  std::string store;
  std::string node;
  std::vector<std::string> words;
  std::string file;
  std::string family;
  std::string kind;
  bool any = false;
  bool source = false;
  bool json = false;
  int limit = 20;
};

int Fail(const std::string& what, const Status& status) {
  std::cerr << "kope memory " << what << ": " << status.message() << "\n";
  return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

Result<std::unique_ptr<GraphStore>> Open(const MemoryArgs& args, bool create) {
  KOPE_ASSIGN_OR_RETURN(std::string location, memory::ResolveStoreLocation(args.store));
  memory::StoreOptions options;
  options.create_if_missing = create;
  return memory::OpenStore(location, options);
}

std::string Speedup(const std::optional<memory::OutcomeNode>& o) {
  if (!o.has_value()) return "-";
  if (o->speedup.has_value()) return fmt::format("{:.2f}x", *o->speedup);
  return "-";
}

std::string Verdict(const std::optional<memory::OutcomeNode>& o) {
  if (!o.has_value()) return "(none)";
  return o->flagged ? o->verdict + "!" : o->verdict;
}

std::string Join(const std::vector<std::string>& parts, const char* separator = ", ") {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

std::string FirstLine(const std::string& text, size_t width = 70) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > width ? line.substr(0, width - 3) + "..." : line;
}

int RunStats(const MemoryArgs& args) {
  auto store = Open(args, false);
  if (!store.ok()) return Fail("stats", store.status());
  auto stats = (*store)->Stats();
  if (!stats.ok()) return Fail("stats", stats.status());
  const memory::StoreStats& s = *stats;
  const int64_t nodes = s.tasks + s.hardware + s.runs + s.attempts + s.outcomes + s.insights;
  const double per_attempt =
      s.attempts > 0 ? static_cast<double>(s.store_bytes) / static_cast<double>(s.attempts) : 0;
  if (args.json) {
    std::cout << json{{"location", s.location},
                      {"schema_version", s.schema_version},
                      {"store_bytes", s.store_bytes},
                      {"nodes", nodes},
                      {"tasks", s.tasks},
                      {"hardware", s.hardware},
                      {"runs", s.runs},
                      {"attempts", s.attempts},
                      {"outcomes", s.outcomes},
                      {"valid_outcomes", s.valid_outcomes},
                      {"insights", s.insights},
                      {"sources", s.sources},
                      {"source_bytes", s.source_bytes},
                      {"evidence_edges", s.evidence_edges},
                      {"used_edges", s.used_edges},
                      {"workloads", s.workloads},
                      {"from_workload_edges", s.from_workload_edges},
                      {"deployments", s.deployments},
                      {"bytes_per_attempt", per_attempt}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << fmt::format("store      {} (schema {}, {:.1f} MiB)\n", s.location, s.schema_version,
                           static_cast<double>(s.store_bytes) / (1 << 20));
  std::cout << fmt::format("nodes      {}\n", nodes);
  std::cout << fmt::format("  tasks    {}\n  hardware {}\n  runs     {}\n", s.tasks, s.hardware,
                           s.runs);
  std::cout << fmt::format("  attempts {}\n  outcomes {} ({} valid and ranked)\n", s.attempts,
                           s.outcomes, s.valid_outcomes);
  std::cout << fmt::format("  insights {}\n", s.insights);
  std::cout << fmt::format("sources    {} ({:.1f} KiB, stored once each)\n", s.sources,
                           static_cast<double>(s.source_bytes) / 1024);
  std::cout << fmt::format("edges      {} evidence, {} used\n", s.evidence_edges, s.used_edges);
  if (s.workloads > 0) {
    std::cout << fmt::format("workloads  {} ({} tasks extracted, {} validations)\n", s.workloads,
                             s.from_workload_edges, s.deployments);
  }
  if (s.attempts > 0) std::cout << fmt::format("bytes per attempt  {:.0f}\n", per_attempt);
  return 0;
}

void PrintAttempt(GraphStore& store, const AttemptView& view, bool with_source) {
  const memory::AttemptNode& a = view.attempt;
  auto task = store.GetTask(a.task_id);
  auto hw = store.GetHardware(a.hardware_id);
  std::cout << fmt::format("attempt:{}  key {}\n", a.id, a.key);
  std::cout << fmt::format("task       {} ({})\n", task.ok() ? task->name : "?",
                           task.ok() ? task->op_family : "?");
  std::cout << fmt::format("hardware   {} {}\n", hw.ok() ? hw->device : "?",
                           hw.ok() ? hw->arch : "");
  std::cout << fmt::format("run        run:{}   parent {}\n", a.run_id,
                           a.parent_id == 0 ? "(root)" : fmt::format("attempt:{}", a.parent_id));
  std::cout << fmt::format("proposer   {}   tokens {} + {}\n",
                           a.proposer.empty() ? "-" : a.proposer, a.prompt_tokens,
                           a.completion_tokens);
  std::cout << fmt::format("classes    {}\n", a.classes.empty() ? "-" : Join(a.classes));
  std::cout << "decision   " << a.decision << "\n";
  auto outcomes = store.Outcomes(a.id);
  if (outcomes.ok()) {
    for (const memory::OutcomeNode& o : *outcomes) {
      std::cout << fmt::format("outcome:{}  {} {}{}{}\n", o.id, o.stage, o.verdict,
                               o.flagged ? " (flagged)" : "",
                               o.speedup ? fmt::format(", {:.2f}x", *o.speedup) : "");
      if (!o.error_message.empty()) std::cout << "  " << FirstLine(o.error_message, 96) << "\n";
    }
  }
  auto children = store.Children(a.id);
  if (children.ok() && !children->empty()) {
    std::cout << "children  ";
    for (const AttemptView& c : *children) {
      std::cout << fmt::format(" attempt:{} ({}, {})", c.attempt.id, Verdict(c.outcome),
                               Speedup(c.outcome));
    }
    std::cout << "\n";
  }
  if (with_source) {
    auto source = store.GetSource(a.source_hash);
    std::cout << "source\n" << (source.ok() ? *source : source.status().message()) << "\n";
  } else if (!a.diff.empty()) {
    std::cout << "diff\n" << a.diff;
  }
}

int RunShow(const MemoryArgs& args) {
  auto ref = memory::ParseNodeRef(args.node);
  if (!ref.ok()) return Fail("show", ref.status());
  auto store = Open(args, false);
  if (!store.ok()) return Fail("show", store.status());
  GraphStore& s = **store;
  if (ref->kind == NodeKind::kAttempt && !args.json) {
    auto attempt = s.GetAttempt(ref->id);
    if (!attempt.ok()) return Fail("show", attempt.status());
    auto outcomes = s.Outcomes(ref->id);
    AttemptView view{*attempt, std::nullopt};
    if (outcomes.ok() && !outcomes->empty()) view.outcome = outcomes->back();
    PrintAttempt(s, view, args.source);
    return 0;
  }
  auto j = NodeJson(s, *ref, args.source);
  if (!j.ok()) return Fail("show", j.status());
  if (!j->is_null()) std::cout << j->dump(2) << "\n";
  return 0;
}

int RunLineage(const MemoryArgs& args) {
  auto ref = memory::ParseNodeRef(args.node);
  if (!ref.ok()) return Fail("lineage", ref.status());
  if (ref->kind != NodeKind::kAttempt) {
    return Fail("lineage", Status::InvalidArgument("lineage is defined for attempts, not " +
                                                   memory::FormatNodeRef(*ref)));
  }
  auto store = Open(args, false);
  if (!store.ok()) return Fail("lineage", store.status());
  auto lineage = (*store)->Lineage(ref->id);
  if (!lineage.ok()) return Fail("lineage", lineage.status());
  if (args.json) {
    json j = json::array();
    for (const AttemptView& v : *lineage) j.push_back(AttemptJson(v));
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{:>3}  {:<14} {:<14} {:>8}  {:<28} {}\n", "#", "attempt", "verdict",
                           "speedup", "classes", "decision");
  int depth = 0;
  for (const AttemptView& v : *lineage) {
    std::cout << fmt::format(
        "{:>3}  {:<14} {:<14} {:>8}  {:<28} {}\n", depth++, fmt::format("attempt:{}", v.attempt.id),
        Verdict(v.outcome), Speedup(v.outcome),
        FirstLine(v.attempt.classes.empty() ? "-" : Join(v.attempt.classes, " "), 28),
        FirstLine(v.attempt.decision));
  }
  return 0;
}

int RunSearch(const MemoryArgs& args) {
  memory::SearchQuery query;
  query.text = Join(args.words, " ");
  query.match_all = !args.any;
  query.op_family = args.family;
  query.limit = args.limit;
  if (!args.kind.empty()) {
    for (memory::SearchKind k : {memory::SearchKind::kAttempt, memory::SearchKind::kInsight,
                                 memory::SearchKind::kError, memory::SearchKind::kTask}) {
      if (memory::SearchKindName(k) == args.kind) query.kinds = {k};
    }
  }
  auto store = Open(args, false);
  if (!store.ok()) return Fail("search", store.status());
  auto hits = (*store)->Search(query);
  if (!hits.ok()) return Fail("search", hits.status());
  if (args.json) {
    json j = json::array();
    for (const memory::SearchHit& h : *hits) {
      j.push_back({{"kind", memory::SearchKindName(h.kind)},
                   {"node", memory::FormatNodeRef(h.node)},
                   {"relevance", h.relevance},
                   {"text", h.text}});
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (hits->empty()) {
    std::cout << "no matches\n";
    return 0;
  }
  for (const memory::SearchHit& h : *hits) {
    std::cout << fmt::format("{:>8.2f}  {:<16} {}\n", h.relevance, memory::FormatNodeRef(h.node),
                             FirstLine(h.text, 90));
  }
  return 0;
}

std::string RecordSummary(const memory::ExchangeReport& report) {
  std::vector<std::string> parts;
  for (const auto& [type, count] : report.records)
    parts.push_back(fmt::format("{} {}", count, type));
  return parts.empty() ? "nothing" : Join(parts);
}

int RunExport(const MemoryArgs& args) {
  auto store = Open(args, false);
  if (!store.ok()) return Fail("export", store.status());
  memory::ExportFilter filter;
  filter.op_family = args.family;
  auto report = memory::ExportJsonlFile(**store, filter, args.file);
  if (!report.ok()) return Fail("export", report.status());
  std::cout << fmt::format("exported {} to {}\n", RecordSummary(*report), args.file);
  return 0;
}

int RunImport(const MemoryArgs& args) {
  auto store = Open(args, true);
  if (!store.ok()) return Fail("import", store.status());
  if (pack::IsPackFile(args.file)) {  // a pack is also checked as a pack before it is merged
    auto info = pack::ReadPackFile(args.file);
    if (!info.ok()) return Fail("import", info.status());
  }
  auto report = memory::ImportJsonlFile(**store, args.file);
  if (!report.ok()) return Fail("import", report.status());
  std::cout << fmt::format("imported {} from {}: {} new nodes, {} new edges\n",
                           RecordSummary(*report), args.file, report->new_nodes, report->new_edges);
  return 0;
}

}  // namespace

void RegisterMemoryCommand(CLI::App& app, int* exit_code) {
  CLI::App* mem = app.add_subcommand("memory", "Inspect the experience graph; share experience");
  mem->require_subcommand(1);
  auto args = std::make_shared<MemoryArgs>();
  auto add_common = [&](CLI::App* sub) {
    sub->add_option("--store", args->store,
                    "Experience store (default: $KOPE_STORE, else "
                    "$XDG_DATA_HOME/kope/experience.db or ~/.local/share/kope/experience.db)");
    sub->add_flag("--json", args->json, "Print JSON");
    return sub;
  };
  CLI::App* stats = add_common(mem->add_subcommand("stats", "Counts, sizes and schema version"));
  stats->callback([args, exit_code] { *exit_code = RunStats(*args); });

  CLI::App* show =
      add_common(mem->add_subcommand("show", "One node: attempt:42, t3, insight:7, ..."));
  show->add_option("node", args->node, "The node (KIND:ID; a bare number is an attempt)")
      ->required();
  show->add_flag("--source", args->source, "With an attempt, print its full source");
  show->callback([args, exit_code] { *exit_code = RunShow(*args); });

  CLI::App* lineage =
      add_common(mem->add_subcommand("lineage", "Decisions and outcomes from the root to NODE"));
  lineage->add_option("node", args->node, "The attempt")->required();
  lineage->callback([args, exit_code] { *exit_code = RunLineage(*args); });

  CLI::App* search = add_common(
      mem->add_subcommand("search", "Full-text search of decisions, insights, errors and tasks"));
  search->add_option("text", args->words, "Words to find")->required();
  search->add_option("--kind", args->kind, "Only this kind")
      ->check(CLI::IsMember({"attempt", "insight", "error", "task"}));
  search->add_option("--family", args->family, "Only this op family");
  search->add_flag("--any", args->any, "Match any word instead of every word");
  search->add_option("--limit", args->limit, "At most this many hits")->check(CLI::Range(1, 10000));
  search->callback([args, exit_code] { *exit_code = RunSearch(*args); });

  CLI::App* exp = add_common(mem->add_subcommand("export", "Write the graph as JSON lines"));
  exp->add_option("file", args->file, "The file to write")->required();
  exp->add_option("--family", args->family, "Only this op family's subgraph");
  exp->callback([args, exit_code] { *exit_code = RunExport(*args); });

  CLI::App* imp = add_common(
      mem->add_subcommand("import", "Merge a JSON-lines experience pack (all or nothing)"));
  imp->add_option("file", args->file, "The pack to read")->required()->check(CLI::ExistingFile);
  imp->callback([args, exit_code] { *exit_code = RunImport(*args); });
}

}  // namespace kope::cli
