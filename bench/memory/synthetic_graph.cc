#include "synthetic_graph.h"

#include <cmath>
#include <cstdio>

#include "kope/memory/text/decision_classes.h"
#include "kope/memory/text/error_signature.h"

namespace kope::memory::bench {
namespace {

// Words for each decision class, as people write them.
const char* const kClassPhrases[] = {"vectorize loads with float4",
                                     "tile through shared memory",
                                     "warp shuffle reduction",
                                     "online softmax with running max",
                                     "fuse the epilogue",
                                     "split-k over blocks",
                                     "persistent kernel over tiles",
                                     "use tensor cores via wmma",
                                     "double buffer with cp.async",
                                     "raise occupancy",
                                     "reduce register pressure",
                                     "unroll the inner loop",
                                     "change layout to column-major",
                                     "grid-stride loop",
                                     "parallelize rows with OpenMP threads",
                                     "AVX2 simd intrinsics",
                                     "cache blocking for L2",
                                     "tune block size"};

const char* const kErrors[] = {
    "kernel.cu(%d): error: identifier \"tile\" is undefined",
    "kernel.cu(%d): error: expected a \";\"",
    "kernel.cc:%d:5: error: '__m512' was not declared in this scope",
    "kernel.cu(%d): error: too many resources requested for launch",
    "kernel.cc:%d:12: error: invalid conversion from 'const float*' to 'float*'",
    "ptxas error: Entry function uses too much shared data (0x%x bytes)",
    "kernel.cu(%d): error: no instance of overloaded function \"__shfl_xor_sync\" matches",
    "CUDA error: an illegal memory access was encountered at launch %d",
};

std::string Syllables(uint64_t n) {
  static const char* const kParts[] = {"ka",  "ro", "mi",  "tel", "vor", "sun", "pa",
                                       "dek", "li", "zan", "qu",  "ost", "ne",  "bri"};
  std::string word;
  do {
    word += kParts[n % 14];
    n /= 14;
  } while (n > 0);
  return word;
}

// One generation's state from step to step: the random stream (drawn in a fixed order, so the
// graph is deterministic for a seed) and the ids that later steps pick from.
class Generator {
 public:
  Generator(GraphStore& store, const GraphShape& shape)
      : store_(store),
        shape_(shape),
        rng_(shape.seed),
        classes_(static_cast<int>(DecisionClassVocabulary().size())) {}

  Status Run() {
    KOPE_RETURN_IF_ERROR(store_.Write([&](GraphWriter& w) { return PutHardwareAndTasks(w); }));
    KOPE_RETURN_IF_ERROR(PutEpisodes());
    return store_.Write([&](GraphWriter& w) { return PutInsights(w); });
  }

 private:
  // An episode so far: its attempts with their sources, and their speedups.
  struct Episode {
    std::vector<std::pair<NodeId, std::string>> attempts;
    std::vector<double> speedups;
  };

  // An attempt before it is written: the node, its source, and its parent's speedup.
  struct Draft {
    AttemptNode attempt;
    std::string source;
    double parent_speedup = 1.0;
  };

  Status PutHardwareAndTasks(GraphWriter& w) {
    KOPE_RETURN_IF_ERROR(PutHardware(w));
    return PutTasks(w);
  }

  Status PutHardware(GraphWriter& w) {
    const char* devices[][3] = {{"cuda", "NVIDIA H100", "sm_90"},
                                {"cuda", "NVIDIA A100", "sm_80"},
                                {"cpu", "Intel Xeon 8480", "x86_64-avx512"},
                                {"cpu", "AMD EPYC 9654", "x86_64-avx512"}};
    for (auto& d : devices) {
      HardwareNode h;
      h.backend = d[0];
      h.device = d[1];
      h.arch = d[2];
      KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutHardware(h));
      hardware_.push_back(id);
    }
    return Status::Ok();
  }

  Status PutTasks(GraphWriter& w) {
    for (int f = 0; f < shape_.families; ++f) {
      for (int t = 0; t < shape_.tasks_per_family; ++t) {
        TaskNode task;
        task.op_family = FamilyName(f);
        task.name = task.op_family + "_" + std::to_string(t);
        task.size = std::pow(10.0, 3.0 + 5.0 * std::uniform_real_distribution<double>(0, 1)(rng_));
        task.description = FamilyName(f) + " over " + DecisionWords()[rng_() % 3000] + " rows of " +
                           DecisionWords()[rng_() % 3000];
        KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutTask(task));
        tasks_.push_back(id);
      }
    }
    return Status::Ok();
  }

