#include "kope/pack/build.h"

#include <fmt/format.h>

#include <algorithm>

#include "kope/base/file.h"
#include "kope/base/hash.h"
#include "kope/memory/record.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "kope/pack/pack_file.h"
#include "kope/record/graph_nodes.h"

namespace kope::pack {
namespace {

namespace fs = std::filesystem;

bool Wanted(const std::vector<std::string>& only, const std::string& name) {
  return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
}

// The task as the build times it: with `quick`, at its largest check set.
Task TimedTask(Task task, bool quick) {
  if (!quick) return task;
  task.bench = task.checks.back();
  task.bench.label = "bench";
  task.language_bench.clear();
  return task;
}

PackVerdict VerdictOf(const PackKernel& k, const Task& task, const Outcome& o) {
  PackVerdict v;
  v.kernel = k.spec.name;
  v.task = task.name;
  v.language = k.spec.language;
  v.verdict = std::string(VerdictName(o.verdict));
  v.message = record::OutcomeErrorText(o);
  v.device = o.hardware.device;
  if (o.valid()) {
    v.speedup = o.speedup;
    if (o.candidate_time) v.time_ms = o.candidate_time->median_s * 1e3;
    if (o.baseline_time) v.baseline_ms = o.baseline_time->median_s * 1e3;
    v.roofline = o.roofline_fraction.value_or(0);
  }
  return v;
}

// The insight a valid evaluation of a pack kernel supports.
memory::InsightNode InsightFor(const PackKernel& k, const Task& task, const Outcome& o,
                               double size) {
  memory::InsightNode insight;
  insight.text = fmt::format(
      "pack kernel {} ({} op {}): valid on {}, {:.2f}x over its baseline at {} elements on {}",
      k.spec.name, k.spec.pack, k.spec.op, task.name, o.speedup, static_cast<int64_t>(size),
      o.hardware.device);
  insight.scope.op_family = task.family;
  insight.scope.backend = o.hardware.backend;
  insight.scope.device = o.hardware.device;
  insight.scope.arch = o.hardware.architecture;
  insight.scope.compiler = o.hardware.compiler;
  insight.scope.size_min = insight.scope.size_max = size;
  insight.classes = {"pack-kernel"};
  return insight;
}

Status RecordOne(memory::GraphStore& store, const PackKernel& k, const Task& task,
                 const std::string& source, const Outcome& o) {
  memory::AttemptNode attempt;
  attempt.decision =
      fmt::format("pack: kernel {} of pack {} (op {})", k.spec.name, k.spec.pack, k.spec.op);
  attempt.proposer = "pack";
  KOPE_ASSIGN_OR_RETURN(
      memory::EvaluationRecord rec,
      record::EvaluationRecordFor(task, k.spec.language, o, source, std::move(attempt), "pack"));
  rec.run.config_json = fmt::format("{{\"pack\":{}}}", KernelSpecJson(k.spec));
  rec.run.key = ContentHash({"pack run", k.spec.pack, k.spec.name, task.name, o.hardware.device});
  return store.Write([&](memory::GraphWriter& writer) -> Status {
    KOPE_ASSIGN_OR_RETURN(memory::RecordedIds ids, memory::RecordEvaluation(writer, rec));
    if (!o.valid() || o.speedup <= 0) return Status::Ok();
    KOPE_ASSIGN_OR_RETURN(memory::NodeId insight,
                          writer.PutInsight(InsightFor(k, task, o, rec.task.size)));
    memory::EvidenceEdge edge;
    edge.insight_id = insight;
    edge.outcome_id = ids.outcome;
    edge.effect = o.speedup;
    return writer.AddEvidence(edge).status();
  });
}

PackFileKernel Summary(const PackKernel& k, const std::string& hash,
                       const std::vector<PackVerdict>& verdicts) {
  PackFileKernel s;
  s.spec = k.spec;
  s.source_hash = hash;
  for (const PackVerdict& v : verdicts) {
    if (v.kernel != k.spec.name) continue;
    ++s.outcomes;
    if (v.verdict == "valid") ++s.valid;
  }
  return s;
}

}  // namespace

bool PackBuildReport::all_valid() const {
  return std::all_of(verdicts.begin(), verdicts.end(),
                     [](const PackVerdict& v) { return v.verdict == "valid"; });
}

Result<PackBuildReport> BuildPack(const PackSource& pack, const PackBuildOptions& options) {
  if (!options.backend) return Status::InvalidArgument("pack build: no backend was given");
  KOPE_ASSIGN_OR_RETURN(fs::path scratch, MakeTempFolder("", "kope-pack"));
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{scratch};
  KOPE_ASSIGN_OR_RETURN(auto store, memory::OpenSqliteStore(scratch / "pack.db"));
  PackBuildReport report;
  PackFileInfo info;
  info.name = pack.name;
  info.description = pack.description;
  info.built_at = memory::NowMillis();
  for (const PackKernel& k : pack.kernels) {
    if (!Wanted(options.kernels, k.spec.name) || !Wanted(options.languages, k.spec.language)) {
      continue;
    }
    Result<Backend*> backend = options.backend(k.spec.language);
    if (!backend.ok()) {
      report.skipped.push_back(
          fmt::format("{} ({}): {}", k.spec.name, k.spec.language, backend.status().message()));
      continue;
    }
    KOPE_ASSIGN_OR_RETURN(std::string source, ReadFileText(k.source));
    for (const fs::path& dir : k.tasks) {
      KOPE_ASSIGN_OR_RETURN(Task loaded, LoadTask(dir));
      const Task task = TimedTask(std::move(loaded), options.quick);
      Evaluator evaluator(**backend, options.eval);
      KOPE_ASSIGN_OR_RETURN(Outcome outcome,
                            evaluator.Evaluate(task, source, k.source.filename().string()));
      KOPE_RETURN_IF_ERROR(RecordOne(*store, k, task, source, outcome));
      report.verdicts.push_back(VerdictOf(k, task, outcome));
      if (options.progress) {
        const PackVerdict& v = report.verdicts.back();
        options.progress(
            fmt::format("{:<10} {} on {}: {:.2f}x", v.verdict, v.kernel, v.task, v.speedup));
      }
    }
    info.kernels.push_back(Summary(k, ContentHash(source), report.verdicts));
  }
  KOPE_ASSIGN_OR_RETURN(report.written, WritePackFile(*store, info, options.out));
  return report;
}

}  // namespace kope::pack
