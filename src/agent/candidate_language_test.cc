// Candidate languages: the run's choice against the task, a source's language and file name,
// and the language recorded in an attempt's proposer.
#include "kope/agent/candidate_language.h"

#include <gtest/gtest.h>

namespace kope::agent {
namespace {

TEST(CandidateLanguageTest, ResolveTheRunsChoice) {
  Task native;
  native.name = "gelu";
  Task torch = native;
  torch.name = "kb_gelu";
  torch.torch = TorchProblem{};
  struct Case {
    const char* requested;
    const char* native;
    const Task* task;
    const char* resolved;  // nullptr: refused
  };
  const Case cases[] = {
      {"", "cpp", &native, ""},
      {"cpp", "cpp", &native, ""},
      {"cuda", "cuda", &torch, ""},
      {"cuda", "cpp", &native, nullptr},
      {"cpp", "cuda", &torch, nullptr},
      {"triton", "cpp", &torch, "triton"},
      {"torch", "cuda", &torch, "torch"},
      {"alternate", "cuda", &torch, "alternate"},
      {"triton", "cpp", &native, nullptr},
      {"torch", "cpp", &native, nullptr},
      {"alternate", "cpp", &native, nullptr},
      {"rust", "cpp", &torch, nullptr},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.requested) + " on " + c.native + " for " + c.task->name);
    Result<std::string> r = ResolveLanguageChoice(c.requested, c.native, *c.task);
    if (c.resolved == nullptr) {
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    } else {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, c.resolved);
    }
  }
  Result<std::string> refused = ResolveLanguageChoice("triton", "cpp", native);
  EXPECT_NE(refused.status().message().find("task gelu has no PyTorch baseline"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(LanguagesOf("", "cuda"), (std::vector<std::string>{"cuda"}));
  EXPECT_EQ(LanguagesOf("torch", "cuda"), (std::vector<std::string>{"torch"}));
  EXPECT_EQ(LanguagesOf("alternate", "cpp"), (std::vector<std::string>{"cpp", "triton"}));
}

TEST(CandidateLanguageTest, ASourcesLanguageAndFileName) {
  const std::string triton =
      "import torch\nimport triton\n@triton.jit\ndef k(x):\n    pass\nclass ModelNew(torch.nn."
      "Module):\n    pass\n";
  const std::string torch = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n";
  const std::string kernel = "extern \"C\" int kope_kernel(const kope_tensor*, int) { return 0; }";
  EXPECT_EQ(LanguageOfSource(triton, "cuda"), "triton");
  EXPECT_EQ(LanguageOfSource(torch, "cuda"), "torch");
  EXPECT_EQ(LanguageOfSource(kernel, "cuda"), "cuda");
  EXPECT_EQ(CandidateFileName(triton, "cuda", 7), "attempt_7.py");
  EXPECT_EQ(CandidateFileName(kernel, "cuda", 7), "attempt_7.cu");
  EXPECT_EQ(CandidateFileName(kernel, "cpp", 7), "attempt_7.cc");
  EXPECT_EQ(SourceExtension(torch, "cpp"), ".py");
}

TEST(CandidateLanguageTest, TheProposerRecordsALanguageOtherThanTheNativeOne) {
  EXPECT_EQ(ProposerWithLanguage("llm:gpt-5", "triton", "cuda"), "llm:gpt-5@triton");
  EXPECT_EQ(ProposerWithLanguage("tuner", "cuda", "cuda"), "tuner");
  EXPECT_EQ(ProposerWithLanguage("tuner", "", "cpp"), "tuner");
  EXPECT_EQ(LanguageOfProposer("llm:gpt-5@triton", "cuda"), "triton");
  EXPECT_EQ(LanguageOfProposer("tuner@torch", "cpp"), "torch");
  EXPECT_EQ(LanguageOfProposer("tuner", "cpp"), "cpp");
  EXPECT_EQ(LanguageOfProposer("llm:name@host", "cpp"), "cpp");  // not a language
  EXPECT_EQ(ProposerBase("tuner@triton"), "tuner");
  EXPECT_EQ(ProposerBase("llm:name@host"), "llm:name@host");
  EXPECT_TRUE(IsModelNewLanguage("triton"));
  EXPECT_FALSE(IsModelNewLanguage("cuda"));
  EXPECT_EQ(NativeLanguage("cuda"), "cuda");
  EXPECT_EQ(NativeLanguage("cpu"), "cpp");
}

}  // namespace
}  // namespace kope::agent
