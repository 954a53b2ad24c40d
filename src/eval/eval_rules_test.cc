// The evaluator's rules, on a fake clock with fake runners (fake_env.h): verdicts and mismatch
// reasons, the candidate-call limit, the timing flags and the stopping rule of timing. Each
// evaluation takes milliseconds; the same rules with real sandboxed runners are in
// adversarial_test and runner_pool_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "decide_timing.h"
#include "fake_env.h"
#include "kope/base/temp_folder.h"
#include "kope/eval/evaluator.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

void Correct(float* x, float* y, size_t n, int) {
  for (size_t i = 0; i < n; ++i) y[i] = 2 * x[i] + 1;
}

FakeKernel Reference() { return FakeKernel{Correct}; }

// A candidate of `seconds` per call, verified or timed, computing with `compute`.
FakeKernel Kernel(std::function<void(float*, float*, size_t, int)> compute, double seconds = 1e-3) {
  FakeKernel k{std::move(compute)};
  k.call_seconds = seconds;
  k.timed_seconds = seconds;
  return k;
}

struct Case {
  std::string name;
  FakeKernel candidate;
  std::string verdict;
  std::string reason = "";                 // the mismatch's, where incorrect
  std::vector<std::string> flags = {};     // present
  std::vector<std::string> no_flags = {};  // absent
  FakeKernel reference = Reference();      // also the baseline
  std::string device = "";                 // the backend's runner_device: "" is the CPU
  double bandwidth = 0;                    // bytes per second for the roofline (0: none)
};

std::vector<Case> Cases() {
  const std::string kTfv(kFlagTimedFasterThanVerified);
  FakeKernel slow_reference = Reference();
  slow_reference.call_seconds = 3;  // the candidate's limit becomes 5 x 3 s
  FakeKernel wrong_at_3 = Kernel([](float* x, float* y, size_t n, int c) {
    Correct(x, y, n, c);
    y[3] += 1;
  });
  FakeKernel nan_out = Kernel([](float* x, float* y, size_t n, int c) {
    Correct(x, y, n, c);
    y[0] = std::numeric_limits<float>::quiet_NaN();
  });
  FakeKernel racy = Kernel([](float* x, float* y, size_t n, int c) {
    Correct(x, y, n, c);
    if (c % 3 == 1) y[n / 2] += 1;  // the second call of every trial
  });
  // The call after the perturbation replays the last output.
  auto last = std::make_shared<std::vector<float>>();
  FakeKernel stale = Kernel([last](float* x, float* y, size_t n, int c) {
    if (c % 3 == 2 && last->size() == n) {
      std::copy(last->begin(), last->end(), y);
      return;
    }
    Correct(x, y, n, c);
    last->assign(y, y + n);
  });
  FakeKernel mutates = Kernel([](float* x, float* y, size_t n, int c) {
    Correct(x, y, n, c);
    x[0] = 0;
  });
  FakeKernel past_end = Kernel([](float* x, float* y, size_t n, int c) {
    Correct(x, y, n, c);
    y[n] = 1;
  });
  // 3 size sets x 2 trials x 3 calls verified first; then wrong.
  FakeKernel drifts = Kernel([](float* x, float* y, size_t n, int c) {
    Correct(x, y, n, c);
    if (c >= 18) y[0] += 1;
  });
  FakeKernel crashes = Kernel(Correct);
  crashes.crashes = true;
  FakeKernel fails = Kernel(Correct);
  fails.return_code = 3;
  FakeKernel unstable = Kernel(Correct);
  unstable.jitter = 0.2;
  FakeKernel lies = Kernel(Correct);
  lies.reported_scale = 2;
  FakeKernel only_when_checked = Kernel(Correct, 5e-3);
  only_when_checked.timed_seconds = 5e-4;
  FakeKernel short_verified = Kernel(Correct, 5e-4);
  short_verified.timed_seconds = 5e-5;
  return {
      {"correct", Kernel(Correct), "valid", "", {"within_noise"}, {"speedup_above_10x", kTfv}},
      {"wrong_element", wrong_at_3, "incorrect", "value"},
      {"nan_output", nan_out, "incorrect", "nan_inf"},
      {"races", racy, "incorrect", "runs_disagree"},
      {"replays_after_perturbation", stale, "incorrect", "stale_output"},
      {"writes_its_input", mutates, "incorrect", "input_modified"},
      {"writes_past_its_output", past_end, "incorrect", "guard_overwritten"},
      {"drifts_after_timing", drifts, "incorrect", "after_timing"},
      {"crashes", crashes, "crash"},
      {"returns_an_error", fails, "runtime_error"},
      {"slower_than_the_limit", Kernel(Correct, 11), "timeout"},
      {"slow_with_a_slow_reference", Kernel(Correct, 12), "valid", "", {}, {}, slow_reference},
      {"slower_than_five_references", Kernel(Correct, 16), "timeout", "", {}, {}, slow_reference},
      {"ten_times_faster", Kernel(Correct, 5e-5), "valid", "", {"speedup_above_10x"}, {kTfv}},
      {"unstable", unstable, "valid", "", {"unstable_timing"}},
      {"reports_more_than_the_wall_clock", lies, "valid", "", {"wall_clock_mismatch"}},
      {"faster_than_the_roofline",
       Kernel(Correct),
       "valid",
       "",
       {"faster_than_roofline"},
       {},
       Reference(),
       "",
       1e6},
      {"within_the_roofline",
       Kernel(Correct),
       "valid",
       "",
       {},
       {"faster_than_roofline"},
       Reference(),
       "",
       1e9},
      {"timed_faster_than_verified", only_when_checked, "valid", "", {kTfv}},
      // Verified calls of 0.5 ms are judged on a GPU (device clock, from 200 us), not on the
      // CPU (host clock, from 1 ms).
      {"short_verified_calls_on_the_cpu", short_verified, "valid", "", {}, {kTfv}},
      {"short_verified_calls_on_a_gpu",
       short_verified,
       "valid",
       "",
       {kTfv},
       {},
       Reference(),
       "cuda:0"},
  };
}

