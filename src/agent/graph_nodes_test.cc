// IsSuspicious: the flags that keep an outcome from ever being the best kernel.
#include "kope/agent/graph_nodes.h"

#include <gtest/gtest.h>

#include <string>

namespace kope::agent {
namespace {

Outcome Flagged(std::string_view flag, std::string policy = "screen") {
  Outcome o;
  o.flags.emplace_back(flag);
  o.timing_policy = std::move(policy);
  return o;
}

TEST(GraphNodesTest, WhatPhysicsOrTheChecksRuleOutIsSuspicious) {
  EXPECT_TRUE(IsSuspicious(Flagged(kFlagFasterThanRoofline)));
  // Timed calls that skip the work their verified calls do.
  EXPECT_TRUE(IsSuspicious(Flagged(kFlagTimedFasterThanVerified)));
  // The wall clock disagreeing: only when confirming (a busy machine trips it when screening).
  EXPECT_FALSE(IsSuspicious(Flagged(kFlagWallClockMismatch)));
  EXPECT_TRUE(IsSuspicious(Flagged(kFlagWallClockMismatch, "confirm")));
  // Evidence, not suspicion.
  EXPECT_FALSE(IsSuspicious(Flagged(kFlagSpeedupAbove10x)));
  EXPECT_FALSE(IsSuspicious(Flagged(kFlagWithinNoise)));
  EXPECT_FALSE(IsSuspicious(Outcome{}));
}

}  // namespace
}  // namespace kope::agent