  // Episodes, several transactions' worth at a time.
  Status PutEpisodes() {
    const int64_t total_runs = static_cast<int64_t>(tasks_.size()) * shape_.runs_per_task;
    const int runs_per_txn = std::max(1, shape_.attempts_per_transaction / shape_.attempts_per_run);
    int64_t done_runs = 0;
    while (done_runs < total_runs) {
      const int64_t batch_end = std::min(total_runs, done_runs + runs_per_txn);
      Status written = store_.Write([&](GraphWriter& w) -> Status {
        for (int64_t r = done_runs; r < batch_end; ++r) KOPE_RETURN_IF_ERROR(PutRun(w, r));
        return Status::Ok();
      });
      KOPE_RETURN_IF_ERROR(written);
      done_runs = batch_end;
      std::fprintf(stderr, "\r  generated %lld / %lld runs", static_cast<long long>(done_runs),
                   static_cast<long long>(total_runs));
    }
    std::fprintf(stderr, "\n");
    return Status::Ok();
  }

  // Run `r` (counted over all tasks) and its attempts, each with its outcome.
  Status PutRun(GraphWriter& w, int64_t r) {
    const size_t task_index = static_cast<size_t>(r / shape_.runs_per_task);
    RunNode run;
    run.task_id = tasks_[task_index];
    run.hardware_id = hardware_[rng_() % hardware_.size()];
    run.label = "optimize";
    run.compiler = run.hardware_id <= hardware_[1] ? "nvcc 12.4" : "g++ 12.2.0";
    KOPE_ASSIGN_OR_RETURN(NodeId run_id, w.PutRun(run));
    Episode episode;
    for (int a = 0; a < shape_.attempts_per_run; ++a) {
      Draft draft = DrawAttempt(run_id, task_index, a, episode);
      KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutAttempt(draft.attempt, draft.source));
      OutcomeNode o;
      o.attempt_id = id;
      const double speedup = DrawOutcome(a, draft.parent_speedup, o);
      KOPE_ASSIGN_OR_RETURN(NodeId outcome_id, w.PutOutcome(o));
      if (o.verdict == "valid" && speedup > draft.parent_speedup &&
          outcomes_with_gain_.size() < 400000) {
        outcomes_with_gain_.push_back(outcome_id);
      }
      KOPE_RETURN_IF_ERROR(MaybeUseEarlier(w, id, a, speedup > draft.parent_speedup));
      episode.attempts.emplace_back(id, std::move(draft.source));
      episode.speedups.push_back(speedup);
      RememberAttempt(id);
    }
    return Status::Ok();
  }

  // Attempt `a` of an episode: the baseline first, then a change to an earlier attempt (most
  // often one of the last three).
  Draft DrawAttempt(NodeId run_id, size_t task_index, int a, const Episode& episode) {
    Draft d;
    d.attempt.run_id = run_id;
    if (a == 0) {
      d.source = MakeKernel(rng_, static_cast<int>(task_index));
      d.attempt.decision = "baseline";
      d.attempt.proposer = "baseline";
      return d;
    }
    const size_t size = episode.attempts.size();
    size_t parent = rng_() % size;
    if (rng_() % 3 != 0) parent = size - 1 - rng_() % std::min<size_t>(3, size);
    d.attempt.parent_id = episode.attempts[parent].first;
    d.parent_speedup = episode.speedups[parent];
    d.source = Mutate(rng_, episode.attempts[parent].second, 1 + static_cast<int>(rng_() % 3));
    d.attempt.decision = MakeDecision(rng_, static_cast<int>(rng_() % classes_));
    d.attempt.proposer = rng_() % 4 == 0 ? "tuner" : "llm:model-a";
    d.attempt.prompt_tokens = 2000 + static_cast<int64_t>(rng_() % 6000);
    d.attempt.completion_tokens = 300 + static_cast<int64_t>(rng_() % 1500);
    return d;
  }

  // Fills the verdict and its figures into `o`; returns the attempt's speedup (its parent's when
  // it is not valid).
  double DrawOutcome(int a, double parent_speedup, OutcomeNode& o) {
    const int roll = static_cast<int>(rng_() % 100);
    double speedup = parent_speedup;
    if (a > 0 && roll < 18) {
      o.verdict = "compile_error";
      char buffer[160];
      std::snprintf(buffer, sizeof(buffer), kErrors[rng_() % 8], static_cast<int>(rng_() % 300));
      o.error_message = std::string("/tmp/kope-") + std::to_string(rng_() % 100000) + "/" + buffer;
    } else if (a > 0 && roll < 25) {
      o.verdict = roll < 21 ? "incorrect" : "runtime_error";
    } else {
      o.verdict = "valid";
      speedup = std::max(
          0.2, parent_speedup * std::exp(std::normal_distribution<double>(0.05, 0.2)(rng_)));
      o.speedup = speedup;
      o.time_ms = 1.0 / speedup;
      o.roofline = std::min(0.95, 0.1 * speedup);
      o.flagged = rng_() % 500 == 0;
      o.evidence_json =
          "{\"median_ms\":" + std::to_string(1.0 / speedup) + ",\"spread\":0.01,\"runs\":25}";
    }
    return speedup;
  }

  // For some attempts after the first: a used edge to a recent attempt, credited by the gain.
  Status MaybeUseEarlier(GraphWriter& w, NodeId id, int a, bool gained) {
    if (a > 0 && !recent_attempts_.empty() &&
        std::uniform_real_distribution<double>(0, 1)(rng_) < shape_.used_per_attempt) {
      UsedEdge used;
      used.attempt_id = id;
      used.target = {NodeKind::kAttempt, recent_attempts_[rng_() % recent_attempts_.size()]};
      used.section = "exemplars";
      used.tokens = 400;
      KOPE_RETURN_IF_ERROR(w.AddUsed(used).status());
      KOPE_RETURN_IF_ERROR(w.CreditUsed(id, gained ? 1.0 : -0.1).status());
    }
    return Status::Ok();
  }

  // Keeps a sample of at most 5000 attempts for used edges to point at.
  void RememberAttempt(NodeId id) {
    if (recent_attempts_.size() < 5000) {
      recent_attempts_.push_back(id);
    } else {
      recent_attempts_[rng_() % recent_attempts_.size()] = id;
    }
  }

  // Insights: mostly family-specific, some general, each with evidence.
  Status PutInsights(GraphWriter& w) {
    for (int i = 0; i < shape_.insights; ++i) {
      KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutInsight(DrawInsight(i)));
      KOPE_RETURN_IF_ERROR(PutEvidence(w, id));
    }
    return Status::Ok();
  }

  InsightNode DrawInsight(int i) {
    InsightNode insight;
    const int cls = static_cast<int>(rng_() % classes_);
    insight.kind = rng_() % 5 == 0 ? "failure_rule" : "lesson";
    insight.text = MakeDecision(rng_, cls) + " helps (lesson " + std::to_string(i) + ")";
    insight.classes = {std::string(DecisionClassVocabulary()[cls])};
    if (rng_() % 20 != 0) {
      insight.scope.op_family = FamilyName(static_cast<int>(rng_() % shape_.families));
    }
    if (rng_() % 2 == 0) {
      insight.scope.backend = "cuda";
      insight.scope.arch = rng_() % 2 == 0 ? "sm_90" : "sm_80";
    }
    if (rng_() % 3 == 0) {
      insight.scope.size_min = std::pow(10.0, 3 + static_cast<int>(rng_() % 3));
      insight.scope.size_max = insight.scope.size_min * 100;
    }
    return insight;
  }

  // One to nine evidence edges from the insight to outcomes that gained.
  Status PutEvidence(GraphWriter& w, NodeId insight_id) {
    const int edges = 1 + static_cast<int>(rng_() % 9);
    for (int e = 0; e < edges && !outcomes_with_gain_.empty(); ++e) {
      EvidenceEdge edge;
      edge.insight_id = insight_id;
      edge.outcome_id = outcomes_with_gain_[rng_() % outcomes_with_gain_.size()];
      edge.relation =
          rng_() % 4 == 0 ? EvidenceRelation::kContradictedBy : EvidenceRelation::kSupportedBy;
      edge.effect = 1.0 + static_cast<double>(rng_() % 100) / 100.0;
      KOPE_RETURN_IF_ERROR(w.AddEvidence(edge).status());
    }
    return Status::Ok();
  }

  GraphStore& store_;
  const GraphShape& shape_;
  std::mt19937_64 rng_;
  const int classes_;
  std::vector<NodeId> hardware_, tasks_;
  std::vector<NodeId> outcomes_with_gain_;
  std::vector<NodeId> recent_attempts_;
};

}  // namespace