class FakeEvaluation : public ::testing::Test {
 protected:
  void SetUp() override {
    auto scratch = TempFolder::Create("", "kope-eval-rules-test");
    ASSERT_TRUE(scratch.ok()) << scratch.status().ToString();
    scratch_ = std::move(scratch).value();
  }

  // A task y = 2x + 1 over n elements whose baseline file names `reference`.
  Task MakeTask(const std::string& reference) {
    Task task;
    task.name = "twice_plus_one";
    TensorSpec x;
    x.name = "x";
    x.shape = {*Expr::Parse("n")};
    TensorSpec y = x;
    y.name = "y";
    task.inputs = {x};
    task.outputs = {y};
    task.checks = {SizeSet{"check[0]", {{"n", 7}}}, SizeSet{"check[1]", {{"n", 64}}}};
    task.bench = SizeSet{"bench", {{"n", 1024}}};
    task.bytes = *Expr::Parse("8*n");
    const fs::path file = scratch_.path() / (reference + ".cc");
    std::ofstream(file) << reference;
    task.baselines["cpp"] = KernelSource{file, "cpp"};
    return task;
  }

  EvalOptions Options() {
    EvalOptions options;
    options.env = &env_;
    options.runner_exe = "/nonexistent/kope-runner";  // never started: the runners are fakes
    options.scratch_root = scratch_.path();
    options.trials = 2;
    options.timing.min_seconds = 0.02;
    options.timing.max_seconds = 0.3;
    return options;
  }

  Result<Outcome> Evaluate(const Case& c, EvalOptions options) {
    env_.Add("reference", c.reference);
    env_.Add(c.name, c.candidate);
    HardwareInfo hardware;
    hardware.bandwidth_bytes_per_s = c.bandwidth;
    FakeBackend backend(scratch_.path(), c.device, hardware);
    Evaluator evaluator(backend, std::move(options));
    return evaluator.Evaluate(MakeTask("reference"), c.name, c.name + ".cc");
  }

  FakeEnv env_;
  TempFolder scratch_;
};

