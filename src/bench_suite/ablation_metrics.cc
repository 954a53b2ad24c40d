// The ablation's metrics: attempts to a fraction of the best, arm metrics with their intervals
// over repetitions, and the targets.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "kope/bench_suite/ablation.h"

namespace kope::bench_suite {
namespace {

// Student's t at 0.975 for 1..30 degrees of freedom; 1.96 beyond.
double TQuantile(int df) {
  static constexpr double kT[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  return df >= 1 && df <= 30 ? kT[df - 1] : 1.96;
}

// The 1-based attempt whose speedup first reached `threshold`; 0: none did.
int AttemptsTo(const std::vector<double>& speedups, double threshold) {
  if (threshold <= 0) return 0;
  for (size_t i = 0; i < speedups.size(); ++i) {
    if (speedups[i] > 0 && speedups[i] >= threshold) return static_cast<int>(i) + 1;
  }
  return 0;
}

// A run that never reached the fraction counts what it could have spent.
double Censored(int attempts_to, const AblationTaskRun& run, int budget) {
  return attempts_to > 0 ? attempts_to : std::max(run.attempts, budget);
}

// Per attempt, the tokens the arm's proposer was sent: the LLM's where it reported any, else the
// prompts of the arm's mode as built.
std::vector<int64_t> ArmTokens(const AblationTaskRun& run, context::ContextMode mode) {
  const bool llm = std::any_of(run.proposer_tokens.begin(), run.proposer_tokens.end(),
                               [](int64_t t) { return t > 0; });
  if (llm) return run.proposer_tokens;
  return mode == context::ContextMode::kPassive ? run.passive_tokens : run.active_tokens;
}

int64_t Sum(const std::vector<int64_t>& v, size_t n) {
  return std::accumulate(v.begin(), v.begin() + std::min(n, v.size()), int64_t{0});
}

void AddByAttempt(const std::vector<int64_t>& tokens, std::vector<double>& sum,
                  std::vector<int>& count) {
  if (sum.size() < tokens.size()) {
    sum.resize(tokens.size(), 0);
    count.resize(tokens.size(), 0);
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    sum[i] += static_cast<double>(tokens[i]);
    ++count[i];
  }
}

struct RunFigures {
  std::vector<double> pass, geomean, own, reference, tokens_to, active, passive, prompt, cost;
  std::vector<std::vector<double>> fast;
};

void AddRun(const AblationReport& report, const AblationArm& arm, const AblationRun& run,
            RunFigures& f) {
  const double n = std::max<size_t>(1, run.tasks.size());
  int valid = 0;
  double log_sum = 0;
  double own = 0, reference = 0, tokens_to = 0, active = 0, passive = 0, prompt = 0, cost = 0;
  std::vector<double> fast(report.fast_p.size(), 0);
  for (const AblationTaskRun& t : run.tasks) {
    if (t.valid) {
      ++valid;
      log_sum += std::log(t.speedup);
      for (size_t p = 0; p < report.fast_p.size(); ++p) fast[p] += t.speedup > report.fast_p[p];
    }
    own += Censored(t.attempts_to_own, t, report.attempts_budget);
    reference += Censored(t.attempts_to_reference, t, report.attempts_budget);
    const std::vector<int64_t> tokens = ArmTokens(t, arm.mode);
    const size_t until =
        t.attempts_to_reference > 0 ? static_cast<size_t>(t.attempts_to_reference) : tokens.size();
    tokens_to += static_cast<double>(Sum(tokens, until));
    prompt += static_cast<double>(Sum(tokens, tokens.size()));
    active += static_cast<double>(Sum(t.active_tokens, t.active_tokens.size()));
    passive += static_cast<double>(Sum(t.passive_tokens, t.passive_tokens.size()));
    cost += t.cost_usd;
  }
  f.pass.push_back(valid / n);
  if (valid > 0) f.geomean.push_back(std::exp(log_sum / valid));
  f.own.push_back(own / n);
  f.reference.push_back(reference / n);
  f.tokens_to.push_back(tokens_to);
  f.active.push_back(active);
  f.passive.push_back(passive);
  f.prompt.push_back(prompt);
  f.cost.push_back(cost);
  f.fast.resize(fast.size());
  for (size_t p = 0; p < fast.size(); ++p) f.fast[p].push_back(fast[p] / n);
}

ArmMetrics MetricsOf(const AblationReport& report, const AblationArmResult& arm) {
  RunFigures f;
  std::vector<double> active_sum, passive_sum;
  std::vector<int> active_count, passive_count;
  for (const AblationRun& run : arm.runs) {
    AddRun(report, arm.arm, run, f);
    for (const AblationTaskRun& t : run.tasks) {
      AddByAttempt(t.active_tokens, active_sum, active_count);
      AddByAttempt(t.passive_tokens, passive_sum, passive_count);
    }
  }
  ArmMetrics m;
  m.pass_rate = IntervalOf(f.pass);
  for (const std::vector<double>& fast : f.fast) m.fast_p.push_back(IntervalOf(fast));
  m.fast_p.resize(report.fast_p.size());
  m.geomean_speedup = IntervalOf(f.geomean);
  m.attempts_to_own = IntervalOf(f.own);
  m.attempts_to_reference = IntervalOf(f.reference);
  m.tokens_to_reference = IntervalOf(f.tokens_to);
  m.active_tokens = IntervalOf(f.active);
  m.passive_tokens = IntervalOf(f.passive);
  m.prompt_tokens = IntervalOf(f.prompt);
  m.cost_usd = IntervalOf(f.cost);
  for (size_t i = 0; i < active_sum.size(); ++i) {
    m.active_by_attempt.push_back(active_sum[i] / active_count[i]);
  }
  for (size_t i = 0; i < passive_sum.size(); ++i) {
    m.passive_by_attempt.push_back(passive_sum[i] / passive_count[i]);
  }
  return m;
}

// Per task name: the mean over an arm's repetitions of attempts to the fraction of the run's own
// final best (censored) and of the final speedup (1.0, the baseline kept, without a valid
// kernel).
struct TaskMeans {
  double attempts = 0;
  double log_speedup = 0;
  int runs = 0;
  bool known = false;
  bool solved = false;  // in some repetition
};

std::map<std::string, TaskMeans> MeansByTask(const AblationArmResult& arm, int budget) {
  std::map<std::string, TaskMeans> means;
  for (const AblationRun& run : arm.runs) {
    for (const AblationTaskRun& t : run.tasks) {
      TaskMeans& m = means[t.task];
      m.attempts += Censored(t.attempts_to_own, t, budget);
      m.log_speedup += t.valid ? std::log(t.speedup) : 0.0;
      m.known = m.known || t.known_family;
      m.solved = m.solved || t.valid;
      ++m.runs;
    }
  }
  for (auto& [name, m] : means) {
    m.attempts /= m.runs;
    m.log_speedup /= m.runs;
  }
  return means;
}

TargetCheck MemoryTarget(const AblationReport& report) {
  TargetCheck check;
  check.name = "memory";
  const AblationArmResult* fresh = nullptr;
  for (const AblationArmResult& a : report.arms) {
    if (a.arm.name == "fresh") fresh = &a;
  }
  if (fresh == nullptr) return check;
  const auto fresh_means = MeansByTask(*fresh, report.attempts_budget);
  double acc_attempts = 0, fresh_attempts = 0, log_ratio = 0;
  int pairs = 0;
  std::string lines;
  for (const AblationArmResult& a : report.arms) {
    if (!a.arm.shared_graph) continue;
    double arm_acc = 0, arm_fresh = 0;
    int arm_pairs = 0;
    for (const auto& [name, m] : MeansByTask(a, report.attempts_budget)) {
      auto f = fresh_means.find(name);
      if (!m.known || f == fresh_means.end() || !(m.solved || f->second.solved)) continue;
      arm_acc += m.attempts;
      arm_fresh += f->second.attempts;
      log_ratio += m.log_speedup - f->second.log_speedup;
      ++arm_pairs;
    }
    if (arm_pairs == 0) continue;
    lines += fmt::format("{}{}: {:.1f} attempts over {} tasks of a known family, fresh {:.1f}",
                         lines.empty() ? "" : "; ", a.arm.name, arm_acc, arm_pairs, arm_fresh);
    acc_attempts += arm_acc;
    fresh_attempts += arm_fresh;
    pairs += arm_pairs;
  }
  if (pairs == 0 || fresh_attempts <= 0) return check;
  check.evaluated = true;
  const double ratio = acc_attempts / fresh_attempts;
  const double speed = std::exp(log_ratio / pairs);
  check.met = ratio <= 0.5 && speed >= 0.95;
  check.detail = fmt::format(
      "attempts to {:.0f}% of the run's final best: accumulating {:.2f}x the fresh graph's "
      "(target <= 0.5); final speed {:.2f}x the fresh graph's (geomean, target >= 0.95). {}",
      100 * report.fraction, ratio, speed, lines);
  return check;
}

TargetCheck ContextTarget(const AblationReport& report) {
  TargetCheck check;
  check.name = "context";
  double active = 0, passive = 0, last_ratio = 0, attempts = 0;
  int runs = 0;
  for (const AblationArmResult& a : report.arms) {
    if (a.arm.mode != context::ContextMode::kActive) continue;
    for (const AblationRun& run : a.runs) {
      for (const AblationTaskRun& t : run.tasks) {
        const int64_t ta = Sum(t.active_tokens, t.active_tokens.size());
        if (ta <= 0 || t.active_tokens.back() <= 0) continue;
        active += static_cast<double>(ta);
        passive += static_cast<double>(Sum(t.passive_tokens, t.passive_tokens.size()));
        last_ratio += static_cast<double>(t.passive_tokens.back()) /
                      static_cast<double>(t.active_tokens.back());
        attempts += t.attempts;
        ++runs;
      }
    }
  }
  if (runs == 0) return check;
  check.evaluated = true;
  const double ratio = passive / active;
  check.met = ratio >= 5;
  check.detail = fmt::format(
      "passive prompts hold {:.2f}x the tokens of the active ones over {} task runs of {:.1f} "
      "attempts on average (target >= 5); at a run's last attempt {:.2f}x",
      ratio, runs, attempts / runs, last_ratio / runs);
  return check;
}

}  // namespace

Interval IntervalOf(const std::vector<double>& values) {
  Interval i;
  i.n = static_cast<int>(values.size());
  if (values.empty()) return i;
  i.mean = std::accumulate(values.begin(), values.end(), 0.0) / i.n;
  i.low = i.high = i.mean;
  if (i.n < 2) return i;
  double ss = 0;
  for (double v : values) ss += (v - i.mean) * (v - i.mean);
  const double half = TQuantile(i.n - 1) * std::sqrt(ss / (i.n - 1) / i.n);
  i.low = i.mean - half;
  i.high = i.mean + half;
  return i;
}

void ComputeAblationMetrics(AblationReport& report) {
  std::map<std::string, double> reference;
  for (const AblationArmResult& a : report.arms) {
    for (const AblationRun& run : a.runs) {
      for (const AblationTaskRun& t : run.tasks) {
        reference[t.task] = std::max(reference[t.task], t.speedup);
      }
    }
  }
  for (AblationArmResult& a : report.arms) {
    for (AblationRun& run : a.runs) {
      for (AblationTaskRun& t : run.tasks) {
        t.attempts_to_own = t.valid ? AttemptsTo(t.speedups, report.fraction * t.speedup) : 0;
        t.attempts_to_reference = AttemptsTo(t.speedups, report.fraction * reference[t.task]);
      }
    }
    a.metrics = MetricsOf(report, a);
  }
  report.targets = {MemoryTarget(report), ContextTarget(report)};
}

}  // namespace kope::bench_suite
