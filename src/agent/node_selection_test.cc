#include "kope/agent/node_selection.h"

#include <gtest/gtest.h>

namespace kope::agent {
namespace {

NodeArm Arm(memory::NodeId id, double speedup, int expansions = 0, double gains = 0) {
  NodeArm arm;
  arm.id = id;
  arm.speedup = speedup;
  arm.expansions = expansions;
  arm.gain_sum = gains;
  return arm;
}

TEST(NodeSelectionTest, StartsFreshWhenThereIsNoNode) {
  SelectionInput in;
  in.fresh_available = true;
  EXPECT_EQ(SelectNode(in).kind, Selection::Kind::kFresh);
  in.fresh_available = false;
  EXPECT_EQ(SelectNode(in).kind, Selection::Kind::kNone);
}

TEST(NodeSelectionTest, RefinesTheBestWhileItPays) {
  SelectionInput in;
  in.fresh_available = true;
  in.fresh_starts = 1;
  in.fresh_gain_sum = 1;
  in.nodes = {Arm(1, 1.0, 1, 0.8), Arm(2, 1.8, 0), Arm(3, 1.2, 0)};
  Selection s = SelectNode(in);
  EXPECT_EQ(s.kind, Selection::Kind::kNode);
  EXPECT_EQ(s.node, 2);
}

TEST(NodeSelectionTest, BranchesWhenTheBestKeepsFailing) {
  SelectionInput in;
  in.nodes = {Arm(1, 2.0, 8, 0.0), Arm(2, 1.7, 0)};
  EXPECT_EQ(SelectNode(in).node, 2);
  // A much slower branch is not worth it yet.
  in.nodes = {Arm(1, 2.0, 8, 0.0), Arm(2, 0.6, 0)};
  EXPECT_EQ(SelectNode(in).node, 1);
}

TEST(NodeSelectionTest, SkipsExhaustedAndFailedNodes) {
  SelectionInput in;
  in.nodes = {Arm(1, 3.0), Arm(2, 1.0), Arm(3, 0.0)};
  in.nodes[0].exhausted = true;
  EXPECT_EQ(SelectNode(in).node, 2);
  in.nodes[1].exhausted = true;
  EXPECT_EQ(SelectNode(in).kind, Selection::Kind::kNone);
  in.fresh_available = true;
  EXPECT_EQ(SelectNode(in).kind, Selection::Kind::kFresh);
}

TEST(NodeSelectionTest, TiesGoToTheLowerId) {
  SelectionInput in;
  in.nodes = {Arm(7, 1.5), Arm(4, 1.5), Arm(9, 1.5)};
  EXPECT_EQ(SelectNode(in).node, 4);
}

TEST(NodeSelectionTest, FreshStartWinsWhenExpansionsStopPaying) {
  SelectionInput in;
  in.fresh_available = true;
  in.fresh_starts = 1;
  in.fresh_gain_sum = 1;
  // Expanding the node has paid: keep at it.
  in.nodes = {Arm(1, 1.0, 2, 0.5)};
  EXPECT_EQ(SelectNode(in).kind, Selection::Kind::kNode);
  // Thirty expansions gained nothing while fresh starts did well: start afresh.
  in.fresh_starts = 2;
  in.fresh_gain_sum = 2;
  in.nodes = {Arm(1, 1.0, 30, 0.0)};
  EXPECT_EQ(SelectNode(in).kind, Selection::Kind::kFresh);
}

TEST(NodeSelectionTest, ChildGainIsClipped) {
  EXPECT_DOUBLE_EQ(ChildGain(1.0, 1.5), 0.5);
  EXPECT_DOUBLE_EQ(ChildGain(1.0, 5.0), 1.0);
  EXPECT_DOUBLE_EQ(ChildGain(2.0, 1.0), 0.0);
  EXPECT_DOUBLE_EQ(ChildGain(0.0, 1.0), 0.0);
}

}  // namespace
}  // namespace kope::agent