TEST_F(FakeEvaluation, EveryCaseGetsItsVerdictAndFlags) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    Result<Outcome> o = Evaluate(c, Options());
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    EXPECT_EQ(VerdictName(o->verdict), c.verdict) << FormatOutcome(*o);
    if (!c.reason.empty()) {
      ASSERT_TRUE(o->mismatch.has_value()) << FormatOutcome(*o);
      EXPECT_EQ(o->mismatch->reason, c.reason) << FormatOutcome(*o);
    }
    for (const std::string& flag : c.flags) EXPECT_TRUE(o->HasFlag(flag)) << flag;
    for (const std::string& flag : c.no_flags) EXPECT_FALSE(o->HasFlag(flag)) << flag;
  }
}

TEST_F(FakeEvaluation, AMismatchNamesTheFirstWrongElement) {
  Case c{"wrong_element", Kernel([](float* x, float* y, size_t n, int k) {
           Correct(x, y, n, k);
           y[3] += 1;
         }),
         "incorrect"};
  Result<Outcome> o = Evaluate(c, Options());
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_TRUE(o->mismatch.has_value());
  EXPECT_EQ(o->mismatch->size_set, "check[0]");
  EXPECT_EQ(o->mismatch->trial, 1);
  EXPECT_EQ(o->mismatch->tensor, "y");
  EXPECT_EQ(o->mismatch->index, 3);
  EXPECT_EQ(o->mismatch->mismatches, 1);
  EXPECT_EQ(o->mismatch->elements, 7);
  EXPECT_NEAR(o->mismatch->actual - o->mismatch->expected, 1.0, 1e-5);
}

TEST_F(FakeEvaluation, TimingStopsOnceBothConvergeOrTheTimeIsUp) {
  EvalOptions options = Options();
  const TimingPolicy& policy = options.timing;
  Result<Outcome> steady = Evaluate({"steady", Kernel(Correct), "valid"}, options);
  ASSERT_TRUE(steady.ok()) << steady.status().ToString();
  ASSERT_TRUE(steady->candidate_time.has_value());
  const TimingSummary& c = *steady->candidate_time;
  // Converged: enough samples and measured time, and not a batch (20 ms) more.
  EXPECT_GE(c.samples, policy.min_samples);
  EXPECT_GE(c.measured_s, policy.min_seconds);
  EXPECT_LT(c.measured_s, policy.min_seconds + 0.021);
  EXPECT_LT(steady->phase_seconds.at("time"), policy.max_seconds);

  FakeKernel noisy = Kernel(Correct);
  noisy.jitter = 0.2;  // never converges
  Result<Outcome> unstable = Evaluate({"noisy", noisy, "valid"}, options);
  ASSERT_TRUE(unstable.ok()) << unstable.status().ToString();
  const double timed = unstable->phase_seconds.at("time");
  EXPECT_GT(timed, policy.max_seconds);
  EXPECT_LT(timed, policy.max_seconds + 0.15);  // one round of batches, the warm-up, the check
}

TEST_F(FakeEvaluation, ACompileErrorEndsTheEvaluationBeforeAnyCall) {
  Result<Outcome> o =
      Evaluate({"error: no such type", Kernel(Correct), "compile_error"}, Options());
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(VerdictName(o->verdict), "compile_error");
  EXPECT_EQ(o->message, "error: no such type");
  EXPECT_EQ(o->phase_seconds.count("verify"), 0u);
}

TEST_F(FakeEvaluation, AReferenceThatIgnoresItsInputsIsTheTasksFault) {
  // The candidate agrees with it at the check sizes; at the bench size the reference is seen
  // not to depend on its inputs.
  const FakeKernel ones = Kernel([](float*, float* y, size_t n, int) {
    for (size_t i = 0; i < n; ++i) y[i] = 1;
  });
  Case c{"ones", ones, ""};
  c.reference = ones;
  Result<Outcome> o = Evaluate(c, Options());
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("is constant"), std::string::npos) << o.status().message();
}

