// Host-side logic of the CUDA backend, on recorded tool output: no GPU needed.
#include <gtest/gtest.h>

#include "cuda_internal.h"
#include "kope/backend/cuda/cuda_backend.h"
#include "kope/kernel.h"

namespace kope {
namespace {

TEST(ComputeCapability, ParsesTheFormsToolsPrint) {
  auto cc = ParseComputeCapability("9.0\n");
  ASSERT_TRUE(cc);
  EXPECT_EQ(cc->major, 9);
  EXPECT_EQ(cc->minor, 0);
  cc = ParseComputeCapability("sm_90a");
  ASSERT_TRUE(cc);
  EXPECT_EQ(cc->major, 9);
  cc = ParseComputeCapability("sm_120");
  ASSERT_TRUE(cc);
  EXPECT_EQ(cc->major, 12);
  EXPECT_EQ(cc->minor, 0);
  cc = ParseComputeCapability(" 8.6 ");
  ASSERT_TRUE(cc);
  EXPECT_EQ(cc->minor, 6);
  EXPECT_FALSE(ParseComputeCapability(""));
  EXPECT_FALSE(ParseComputeCapability("nine"));
  EXPECT_FALSE(ParseComputeCapability("9.10"));
  EXPECT_FALSE(ParseComputeCapability("sm_"));
}

TEST(ComputeCapability, ArchitectureSpecificTargetsForHopperAndBlackwell) {
  EXPECT_EQ(ArchForCapability({9, 0}), "sm_90a");
  EXPECT_EQ(ArchForCapability({10, 0}), "sm_100a");
  EXPECT_EQ(ArchForCapability({8, 0}), "sm_80");
  EXPECT_EQ(ArchForCapability({8, 9}), "sm_89");
  EXPECT_EQ(GencodeFlag("sm_90a"), "-gencode=arch=compute_90a,code=sm_90a");
  EXPECT_EQ(GencodeFlag("sm_80"), "-gencode=arch=compute_80,code=sm_80");
}

TEST(NvccCommand, CompilesASharedObjectThatMustDefineTheEntryPoint) {
  auto argv = NvccCommand("/usr/local/cuda/bin/nvcc", "sm_90a", "/inc", {"-DX=1"}, "k.cu", "k.so");
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv[0], "/usr/local/cuda/bin/nvcc");
  auto has = [&](const std::string& a) {
    return std::find(argv.begin(), argv.end(), a) != argv.end();
  };
  EXPECT_TRUE(has("-gencode=arch=compute_90a,code=sm_90a"));
  EXPECT_TRUE(has("-shared"));
  EXPECT_TRUE(has("-I/inc"));
  EXPECT_TRUE(has("-DX=1"));
  EXPECT_TRUE(has("--require-defined=kope_kernel"));
  EXPECT_TRUE(has("--no-undefined"));
  // The runtime is linked shared, so that the runner's allocation cap sees the calls.
  auto cudart = std::find(argv.begin(), argv.end(), "-cudart");
  ASSERT_NE(cudart, argv.end());
  EXPECT_EQ(*(cudart + 1), "shared");
  // The resource report comes from ptxas -v.
  auto ptxas = std::find(argv.begin(), argv.end(), "-Xptxas");
  ASSERT_NE(ptxas, argv.end());
  EXPECT_EQ(*(ptxas + 1), "-v");
}

constexpr const char* kFrontEndErrors =
    R"(bad.cu(2): error: identifier "undefined_thing" is undefined
  __attribute__((global)) void f(float* y) { y[0] = undefined_thing; int unused; }
                                                    ^

bad.cu(3): error: identifier "foo" is undefined
  extern "C" int kope_kernel(const kope_tensor*, int, kope_tensor*, int, void*) { return foo(); }
                                                                                         ^

2 errors detected in the compilation of "bad.cu".
)";

TEST(NvccOutput, FrontEndErrorsWithTheirExcerpts) {
  auto d = ParseNvccOutput(kFrontEndErrors);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].file, "bad.cu");
  EXPECT_EQ(d[0].line, 2);
  EXPECT_EQ(d[0].severity, "error");
  EXPECT_NE(d[0].message.find("undefined_thing"), std::string::npos);
  EXPECT_NE(d[0].message.find("^"), std::string::npos);  // the excerpt's caret line
  EXPECT_EQ(d[1].line, 3);
  EXPECT_EQ(d[1].message.find("errors detected"), std::string::npos);
}