int64_t GraphShape::Nodes() const {
  int64_t tasks = static_cast<int64_t>(families) * tasks_per_family;
  int64_t runs = tasks * runs_per_task;
  int64_t attempts = runs * attempts_per_run;
  return 4 + tasks + runs + 2 * attempts + insights;
}

const std::vector<std::string>& DecisionWords() {
  static const std::vector<std::string> words = [] {
    std::vector<std::string> w;
    for (uint64_t i = 0; i < 3000; ++i) w.push_back(Syllables(i * 7919 + 13));
    return w;
  }();
  return words;
}

std::string FamilyName(int family) {
  static const char* const kBase[] = {"softmax", "matmul",    "layernorm", "conv2d",    "reduce",
                                      "gelu",    "attention", "rmsnorm",   "transpose", "scan"};
  return std::string(kBase[family % 10]) + (family < 10 ? "" : "_" + std::to_string(family / 10));
}

std::string MakeDecision(std::mt19937_64& rng, int cls) {
  const auto& words = DecisionWords();
  // Zipf-like: a few words are common, most are rare.
  std::string text = kClassPhrases[cls];
  int extra = 4 + static_cast<int>(rng() % 8);
  for (int i = 0; i < extra; ++i) {
    double u = std::uniform_real_distribution<double>(0, 1)(rng);
    size_t index = static_cast<size_t>(std::pow(u, 3.0) * static_cast<double>(words.size()));
    text += " " + words[index % words.size()];
  }
  return text;
}

