#include "kope/task/task.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "kope/base/file.h"
#include "scratch_folder.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

const fs::path kTestdata = fs::path(kope::testing::SourceDir()) / "src/task/testdata";

using Kind = Distribution::Kind;

std::vector<std::string> ShapeTexts(const TensorSpec& spec) {
  std::vector<std::string> texts;
  for (const Expr& e : spec.shape) texts.push_back(e.text());
  return texts;
}

std::vector<Kind> Kinds(const TensorSpec& spec) {
  std::vector<Kind> kinds;
  for (const Distribution& d : spec.distributions) kinds.push_back(d.kind);
  return kinds;
}

class SoftmaxTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Task> loaded = LoadTask(kTestdata / "valid/softmax_rows");
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    task_ = *loaded;
  }
  Task task_;
};

TEST_F(SoftmaxTaskTest, LoadsTopLevelFields) {
  EXPECT_EQ(task_.name, "softmax_rows");
  EXPECT_EQ(task_.family, "softmax");
  EXPECT_EQ(task_.description, "Row-wise softmax of an f32 matrix");
  EXPECT_TRUE(task_.dir.is_absolute());
  EXPECT_EQ(task_.dir, fs::canonical(kTestdata / "valid/softmax_rows"));
}

TEST_F(SoftmaxTaskTest, LoadsTensorsInOrder) {
  ASSERT_EQ(task_.inputs.size(), 5u);
  ASSERT_EQ(task_.outputs.size(), 2u);
  EXPECT_EQ(task_.inputs[0].name, "x");
  EXPECT_EQ(task_.inputs[0].dtype, KOPE_F32);
  EXPECT_EQ(ShapeTexts(task_.inputs[0]), (std::vector<std::string>{"rows", "cols"}));
  EXPECT_EQ(task_.inputs[1].name, "scale");
  EXPECT_EQ(task_.inputs[1].dtype, KOPE_BF16);
  EXPECT_EQ(ShapeTexts(task_.inputs[1]), (std::vector<std::string>{"1"}));
  EXPECT_EQ(task_.inputs[2].dtype, KOPE_I32);
  EXPECT_EQ(task_.inputs[3].dtype, KOPE_I64);
  EXPECT_EQ(ShapeTexts(task_.inputs[3]), (std::vector<std::string>{"cdiv(cols, 64)"}));
  EXPECT_EQ(task_.inputs[4].dtype, KOPE_F16);
  EXPECT_EQ(task_.outputs[0].name, "y");
  EXPECT_EQ(task_.outputs[1].name, "row_max");
  EXPECT_EQ(task_.outputs[1].dtype, KOPE_F64);
  EXPECT_TRUE(task_.outputs[0].distributions.empty());
}

TEST_F(SoftmaxTaskTest, LoadsDistributions) {
  const TensorSpec& x = task_.inputs[0];
  EXPECT_EQ(Kinds(x), (std::vector<Kind>{Kind::kNormal, Kind::kWide, Kind::kPositive}));
  EXPECT_EQ(x.distributions[0].mean, 0.0);
  EXPECT_EQ(x.distributions[0].stddev, 1.0);
  EXPECT_EQ(x.distributions[1].low_exp, -6.0);
  EXPECT_EQ(x.distributions[1].high_exp, 6.0);
  EXPECT_EQ(x.distributions[2].low, 0.5);
  EXPECT_EQ(x.distributions[2].high, 4.0);  // a TOML integer, read as a number

  const TensorSpec& scale = task_.inputs[1];
  ASSERT_EQ(Kinds(scale), (std::vector<Kind>{Kind::kUniform}));
  EXPECT_EQ(scale.distributions[0].low, -1.0);
  EXPECT_EQ(scale.distributions[0].high, 1.0);

  // No distribution on an integer input: uniform [0, 100).
  const TensorSpec& row_ids = task_.inputs[2];
  ASSERT_EQ(Kinds(row_ids), (std::vector<Kind>{Kind::kUniform}));
  EXPECT_EQ(row_ids.distributions[0].low, 0.0);
  EXPECT_EQ(row_ids.distributions[0].high, 100.0);

  const TensorSpec& mask = task_.inputs[3];
  ASSERT_EQ(Kinds(mask), (std::vector<Kind>{Kind::kUniform, Kind::kUniform}));
  EXPECT_EQ(mask.distributions[0].low, -5.0);
  EXPECT_EQ(mask.distributions[0].high, 5.0);
  EXPECT_EQ(mask.distributions[1].low, 0.0);  // the integer default range
  EXPECT_EQ(mask.distributions[1].high, 100.0);

  const TensorSpec& bias = task_.inputs[4];
  ASSERT_EQ(Kinds(bias),
            (std::vector<Kind>{Kind::kWide, Kind::kNormal, Kind::kNegative, Kind::kTies}));
  EXPECT_EQ(bias.distributions[0].high_exp, 4.0);  // the f16 default keeps 10^u finite
  EXPECT_EQ(bias.distributions[1].mean, 1.0);
  EXPECT_EQ(bias.distributions[1].stddev, 0.25);
  EXPECT_EQ(bias.distributions[3].num_distinct, 8);
}