TEST_F(FakeEvaluation, ProgressLinesFollowTheSteps) {
  std::vector<std::string> lines;
  EvalOptions options = Options();
  options.progress = [&](std::string_view line) {
    if (lines.empty() || lines.back() != line) lines.emplace_back(line);
  };
  ASSERT_TRUE(Evaluate({"correct", Kernel(Correct), "valid"}, options).ok());
  const std::vector<std::string> expected = {"compile candidate",
                                             "start runners",
                                             "verify check[0] trial 1/2",
                                             "verify check[0] trial 2/2",
                                             "verify check[1] trial 1/2",
                                             "verify check[1] trial 2/2",
                                             "verify bench trial 1/2",
                                             "verify bench trial 2/2",
                                             "warm up",
                                             "time baseline and candidate, interleaved",
                                             "verify again after timing",
                                             "verify check[0] trial 1/2",
                                             "verify check[0] trial 2/2",
                                             "verify bench trial 1/2",
                                             "verify bench trial 2/2"};
  EXPECT_EQ(lines, expected);
}

// DecideTiming's thresholds, one row each.
struct TimingRow {
  std::string name;
  double candidate_s, baseline_s, spread, fastest_verified_s, shortest_judged_s;
  std::set<std::string> flags;
};

// An outcome timed at these medians, both with this spread.
Outcome Timed(double candidate_s, double baseline_s, double spread = 0) {
  Outcome o;
  TimingSummary c, b;
  c.median_s = candidate_s;
  b.median_s = baseline_s;
  c.spread = b.spread = spread;
  o.candidate_time = c;
  o.baseline_time = b;
  return o;
}

TEST(DecideTiming, FlagsAtTheirThresholds) {
  const std::vector<TimingRow> rows = {
      {"twice_as_fast", 1e-3, 2e-3, 0.01, 1e-3, 1e-3, {}},
      {"within_noise", 1e-3, 1.01e-3, 0.02, 1e-3, 1e-3, {"within_noise"}},
      {"unstable", 1e-3, 2e-3, 0.06, 1e-3, 1e-3, {"unstable_timing"}},
      {"below_ten_times", 1e-4, 0.99e-3, 0.01, 1e-4, 1e-3, {}},
      {"above_ten_times", 1e-4, 1.01e-3, 0.01, 1e-4, 1e-3, {"speedup_above_10x"}},
      {"timed_a_fifth_of_verified", 1e-3, 2e-3, 0.01, 5.1e-3, 1e-3, {"timed_faster_than_verified"}},
      {"timed_just_over_a_fifth", 1e-3, 2e-3, 0.01, 4.9e-3, 1e-3, {}},
      {"verified_below_the_floor", 1e-4, 2e-4, 0.01, 9e-4, 1e-3, {}},
  };
  Task task;
  SizeSet bench{"bench", {{"n", 4}}};
  for (const TimingRow& r : rows) {
    Outcome o = Timed(r.candidate_s, r.baseline_s, r.spread);
    DecideTiming(task, bench, r.fastest_verified_s, r.shortest_judged_s, o);
    EXPECT_EQ(std::set<std::string>(o.flags.begin(), o.flags.end()), r.flags) << r.name;
  }
}

// The noise rules over the interleaved rounds' speedups: a difference the rounds disagree on,
// or one within the widest spread, is noise; a spread past kNoisyMachineSpread says the machine
// was too noisy, and the report prints no speedup within twice that noise.
struct RoundsRow {
  std::string name;
  double candidate_s, baseline_s, spread;
  int rounds, faster, slower;
  double round_spread;
  std::set<std::string> flags;
};

