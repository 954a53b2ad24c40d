#include "kope/memory/model.h"

#include <gtest/gtest.h>

namespace kope::memory {
namespace {

TEST(ModelTest, NodeRefsParseAndFormat) {
  auto full = ParseNodeRef("insight:12");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(*full, (NodeRef{NodeKind::kInsight, 12}));
  EXPECT_EQ(FormatNodeRef(*full), "insight:12");
  EXPECT_EQ(*ParseNodeRef("t3"), (NodeRef{NodeKind::kTask, 3}));
  EXPECT_EQ(*ParseNodeRef("hw:2"), (NodeRef{NodeKind::kHardware, 2}));
  EXPECT_EQ(*ParseNodeRef("42"), (NodeRef{NodeKind::kAttempt, 42}));
  for (const char* bad : {"", "attempt:", "attempt:x", "thing:1", "0", "-3", "a1x", "z9"}) {
    auto r = ParseNodeRef(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(ModelTest, KeysAreContentDerived) {
  EXPECT_EQ(TaskKey("softmax", "abc"), TaskKey("softmax", "abc"));
  EXPECT_NE(TaskKey("softmax", "abc"), TaskKey("softmax", "abd"));
  EXPECT_NE(TaskKey("ab", "c"), TaskKey("a", "bc"));
  EXPECT_TRUE(IsValidKey(TaskKey("x", "")));
  EXPECT_FALSE(IsValidKey("ABCDEF0123456789ABCDEF0123456789"));
  EXPECT_FALSE(IsValidKey("abc"));
  InsightScope scope;
  scope.op_family = "softmax";
  EXPECT_EQ(InsightKey("lesson", scope, {"simd"}, "t"), InsightKey("lesson", scope, {"simd"}, "t"));
  InsightScope bigger = scope;
  bigger.size_max = 10;
  EXPECT_NE(InsightKey("lesson", scope, {"simd"}, "t"),
            InsightKey("lesson", bigger, {"simd"}, "t"));
  EXPECT_NE(NewRunKey("a", "b", 1), NewRunKey("a", "b", 1));
}

TEST(ModelTest, Verdicts) {
  for (const char* v :
       {"compile_error", "runtime_error", "crash", "timeout", "incorrect", "valid"}) {
    EXPECT_TRUE(IsKnownVerdict(v)) << v;
  }
  EXPECT_FALSE(IsKnownVerdict("ok"));
  EXPECT_FALSE(IsKnownVerdict("Valid"));
}

}  // namespace
}  // namespace kope::memory