TEST_F(SoftmaxTaskTest, LoadsSizeSets) {
  EXPECT_EQ(task_.bench.label, "bench");
  EXPECT_EQ(task_.bench.sizes, (std::map<std::string, int64_t>{{"rows", 4096}, {"cols", 1024}}));
  ASSERT_EQ(task_.checks.size(), 3u);
  EXPECT_EQ(task_.checks[1].label, "check[1]");
  EXPECT_EQ(task_.checks[1].sizes, (std::map<std::string, int64_t>{{"rows", 7}, {"cols", 33}}));

  std::vector<SizeSet> all = AllSizeSets(task_);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].label, "check[0]");
  EXPECT_EQ(all[2].label, "check[2]");
  EXPECT_EQ(all[3].label, "bench");
  EXPECT_EQ(all[3].sizes.at("rows"), 4096);
}

TEST_F(SoftmaxTaskTest, LoadsSourcesAndRoofline) {
  ASSERT_EQ(task_.baselines.size(), 1u);
  const KernelSource& baseline = task_.baselines.at("cpp");
  EXPECT_EQ(baseline.language, "cpp");
  EXPECT_EQ(baseline.path, task_.dir / "baseline.cc");
  ASSERT_EQ(task_.references.size(), 1u);
  EXPECT_EQ(task_.references.at("cpp").path, task_.dir / "kernels/reference.cc");
  ASSERT_TRUE(task_.bytes.has_value());
  ASSERT_TRUE(task_.flops.has_value());
  EXPECT_EQ(*task_.bytes->Evaluate(task_.bench.sizes), int64_t{4} * 4096 * 1024 * 2);
  EXPECT_EQ(*task_.flops->Evaluate(task_.checks[1].sizes), 5 * 7 * 33);
}

TEST_F(SoftmaxTaskTest, ResolvesShapes) {
  Result<std::vector<int64_t>> x = ResolveShape(task_.inputs[0], task_.checks[1]);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_EQ(*x, (std::vector<int64_t>{7, 33}));
  Result<std::vector<int64_t>> mask = ResolveShape(task_.inputs[3], task_.bench);
  ASSERT_TRUE(mask.ok());
  EXPECT_EQ(*mask, (std::vector<int64_t>{16}));
  Result<std::vector<int64_t>> mask_small = ResolveShape(task_.inputs[3], task_.checks[1]);
  ASSERT_TRUE(mask_small.ok());
  EXPECT_EQ(*mask_small, (std::vector<int64_t>{1}));
}

TEST_F(SoftmaxTaskTest, ResolvesTolerance) {
  // Explicit atol wins; rtol is the f32 default scaled by sqrt(cols).
  Result<Tolerance> t = ResolveTolerance(task_.tolerance, KOPE_F32, task_.checks[1]);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_DOUBLE_EQ(t->rtol, 1e-5 * std::sqrt(33.0));
  EXPECT_EQ(t->atol, 1e-6);
  Result<Tolerance> f64 = ResolveTolerance(task_.tolerance, KOPE_F64, task_.bench);
  ASSERT_TRUE(f64.ok());
  EXPECT_DOUBLE_EQ(f64->rtol, 1e-12 * 32.0);
}

TEST(ResolveToleranceTest, DefaultsByDtype) {
  const SizeSet sizes{"check[0]", {{"k", 100}}};
  const ToleranceSpec none;
  struct Case {
    DType dtype;
    double expected;
  };
  for (const Case& c : {Case{KOPE_F32, 1e-5}, Case{KOPE_F64, 1e-12}, Case{KOPE_F16, 1e-3},
                        Case{KOPE_BF16, 1.6e-2}, Case{KOPE_I32, 0.0}, Case{KOPE_I64, 0.0}}) {
    Result<Tolerance> t = ResolveTolerance(none, c.dtype, sizes);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->rtol, c.expected) << DTypeName(c.dtype);
    EXPECT_EQ(t->atol, c.expected) << DTypeName(c.dtype);
  }
}