TEST(NvccOutput, WarningsAfterErrorsAndRemarksDropped) {
  auto d = ParseNvccOutput(
      "w.cu(2): warning #177-D: variable \"unused\" was declared but never referenced\n"
      "  int unused;\n      ^\n\n"
      "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n\n"
      "w.cu(9): error: expected a \";\"\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].severity, "error");
  EXPECT_EQ(d[0].line, 9);
  EXPECT_EQ(d[1].severity, "warning");
  EXPECT_EQ(d[1].message.find("Remark"), std::string::npos);
}

TEST(NvccOutput, HostCompilerPtxasAndLinkerErrors) {
  auto d = ParseNvccOutput(
      "k.cu:12:5: error: 'vector' in namespace 'std' does not name a template type\n"
      "ptxas error   : Entry function '_Z1fPf' uses too much shared data (0x3a980 bytes, "
      "0x38c00 max)\n"
      "/usr/bin/ld: /tmp/tmpxft_000067c3_00000000-11_w.o: in function `kope_kernel':\n"
      "tmpxft_000067c3_00000000-6_w.cudafe1.cpp:(.text+0x224): undefined reference to "
      "`helper_missing'\n"
      "tmpxft_000067c3_00000000-6_w.cudafe1.cpp:(.text+0x23e): undefined reference to "
      "`helper_missing'\n"
      "collect2: error: ld returned 1 exit status\n");
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].file, "k.cu");
  EXPECT_EQ(d[0].column, 5);
  EXPECT_NE(d[1].message.find("ptxas: Entry function"), std::string::npos);
  EXPECT_NE(d[2].message.find("'helper_missing'"), std::string::npos);  // once, not twice
}

TEST(NvccOutput, MissingEntryPointIsNamed) {
  auto d = ParseNvccOutput(
      "/usr/bin/ld: required symbol `kope_kernel' not defined\n"
      "collect2: error: ld returned 1 exit status\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("kope_kernel"), std::string::npos);
}

constexpr const char* kPtxasCuda13 = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z3bigILi300EEvPf' for 'sm_90a'
ptxas info    : Function properties for _Z3bigILi300EEvPf
    1200 bytes stack frame, 16 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers, 1200 bytes cumulative stack size
ptxas info    : Compile time = 321.729 ms
ptxas info    : Compiling entry function '_Z5scalePKfPfl' for 'sm_90a'
ptxas info    : Function properties for _Z5scalePKfPfl
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compile time = 2.427 ms
)";

TEST(PtxasReport, OneEntryPerKernelWithSpills) {
  auto r = ParsePtxasReport(kPtxasCuda13);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].function, "void big<300>(float*)");
  EXPECT_EQ(r[0].arch, "sm_90a");
  EXPECT_EQ(r[0].registers, 40);
  EXPECT_EQ(r[0].stack_bytes, 1200);
  EXPECT_EQ(r[0].spill_store_bytes, 16);
  EXPECT_EQ(r[0].spill_load_bytes, 24);
  EXPECT_EQ(r[1].registers, 12);
  EXPECT_EQ(r[1].shared_bytes, 1024);
  EXPECT_EQ(r[1].spill_store_bytes, 0);
}

TEST(PtxasReport, OlderFormatWithConstantBank) {
  auto r = ParsePtxasReport(
      "ptxas info    : Compiling entry function '_Z1kv' for 'sm_80'\n"
      "ptxas info    : Function properties for _Z1kv\n"
      "    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 255 registers, 49152 bytes smem, 360 bytes cmem[0]\n"
      "ptxas info    : Function properties for _Z6helperv\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n");
  ASSERT_EQ(r.size(), 1u);  // device functions are not entries
  EXPECT_EQ(r[0].registers, 255);
  EXPECT_EQ(r[0].shared_bytes, 49152);
  EXPECT_EQ(r[0].constant_bytes, 360);
  EXPECT_EQ(r[0].stack_bytes, 8);
}