std::string MakeKernel(std::mt19937_64& rng, int task) {
  std::string k = "#include \"kope/kernel.h\"\n// task " + std::to_string(task) + "\n";
  k += "extern \"C\" int kope_kernel(const kope_tensor* in, int n_in, kope_tensor* out, int n_out,"
       " void* stream) {\n";
  for (int line = 0; line < 36; ++line) {
    k += "  float v" + std::to_string(line) + " = x[i * " + std::to_string(rng() % 64) + " + " +
         std::to_string(line) + "] * scale + bias[" + std::to_string(rng() % 16) + "];\n";
  }
  k += "  return 0;\n}\n";
  return k;
}

std::string Mutate(std::mt19937_64& rng, const std::string& kernel, int changes) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < kernel.size()) {
    size_t end = kernel.find('\n', start);
    lines.push_back(kernel.substr(start, end - start + 1));
    start = end + 1;
  }
  for (int c = 0; c < changes; ++c) {
    size_t at = 3 + rng() % (lines.size() - 5);
    lines[at] = "  float w" + std::to_string(rng() % 1000) + " = __ldg(x + i * " +
                std::to_string(rng() % 128) + ") * scale;\n";
  }
  std::string out;
  for (const std::string& l : lines) out += l;
  return out;
}

Status Generate(GraphStore& store, const GraphShape& shape) {
  return Generator(store, shape).Run();
}

Result<GraphIds> CollectIds(GraphStore& store) {
  GraphIds ids;
  KOPE_ASSIGN_OR_RETURN(std::vector<TaskNode> tasks, store.ListTasks(""));
  for (const TaskNode& t : tasks) {
    ids.tasks.push_back(t.id);
    if (ids.families.empty() || ids.families.back() != t.op_family)
      ids.families.push_back(t.op_family);
  }
  KOPE_ASSIGN_OR_RETURN(std::vector<HardwareNode> hardware, store.ListHardware());
  for (const HardwareNode& h : hardware) ids.hardware.push_back(h.id);
  KOPE_ASSIGN_OR_RETURN(StoreStats stats, store.Stats());
  // Attempt ids are dense from 1 in a generated store.
  for (NodeId id = 1; id <= stats.attempts; ++id) ids.attempts.push_back(id);
  for (int i = 0; i < 8; ++i) {
    char buffer[160];
    std::snprintf(buffer, sizeof(buffer), kErrors[i], 7);
    ids.error_signatures.push_back(NormalizeError(std::string("/tmp/kope-1/") + buffer));
  }
  return ids;
}

}  // namespace kope::memory::bench