TEST(ResolveToleranceTest, ReductionScalesOnlyDefaults) {
  const SizeSet sizes{"check[0]", {{"k", 100}}};
  ToleranceSpec spec;
  spec.reduction = *Expr::Parse("k");
  Result<Tolerance> scaled = ResolveTolerance(spec, KOPE_F16, sizes);
  ASSERT_TRUE(scaled.ok());
  EXPECT_DOUBLE_EQ(scaled->rtol, 1e-2);
  EXPECT_DOUBLE_EQ(scaled->atol, 1e-2);

  spec.rtol = 0.5;
  Result<Tolerance> explicit_rtol = ResolveTolerance(spec, KOPE_F16, sizes);
  ASSERT_TRUE(explicit_rtol.ok());
  EXPECT_EQ(explicit_rtol->rtol, 0.5);
  EXPECT_DOUBLE_EQ(explicit_rtol->atol, 1e-2);

  spec.atol = 0.0;
  Result<Tolerance> explicit_both = ResolveTolerance(spec, KOPE_F16, sizes);
  ASSERT_TRUE(explicit_both.ok());
  EXPECT_EQ(explicit_both->atol, 0.0);

  // Integers are exact whatever the task says.
  Result<Tolerance> ints = ResolveTolerance(spec, KOPE_I32, sizes);
  ASSERT_TRUE(ints.ok());
  EXPECT_EQ(ints->rtol, 0.0);
  EXPECT_EQ(ints->atol, 0.0);
}

TEST(ResolveToleranceTest, BadReductionIsAnError) {
  ToleranceSpec spec;
  spec.reduction = *Expr::Parse("k - 100");
  Result<Tolerance> zero = ResolveTolerance(spec, KOPE_F32, {"check[3]", {{"k", 100}}});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("check[3]"), std::string::npos);
  spec.reduction = *Expr::Parse("m");
  EXPECT_FALSE(ResolveTolerance(spec, KOPE_F32, {"bench", {{"k", 1}}}).ok());
}

TEST(ResolveShapeTest, ErrorsNameTheTensorAndSet) {
  TensorSpec spec;
  spec.name = "w";
  spec.shape = {*Expr::Parse("H - KH + 1"), *Expr::Parse("C")};
  Result<std::vector<int64_t>> ok = ResolveShape(spec, {"bench", {{"H", 9}, {"KH", 3}, {"C", 2}}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (std::vector<int64_t>{7, 2}));

  Result<std::vector<int64_t>> zero =
      ResolveShape(spec, {"check[1]", {{"H", 2}, {"KH", 3}, {"C", 2}}});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(),
            "'w' dimension 0 at check[1]: 'H - KH + 1' is 0; it must be >= 1");

  Result<std::vector<int64_t>> missing = ResolveShape(spec, {"check[0]", {{"H", 9}, {"KH", 3}}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("unknown size 'C'"), std::string::npos);

  TensorSpec scalar;
  scalar.name = "s";
  Result<std::vector<int64_t>> empty = ResolveShape(scalar, {"bench", {}});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(DistributionTest, KindNames) {
  EXPECT_EQ(DistributionKindName(Kind::kNormal), "normal");
  EXPECT_EQ(DistributionKindName(Kind::kUniform), "uniform");
  EXPECT_EQ(DistributionKindName(Kind::kWide), "wide");
  EXPECT_EQ(DistributionKindName(Kind::kNegative), "negative");
  EXPECT_EQ(DistributionKindName(Kind::kTies), "ties");
  EXPECT_EQ(DistributionKindName(Kind::kPositive), "positive");
}

TEST(LoadTaskTest, FloatInputsDefaultToTheCycle) {
  Result<Task> task = LoadTask(kTestdata / "minimal");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(Kinds(task->inputs[0]),
            (std::vector<Kind>{Kind::kNormal, Kind::kWide, Kind::kNegative, Kind::kTies}));
  EXPECT_TRUE(task->references.empty());
  EXPECT_FALSE(task->tolerance.rtol.has_value());
  EXPECT_FALSE(task->tolerance.reduction.has_value());
  EXPECT_FALSE(task->bytes.has_value());
}

// The bundled examples are the format's showcase: each must load.
TEST(LoadTaskTest, EveryExampleLoads) {
  int loaded = 0;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(fs::path(kope::testing::SourceDir()) / "examples")) {
    if (!fs::exists(entry.path() / "task.toml")) continue;
    Result<Task> task = LoadTask(entry.path());
    EXPECT_TRUE(task.ok()) << task.status().ToString();
    ++loaded;
  }
  EXPECT_GT(loaded, 0);
}

TEST(LoadTaskTest, MissingFolderOrFile) {
  ScratchFolder scratch;
  Result<Task> none = LoadTask(scratch.path() / "absent");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(),
            (scratch.path() / "absent/task.toml").string() + ": no such file");

  Result<Task> empty = LoadTask(scratch.path());
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);
}