TEST(DriverVersion, FromTheKernelModule) {
  EXPECT_EQ(cuda_internal::ParseDriverVersion(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct  9 "
                "18:00:52 UTC 2025\nGCC version:  gcc version 12.2.0\n"),
            "580.159.04");
  EXPECT_EQ(cuda_internal::ParseDriverVersion(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release"),
            "570.86.15");
  EXPECT_EQ(cuda_internal::ParseDriverVersion(""), "");
}

TEST(LaunchSet, DescribesShapesForTheLauncher) {
  LaunchShapes s;
  s.inputs = {{KOPE_F32, {1024, 7}}, {KOPE_BF16, {7}}};
  s.outputs = {{KOPE_I64, {1}}};
  EXPECT_EQ(cuda_internal::LaunchSetArgument(s), "f32:1024x7,bf16:7;i64:1");
  s.inputs.push_back({KOPE_BOOL, {1024, 7}});  // a mask: one byte an element, not a float
  EXPECT_EQ(cuda_internal::LaunchSetArgument(s), "f32:1024x7,bf16:7,bool:1024x7;i64:1");
}

constexpr const char* kNcuCsv =
    "==PROF== Connected to process 1234 (/build/kope-cuda-launch)\n"
    "==PROF== Profiling \"gelu\" - 0: 0%....50%....100% - 9 passes\n"
    "kope-cuda-launch: 1 set(s) ok\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
    "\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"dram__throughput.avg.pct_of_peak_sustained_"
    "elapsed\",\"gpu__time_duration.sum\",\"lts__t_sector_hit_rate.pct\",\"sm__throughput.avg.pct_"
    "of_peak_sustained_elapsed\",\"sm__warps_active.avg.pct_of_peak_sustained_active\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"%\",\"ns\",\"%\",\"%\",\"%\"\n"
    "\"0\",\"1234\",\"kope-cuda-launch\",\"127.0.0.1\",\"zero_fill(float*)\",\"1\",\"13\","
    "\"(256, 1, 1)\",\"(1024, 1, 1)\",\"0\",\"9.0\",\"40.1\",\"2,048\",\"3.5\",\"10.0\",\"80.5\"\n"
    "\"1\",\"1234\",\"kope-cuda-launch\",\"127.0.0.1\",\"gelu(const float*, float*, long)\",\"1\","
    "\"13\",\"(256, 1, 1)\",\"(65536, 1, 1)\",\"0\",\"9.0\",\"91.25\",\"130,112.5\",\"0.8\","
    "\"22.5\",\"93.1\"\n"
    "==PROF== Disconnected from process 1234\n";

TEST(NcuCsv, TheLongestLaunchAndItsLimiter) {
  auto p = ParseNcuCsv(kNcuCsv);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->launches, 2);
  EXPECT_EQ(p->kernel, "gelu(const float*, float*, long)");
  std::map<std::string, double> m(p->metrics.begin(), p->metrics.end());
  EXPECT_DOUBLE_EQ(m["duration_ns"], 130112.5);
  EXPECT_DOUBLE_EQ(m["dram_throughput_pct"], 91.25);
  EXPECT_DOUBLE_EQ(m["achieved_occupancy_pct"], 93.1);
  EXPECT_DOUBLE_EQ(m["l2_hit_rate_pct"], 0.8);
  EXPECT_EQ(p->limiter, "dram");
  // Metrics the tool did not report are named, not invented.
  EXPECT_NE(p->note.find("l1tex__throughput"), std::string::npos);
  EXPECT_EQ(m.count("l1_throughput_pct"), 0u);
}

TEST(NcuCsv, NoKernelIsAnError) {
  EXPECT_FALSE(ParseNcuCsv("==PROF== Disconnected\n").ok());
  EXPECT_FALSE(ParseNcuCsv("\"ID\",\"Kernel Name\"\n\"\",\"\"\n").ok());
}

TEST(SanitizerOutput, FirstErrorBlock) {
  const char* memcheck =
      "========= COMPUTE-SANITIZER\n"
      "========= Invalid __global__ write of size 4 bytes\n"
      "=========     at oob(float*, long)+0x70 in k.cu:7\n"
      "=========     by thread (255,0,0) in block (3,0,0)\n"
      "=========     Address 0x7f00001000 is out of bounds\n"
      "=========     and is 1 bytes after the nearest allocation at 0x7f00000000 of size 4096 "
      "bytes\n"
      "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
      "========= ERROR SUMMARY: 1 error\n";
  std::string e = FirstSanitizerError(memcheck);
  EXPECT_EQ(e.rfind("Invalid __global__ write of size 4 bytes", 0), 0u) << e;
  EXPECT_NE(e.find("k.cu:7"), std::string::npos);
  EXPECT_EQ(FirstSanitizerError("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"),
            "");
  EXPECT_EQ(FirstSanitizerError("========= COMPUTE-SANITIZER\n"
                                "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 "
                                "warnings)\n"),
            "");
  const char* racecheck =
      "========= COMPUTE-SANITIZER\n"
      "========= Error: Race reported between Write access at reduce(const float*, float*)+0x90 "
      "in k.cu:12\n"
      "=========     and Read access at reduce(const float*, float*)+0xc0 in k.cu:14 [8 hazards]\n"
      "=========\n"
      "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n";
  e = FirstSanitizerError(racecheck);
  EXPECT_NE(e.find("Race reported"), std::string::npos) << e;
}

}  // namespace
}  // namespace kope
