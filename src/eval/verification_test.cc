#include <gtest/gtest.h>

#include "session.h"

namespace kope {
namespace {

Task TwoInputs() {
  Task task;
  task.name = "kb_sum";
  TensorSpec x;
  x.name = "x";
  x.dtype = KOPE_F32;
  x.distributions = {Distribution{}};
  TensorSpec y = x;
  y.name = "y";
  task.inputs = {x, y};
  return task;
}

TEST(DependenceKey, EqualForEqualInputsAndSizes) {
  SizeSet bench{"bench", {{"n", 4096}}};
  EXPECT_EQ(DependenceKey(TwoInputs(), bench), DependenceKey(TwoInputs(), bench));
}

TEST(DependenceKey, DiffersWithAnyDtypeLawSizeOrName) {
  // Two tasks of one problem file may share a reference process: one whose reference depends
  // on its inputs says nothing about the other's.
  const SizeSet bench{"bench", {{"n", 4096}}};
  const std::string base = DependenceKey(TwoInputs(), bench);
  Task half = TwoInputs();
  half.inputs[1].dtype = KOPE_F16;
  Task ties = TwoInputs();
  ties.inputs[0].distributions[0].kind = Distribution::Kind::kTies;
  Task wider = TwoInputs();
  wider.inputs[0].distributions[0].stddev = 2.0;
  Task more_laws = TwoInputs();
  more_laws.inputs[1].distributions.push_back(Distribution{});
  Task renamed = TwoInputs();
  renamed.name = "kb_sum_f16";
  for (const Task* other : {&half, &ties, &wider, &more_laws, &renamed}) {
    EXPECT_NE(DependenceKey(*other, bench), base) << other->name;
  }
  EXPECT_NE(DependenceKey(TwoInputs(), SizeSet{"bench", {{"n", 4097}}}), base);
}

TEST(TrialDistribution, AtTheSizesOfItsSet) {
  TensorSpec w;
  w.name = "w";
  w.dtype = KOPE_F32;
  Distribution scaled;
  scaled.kind = Distribution::Kind::kUniform;
  scaled.low = -1.0;
  scaled.high = 1.0;
  scaled.fan_in = *Expr::Parse("n");
  w.distributions = {scaled, Distribution{}};
  const SizeSet small{"check[0]", {{"n", 4}}};
  const SizeSet large{"bench", {{"n", 4096}}};
  Result<Distribution> d = TrialDistribution(w, 0, small);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_DOUBLE_EQ(d->high, 0.5);
  d = TrialDistribution(w, 2, large);  // trials cycle through the laws
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(d->low, -1.0 / 64);
  d = TrialDistribution(w, 1, large);
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(d->stddev, 1.0);

  Task task = TwoInputs();
  Task fanned = TwoInputs();
  fanned.inputs[0].distributions[0].fan_in = *Expr::Parse("n");
  EXPECT_NE(DependenceKey(fanned, large), DependenceKey(task, large));
}

TEST(CandidateTimeout, TheLimitOrFiveTimesTheSlowestReferenceCall) {
  const Task task = TwoInputs();
  EvalOptions options;
  options.call_timeout_seconds = 10;
  EvalSession s(task, options, "cpp");
  const SizeSet bench{"bench", {{"n", 4096}}};
  const SizeSet check{"check[0]", {{"n", 7}}};
  EXPECT_DOUBLE_EQ(s.CandidateTimeout(bench), 10);  // no reference call yet
  s.slowest_reference_s["bench"] = 4;
  s.slowest_reference_s["check[0]"] = 0.5;
  EXPECT_DOUBLE_EQ(s.CandidateTimeout(bench), 20);
  EXPECT_DOUBLE_EQ(s.CandidateTimeout(check), 10);
}

TEST(CallsTwicePerTrial, ExceptABridgeCandidateAtTheBenchSize) {
  // A bridge candidate's outputs are copied whole: at the bench size its second call on the
  // same inputs (another poison) is left out; at every check size it is made.
  Task task = TwoInputs();
  task.checks = {SizeSet{"check[0]", {{"n", 64}}}, SizeSet{"check[1]", {{"n", 100}}}};
  task.bench = SizeSet{"bench", {{"n", 4096}}};
  const EvalOptions options;
  EvalSession native(task, options, "cuda");
  native.UseCheckSite(/*in_reference=*/false);
  EvalSession bridged(task, options, "cuda");
  bridged.UseCheckSite(/*in_reference=*/true);
  for (const SizeSet& set : SizeSetsFor(task, "cuda")) {
    EXPECT_TRUE(native.CallsTwicePerTrial(set)) << set.label;
    EXPECT_EQ(bridged.CallsTwicePerTrial(set), set.label != "bench") << set.label;
  }
}

}  // namespace
}  // namespace kope
