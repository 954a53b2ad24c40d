#include "kope/memory/evidence.h"

#include <gtest/gtest.h>

namespace kope::memory {
namespace {

TEST(EvidenceTest, WilsonLowerBoundKnownValues) {
  EXPECT_EQ(WilsonLowerBound(0, 0), 0.0);
  EXPECT_NEAR(WilsonLowerBound(1, 1), 0.2065, 1e-4);
  EXPECT_NEAR(WilsonLowerBound(10, 10), 0.7225, 1e-4);
  EXPECT_NEAR(WilsonLowerBound(5, 10), 0.2366, 1e-4);
  EXPECT_EQ(WilsonLowerBound(0, 10), 0.0);
}

TEST(EvidenceTest, TenConsistentOutrankOneLucky) {
  InsightNode lucky;
  lucky.support = 1;
  lucky.effect_size = 2.0;
  InsightNode consistent;
  consistent.support = 10;
  consistent.effect_size = 1.3;
  EXPECT_GT(InsightEvidence(consistent), InsightEvidence(lucky));
  InsightNode contradicted = consistent;
  contradicted.contradiction = 10;
  EXPECT_LT(InsightEvidence(contradicted), InsightEvidence(consistent));
  EXPECT_EQ(InsightEvidence(InsightNode()), 0.0);
}

TEST(EvidenceTest, ScopeWeights) {
  InsightQuery q;
  q.op_family = "softmax";
  q.backend = "cuda";
  q.device = "NVIDIA H100";
  q.arch = "sm_90";
  q.size = 1e5;
  InsightScope s;
  s.op_family = "softmax";
  s.backend = "cuda";
  s.device = "NVIDIA H100";
  s.arch = "sm_90";
  s.size_min = 1e4;
  s.size_max = 1e6;
  EXPECT_DOUBLE_EQ(ScopeWeight(s, q), 1.0);
  InsightScope same_arch = s;
  same_arch.device = "NVIDIA H200";
  EXPECT_DOUBLE_EQ(ScopeWeight(same_arch, q), 0.8);
  InsightScope other_arch = s;
  other_arch.device = "NVIDIA A100";
  other_arch.arch = "sm_80";
  EXPECT_DOUBLE_EQ(ScopeWeight(other_arch, q), 0.4);
  InsightScope general = s;
  general.op_family = "";
  EXPECT_DOUBLE_EQ(ScopeWeight(general, q), 0.7);
  InsightScope other_family = s;
  other_family.op_family = "matmul";
  EXPECT_EQ(ScopeWeight(other_family, q), 0.0);
  InsightScope cpu = s;
  cpu.backend = "cpu";
  EXPECT_EQ(ScopeWeight(cpu, q), 0.0);
  InsightScope small = s;
  small.size_max = 1e4;  // one decade below the query's size
  EXPECT_DOUBLE_EQ(ScopeWeight(small, q), 0.5);
  InsightScope compiler = s;
  compiler.compiler = "nvcc 11.8";
  q.compiler = "nvcc 12.4";
  EXPECT_DOUBLE_EQ(ScopeWeight(compiler, q), 0.9);
}

}  // namespace
}  // namespace kope::memory