TEST(LoadTaskTest, UnreadableFile) {
  ScratchFolder scratch;
  fs::create_directories(scratch.path() / "task.toml");  // a folder where the file should be
  Result<Task> task = LoadTask(scratch.path());
  ASSERT_FALSE(task.ok());
  EXPECT_EQ(task.status().code(), StatusCode::kIoError);
  EXPECT_NE(task.status().message().find("task.toml: cannot read"), std::string::npos)
      << task.status().message();
}

TEST(LoadTaskTest, PathInMessagesIsAsGiven) {
  ScratchFolder scratch;
  scratch.Write("t/task.toml", "name = 3\n");
  const fs::path previous = fs::current_path();
  fs::current_path(scratch.path());
  Result<Task> task = LoadTask("t");
  fs::current_path(previous);
  ASSERT_FALSE(task.ok());
  EXPECT_EQ(task.status().message(), "t/task.toml: name: expected a string, got an integer");
}

TEST(LoadTaskTest, SourceLinkLeadingOutsideIsAnError) {
  ScratchFolder scratch;
  std::string toml = ReadFileText(kTestdata / "minimal/task.toml").value_or("");
  scratch.Write("task/task.toml", toml);
  scratch.Write("outside.cc", ReadFileText(kTestdata / "minimal/baseline.cc").value_or(""));
  fs::create_symlink(scratch.path() / "outside.cc", scratch.path() / "task/baseline.cc");
  Result<Task> task = LoadTask(scratch.path() / "task");
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find(
                "task.toml: baseline.cpp: 'baseline.cc' leads outside the task folder"),
            std::string::npos)
      << task.status().message();
}

TEST(LoadTaskTest, SourceLinkInsideIsFine) {
  ScratchFolder scratch;
  scratch.Write("task/task.toml", ReadFileText(kTestdata / "minimal/task.toml").value_or(""));
  scratch.Write("task/src/negate.cc", ReadFileText(kTestdata / "minimal/baseline.cc").value_or(""));
  fs::create_symlink("src/negate.cc", scratch.path() / "task/baseline.cc");
  Result<Task> task = LoadTask(scratch.path() / "task");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->baselines.at("cpp").path, fs::canonical(scratch.path() / "task/src/negate.cc"));
}

TEST(LoadTaskTest, ReferenceInAnotherLanguageStandsAlone) {
  ScratchFolder scratch;
  scratch.Write("task/task.toml", ReadFileText(kTestdata / "minimal/task.toml").value_or("") +
                                      "\n[reference]\ncuda = \"reference.cu\"\n");
  scratch.Write("task/baseline.cc", ReadFileText(kTestdata / "minimal/baseline.cc").value_or(""));
  scratch.Write("task/reference.cu", "// a CUDA reference\n");
  Result<Task> task = LoadTask(scratch.path() / "task");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->references.at("cuda").language, "cuda");
  EXPECT_EQ(task->baselines.count("cuda"), 0u);
}

// A PyTorch problem's own integers that are no sizes of a shape (KernelBench level 2's
// hardtanh_min = -2, a convolution's padding = 0) are kept as they are; any other size is >= 1.
std::string TorchTaskToml(const std::string& bench, const std::string& globals) {
  return "name = \"clamp\"\nfamily = \"elementwise\"\n"
         "[[inputs]]\nname = \"x\"\ndtype = \"f32\"\nshape = [\"n\"]\n"
         "[[outputs]]\nname = \"y\"\ndtype = \"f32\"\nshape = [\"n\"]\n"
         "[sizes]\nbench = { " +
         bench + " }\ncheck = [{ n = 1, low = -2, pad = 0 }, " +
         "{ n = 7, low = -2, pad = 0 }]\n"
         "[baseline]\ntorch = \"problem.py\"\n[torch]\nglobals = [" +
         globals + "]\n";
}

