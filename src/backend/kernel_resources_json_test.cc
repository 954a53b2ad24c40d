// The resource report's JSON: its bytes (the compile cache keeps them across versions of kope)
// and the reading back of what it wrote, of older reports and of broken ones.
#include "kope/backend/kernel_resources_json.h"

#include <gtest/gtest.h>

namespace kope {
namespace {

KernelResources Scale() {
  KernelResources r;
  r.function = "scale(float const*, float*, long)";
  r.arch = "sm_90a";
  r.registers = 16;
  r.shared_bytes = 1024;
  r.constant_bytes = 380;
  r.stack_bytes = 8;
  r.spill_store_bytes = 4;
  r.spill_load_bytes = 2;
  return r;
}

TEST(KernelResourcesJsonTest, WritesOneObjectPerFunction) {
  EXPECT_EQ(KernelResourcesToJson({}), "[]");
  EXPECT_EQ(KernelResourcesToJson({Scale()}),
            R"j([{"arch":"sm_90a","constant_bytes":380,"function":"scale(float const*, float*, )j"
            R"j(long)","registers":16,"shared_bytes":1024,"spill_load_bytes":2,)j"
            R"j("spill_store_bytes":4,"stack_bytes":8}])j");
}

TEST(KernelResourcesJsonTest, ReadsBackWhatItWrote) {
  KernelResources other = Scale();
  other.function = "add";
  other.registers = 40;
  const std::vector<KernelResources> read =
      KernelResourcesFromJson(KernelResourcesToJson({Scale(), other}));
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].function, "scale(float const*, float*, long)");
  EXPECT_EQ(read[0].arch, "sm_90a");
  EXPECT_EQ(read[0].registers, 16);
  EXPECT_EQ(read[0].shared_bytes, 1024);
  EXPECT_EQ(read[0].constant_bytes, 380);
  EXPECT_EQ(read[0].stack_bytes, 8);
  EXPECT_EQ(read[0].spill_store_bytes, 4);
  EXPECT_EQ(read[0].spill_load_bytes, 2);
  EXPECT_EQ(read[1].function, "add");
  EXPECT_EQ(read[1].registers, 40);
}

TEST(KernelResourcesJsonTest, AbsentFieldsAreZeroAndBrokenReportsEmpty) {
  const std::vector<KernelResources> partial =
      KernelResourcesFromJson(R"([{"function":"f","registers":3}, 7])");
  ASSERT_EQ(partial.size(), 1u);
  EXPECT_EQ(partial[0].function, "f");
  EXPECT_EQ(partial[0].registers, 3);
  EXPECT_EQ(partial[0].arch, "");
  EXPECT_EQ(partial[0].shared_bytes, 0);
  for (const char* broken : {"", "{}", "not json", R"([{"registers":"many"}])"}) {
    EXPECT_TRUE(KernelResourcesFromJson(broken).empty()) << broken;
  }
}

}  // namespace
}  // namespace kope
