// The pack manifest as shipped, and role binding and adapters as data: which task fits which
// kernel interface, in which order, with which attribute values.
#include "kope/pack/adapter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kope/pack/manifest.h"
#include "testing/test_paths.h"

namespace kope::pack {
namespace {

namespace fs = std::filesystem;

fs::path Source() { return fs::path(kope::testing::SourceDir()); }

KernelSpec RmsNormSpec() {
  KernelSpec s;
  s.pack = "test";
  s.name = "rmsnorm_test";
  s.op = "rmsnorm";
  s.family = "norm";
  s.language = "cpp";
  s.inputs = {{"x", {"...", "d"}, {"f32"}}, {"weight", {"d"}, {"f32"}}};
  s.outputs = {{"y", {"...", "d"}, {"f32"}}};
  s.attributes = {{"eps", 1e-6}};
  return s;
}

TEST(ManifestTest, TheShippedPackLoads) {
  auto pack = LoadPackSource(Source() / "packs/llm-inference");
  ASSERT_TRUE(pack.ok()) << pack.status().ToString();
  EXPECT_EQ(pack->name, "llm-inference");
  ASSERT_FALSE(pack->kernels.empty());
  for (const PackKernel& k : pack->kernels) {
    EXPECT_TRUE(fs::exists(k.source)) << k.spec.name;
    EXPECT_FALSE(k.tasks.empty()) << k.spec.name;
    EXPECT_FALSE(k.spec.inputs.empty()) << k.spec.name;
    // Every attribute the family declares is marked in the kernel's source.
    auto text = ParseKernelSpec(KernelSpecJson(k.spec));
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    EXPECT_EQ(text->attributes, k.spec.attributes);
  }
}

TEST(ManifestTest, AMistakeNamesTheField) {
  const fs::path dir =
      fs::temp_directory_path() / ("kope-pack-manifest-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::pair<std::string, std::string> cases[] = {
      {"name = \"p\"\nfamilies = 3\n", "families: expected at least one"},
      {"name = \"p\"\nfamlies = 1\n", "famlies: unknown key"},
      {"name = \"p\"\n[[families]]\nname = \"a\"\nfamily = \"norm\"\ntasks = [\"t\"]\n"
       "inputs = [{ role = \"x\", shape = [\"d\"] }]\noutputs = [{ role = \"y\", shape = [\"d\"] "
       "}]\n",
       "families[0].tasks: 't' does not exist"},
      {"name = \"p\"\n[[families]]\nname = \"a\"\nfamily = \"norm\"\ntasks = [\".\"]\n"
       "inputs = [{ role = \"x\", shape = [\"d\", \"...\"] }]\n",
       "families[0].inputs[0].shape: '...' may only come first"},
  };
  for (const auto& [text, expected] : cases) {
    std::ofstream(dir / "pack.toml") << text;
    auto pack = LoadPackSource(dir);
    ASSERT_FALSE(pack.ok()) << text;
    EXPECT_NE(pack.status().message().find(expected), std::string::npos) << pack.status().message();
  }
  fs::remove_all(dir);
}

TEST(AdapterTest, BindsRolesAcrossOrderAndRankAndReadsTheAttribute) {
  auto task = LoadTask(Source() / "src/pack/testdata/tasks/rms_weight_first");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  auto binding = BindRoles(RmsNormSpec(), *task);
  ASSERT_TRUE(binding.ok()) << binding.status().ToString();
  ASSERT_TRUE(binding->has_value());
  EXPECT_EQ((*binding)->inputs, (std::vector<int>{1, 0}));  // x is the task's input 1
  EXPECT_EQ((*binding)->outputs, (std::vector<int>{0}));
  EXPECT_FALSE((*binding)->identity);
  EXPECT_DOUBLE_EQ((*binding)->attributes.at("eps"), 1e-5);  // from the baseline's source

  const std::string kernel =
      "#include \"kope/kernel.h\"\nconstexpr float kEps = 1e-6f;  // kope:attr eps\n"
      "extern \"C\" int kope_kernel(const kope_tensor*, int, kope_tensor*, int, void*) "
      "{ return 0; }\n";
  const std::string adapted = AdapterSource(RmsNormSpec(), kernel, **binding, task->name);
  EXPECT_NE(adapted.find("constexpr float kEps = 1e-05f;  // kope:attr eps"), std::string::npos)
      << adapted;
  EXPECT_NE(adapted.find("const kope_tensor in[2] = {inputs[1], inputs[0]};"), std::string::npos)
      << adapted;
  EXPECT_DOUBLE_EQ(MarkedAttributes(adapted).at("eps"), 1e-5);
}

TEST(AdapterTest, AKernelThatDoesNotFitIsNoCandidate) {
  auto task = LoadTask(Source() / "src/pack/testdata/tasks/rms_weight_first");
  ASSERT_TRUE(task.ok());
  struct Case {
    const char* what;
    KernelSpec spec;
  };
  KernelSpec three = RmsNormSpec();
  three.inputs.push_back({"bias", {"d"}, {}});
  KernelSpec bf16 = RmsNormSpec();
  bf16.inputs[0].dtypes = {"bf16"};
  KernelSpec other_dim = RmsNormSpec();
  other_dim.inputs[1].shape = {"e"};
  other_dim.outputs[0].shape = {"...", "e", "e"};
  for (const Case& c : {Case{"three inputs", three}, Case{"another dtype", bf16},
                        Case{"shapes that disagree", other_dim}}) {
    auto adapted = AdaptKernel(c.spec, "", *task);
    ASSERT_TRUE(adapted.ok()) << adapted.status().ToString();
    EXPECT_FALSE(adapted->has_value()) << c.what;
  }
}

}  // namespace
}  // namespace kope::pack