TEST(LoadTaskTest, AProblemsOwnIntegersMayBeZeroOrNegative) {
  ScratchFolder scratch;
  scratch.Write("t/problem.py", "low = -2\npad = 0\nn = 8\n");
  scratch.Write("t/task.toml",
                TorchTaskToml("n = 1024, low = -2, pad = 0", "\"n\", \"low\", \"pad\""));
  Result<Task> task = LoadTask(scratch.path() / "t");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->bench.sizes.at("low"), -2);
  EXPECT_EQ(task->bench.sizes.at("pad"), 0);
  scratch.Write("t/task.toml", TorchTaskToml("n = 1024, low = -2, pad = 0", "\"n\", \"pad\""));
  task = LoadTask(scratch.path() / "t");
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find("sizes.bench.low: must be >= 1, got -2"),
            std::string::npos)
      << task.status().message();
}

// A layer's weights and biases follow PyTorch's initialization: drawn for a fan-in of 1 and
// divided by sqrt(fan_in) at each size set.
TEST(LoadTaskTest, AFanInScalesADistributionAtEachSizeSet) {
  ScratchFolder scratch;
  scratch.Write("t/problem.py", "k = 64\nn = 8\n");
  scratch.Write(
      "t/task.toml",
      "name = \"linear\"\nfamily = \"matmul\"\n"
      "[[inputs]]\nname = \"w\"\ndtype = \"f32\"\nshape = [\"n\", \"k\"]\n"
      "distribution = [{ kind = \"uniform\", low = -1.0, high = 1.0, fan_in = \"k\" },"
      " { kind = \"normal\", mean = 0.5, stddev = 2.0, fan_in = \"k * 4\" }, \"wide\"]\n"
      "[[outputs]]\nname = \"y\"\ndtype = \"f32\"\nshape = [\"n\"]\n"
      "[sizes]\nbench = { n = 8, k = 64 }\ncheck = [{ n = 1, k = 1 }, { n = 7, k = 16 }]\n"
      "[baseline]\ntorch = \"problem.py\"\n[torch]\nglobals = [\"n\", \"k\"]\n");
  Result<Task> task = LoadTask(scratch.path() / "t");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  const std::vector<Distribution>& d = task->inputs[0].distributions;
  ASSERT_EQ(d.size(), 3u);
  ASSERT_TRUE(d[0].fan_in.has_value());
  EXPECT_EQ(d[0].fan_in->text(), "k");
  EXPECT_FALSE(d[2].fan_in.has_value());

  Result<Distribution> at = DistributionAt(d[0], task->bench);  // k = 64: 1/8
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_DOUBLE_EQ(at->low, -0.125);
  EXPECT_DOUBLE_EQ(at->high, 0.125);
  EXPECT_FALSE(at->fan_in.has_value());
  at = DistributionAt(d[0], task->checks[0]);  // k = 1: as written
  ASSERT_TRUE(at.ok());
  EXPECT_DOUBLE_EQ(at->high, 1.0);
  at = DistributionAt(d[1], task->checks[1]);  // 4k = 64
  ASSERT_TRUE(at.ok());
  EXPECT_DOUBLE_EQ(at->mean, 0.0625);
  EXPECT_DOUBLE_EQ(at->stddev, 0.25);
  at = DistributionAt(d[2], task->bench);  // no fan_in: unchanged
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(at->kind, Distribution::Kind::kWide);
  EXPECT_DOUBLE_EQ(at->low_exp, d[2].low_exp);
  EXPECT_FALSE(DistributionAt(d[0], SizeSet{"other", {{"n", 2}}}).ok());  // k unknown there
}

}  // namespace
}  // namespace kope

namespace kope {
namespace {

TEST(LanguageBench, BenchCudaReplacesBenchForCudaOnly) {
  ScratchFolder dir;
  dir.Write("k.cc", "");
  dir.Write("k.cu", "");
  dir.Write("task.toml", R"(
name = "t"
family = "elementwise"
[[inputs]]
name = "x"
dtype = "f32"
shape = ["n"]
[[outputs]]
name = "y"
dtype = "f32"
shape = ["n"]
[sizes]
bench = { n = 1000 }
bench_cuda = { n = 1000000 }
check = [ { n = 1 }, { n = 7 } ]
[baseline]
cpp = "k.cc"
cuda = "k.cu"
)");
  Result<Task> task = LoadTask(dir.path());
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(BenchSizes(*task, "cpp").sizes.at("n"), 1000);
  EXPECT_EQ(BenchSizes(*task, "cuda").sizes.at("n"), 1000000);
  std::vector<SizeSet> cuda = SizeSetsFor(*task, "cuda");
  ASSERT_EQ(cuda.size(), 3u);
  EXPECT_EQ(cuda.back().sizes.at("n"), 1000000);
  EXPECT_EQ(AllSizeSets(*task).size(), 4u);
}

}  // namespace
}  // namespace kope