TEST(DecideTiming, RoundsTellNoiseFromADifference) {
  const std::vector<RoundsRow> rows = {
      {"identical_on_a_loaded_machine",
       1e-3,
       0.72e-3,
       0.04,
       10,
       4,
       6,
       0.5,
       {"within_noise", "noisy_machine"}},
      {"rounds_on_both_sides", 1e-3, 0.9e-3, 0.02, 10, 2, 8, 0.05, {"within_noise"}},
      {"consistent_slowdown", 1e-3, 0.9e-3, 0.02, 10, 1, 9, 0.03, {}},
      {"consistent_small_speedup", 1e-3, 1.02e-3, 0.004, 10, 10, 0, 0.004, {}},
      {"load_between_batches",
       1e-3,
       1.3e-3,
       0.01,
       10,
       10,
       0,
       0.4,
       {"within_noise", "noisy_machine"}},
      {"speedup_beyond_the_noise",
       1e-3,
       2e-3,
       0.3,
       10,
       10,
       0,
       0.3,
       {"unstable_timing", "noisy_machine"}},
      // On a noisy machine the margin is twice the noise: identical work in two processes came
      // out at 1.76x with a spread of 67%, every round on the same side.
      {"identical_beyond_its_spread",
       1e-3,
       1.76e-3,
       0.67,
       10,
       10,
       0,
       0.3,
       {"unstable_timing", "within_noise", "noisy_machine"}},
      {"just_within_twice_the_noise",
       1e-3,
       1.59e-3,
       0.3,
       10,
       10,
       0,
       0.3,
       {"unstable_timing", "within_noise", "noisy_machine"}},
      {"just_beyond_twice_the_noise",
       1e-3,
       1.61e-3,
       0.3,
       10,
       10,
       0,
       0.3,
       {"unstable_timing", "noisy_machine"}},
  };
  Task task;
  SizeSet bench{"bench", {{"n", 4}}};
  for (const RoundsRow& r : rows) {
    Outcome o = Timed(r.candidate_s, r.baseline_s, r.spread);
    o.round_speedups =
        RoundSpeedups{r.rounds, r.faster, r.slower, r.baseline_s / r.candidate_s, r.round_spread};
    DecideTiming(task, bench, r.candidate_s, 1.0, o);
    EXPECT_EQ(std::set<std::string>(o.flags.begin(), o.flags.end()), r.flags) << r.name;
    const bool too_noisy = o.HasFlag(kFlagNoisyMachine) && o.HasFlag(kFlagWithinNoise);
    EXPECT_EQ(FormatOutcome(o).find("too noisy to time") != std::string::npos, too_noisy)
        << r.name << "\n"
        << FormatOutcome(o);
  }
}

// A ModelNew's speedup is the one the parent's clock allows: a timer that reports a sixth less
// leaves a fifth of its time unexplained in every pair, and then claims no speedup, even where
// its batches are too delayed for timing_mismatch; an honest candidate's pairs keep it.
struct ClockRow {
  std::string name;
  double candidate_s, baseline_s;
  std::vector<double> shares;
  double speedup;  // expected
  bool bounded;
};

TEST(DecideTiming, AModelNewsSpeedupIsTheOneTheParentsClockAllows) {
  const std::vector<ClockRow> rows = {
      {"honest", 1e-3, 2e-3, {-0.01, 0.002, 0.03, -0.004}, 2.0, false},
      {"fake_1_2_on_a_busy_machine", 1e-3, 1.2e-3, {0.21, 0.35, 0.2, 0.6}, 1.0, true},
      {"honest_on_a_busy_machine", 1e-3, 2e-3, {0.1, 0.3, 0.25, 0.12}, 2.0 / 1.1, true},
      {"no_pairs", 1e-3, 2e-3, {}, 2.0, false},
      {"within_the_clocks_resolution", 1e-3, 2e-3, {0.004, 0.02, 0.01, 0.03}, 2.0, false},
  };
  Task task;
  SizeSet bench{"bench", {{"n", 4}}};
  for (const ClockRow& r : rows) {
    Outcome o = Timed(r.candidate_s, r.baseline_s);
    o.clock_check = ClockCheck{r.shares, 100, 0};
    DecideTiming(task, bench, r.candidate_s, 1.0, o);
    EXPECT_NEAR(o.speedup, r.speedup, 1e-9) << r.name;
    EXPECT_EQ(o.HasFlag(kFlagClockBounded), r.bounded) << r.name;
    EXPECT_EQ(FormatOutcome(o).find("bounded by the parent's clock") != std::string::npos,
              r.bounded)
        << r.name << "\n"
        << FormatOutcome(o);
  }
}

TEST(SummarizeRounds, PairsBatchesByRound) {
  std::optional<RoundSpeedups> r = SummarizeRounds({2.0, 2.0, 1.0, 9.0}, {1.0, 4.0, 1.0});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rounds, 3);
  EXPECT_EQ(r->faster, 1);
  EXPECT_EQ(r->slower, 1);
  EXPECT_DOUBLE_EQ(r->median, 1.0);
  EXPECT_FALSE(SummarizeRounds({}, {1.0}).has_value());
}

}  // namespace
}  // namespace kope
