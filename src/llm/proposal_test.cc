// Reply parsing, driven by recorded replies: testdata/replies/NAME.md is a
// reply, NAME.expect.toml says what parsing it must give (`format = "modelnew"`:
// parsed as a ModelNew reply; else as a native kernel's).
#include "kope/llm/proposal.h"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <filesystem>
#include <random>

#include "kope/base/file.h"
#include "testing/test_paths.h"

namespace kope::llm {
namespace {

namespace fs = std::filesystem;

const fs::path kReplies = fs::path(kope::testing::SourceDir()) / "src/llm/testdata/replies";

std::vector<std::string> Strings(const toml::table& t, std::string_view key) {
  std::vector<std::string> out;
  if (const toml::array* a = t[key].as_array()) {
    for (const toml::node& n : *a) out.push_back(n.value_or(std::string()));
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

void CheckText(const toml::table& expect, std::string_view field, const std::string& actual) {
  const std::string f(field);
  if (auto exact = expect[f].value<std::string>()) {
    EXPECT_EQ(actual, *exact) << f;
  }
  if (auto p = expect[f + "_starts_with"].value<std::string>()) {
    EXPECT_TRUE(StartsWith(actual, *p)) << f << " is:\n" << actual;
  }
  if (auto p = expect[f + "_ends_with"].value<std::string>()) {
    EXPECT_TRUE(EndsWith(actual, *p)) << f << " is:\n" << actual;
  }
  for (const std::string& s : Strings(expect, f + "_contains")) {
    EXPECT_NE(actual.find(s), std::string::npos) << f << " lacks '" << s << "':\n" << actual;
  }
  for (const std::string& s : Strings(expect, f + "_excludes")) {
    EXPECT_EQ(actual.find(s), std::string::npos) << f << " has '" << s << "':\n" << actual;
  }
}

SourceFormat FormatOf(const toml::table& expect) {
  return expect["format"].value_or(std::string()) == "modelnew" ? SourceFormat::kModelNew
                                                                : SourceFormat::kNativeKernel;
}

std::string_view MarkerOf(SourceFormat format) {
  return format == SourceFormat::kModelNew ? "class ModelNew" : "kope_kernel";
}

toml::table ExpectationOf(const fs::path& reply_path) {
  fs::path expect_path = reply_path;
  expect_path.replace_extension(".expect.toml");
  return fs::exists(expect_path) ? toml::parse_file(expect_path.string()) : toml::table();
}

std::vector<fs::path> ReplyFiles() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kReplies)) {
    if (e.path().extension() == ".md") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ProposalTest, RecordedRepliesParseAsExpected) {
  std::vector<fs::path> files = ReplyFiles();
  ASSERT_GE(files.size(), 20u);
  for (const fs::path& reply_path : files) {
    SCOPED_TRACE(reply_path.filename().string());
    fs::path expect_path = reply_path;
    expect_path.replace_extension(".expect.toml");
    ASSERT_TRUE(fs::exists(expect_path)) << "no expectation for this reply";
    toml::table expect = toml::parse_file(expect_path.string());
    const SourceFormat format = FormatOf(expect);
    ParsedReply parsed = ParseProposal(ReadFileText(reply_path).value_or(""), format);
    std::string outcome = expect["outcome"].value_or(std::string());
    if (outcome == "proposal") {
      const Proposal* p = std::get_if<Proposal>(&parsed);
      ASSERT_NE(p, nullptr) << std::get<ParseFailure>(parsed).reason;
      CheckText(expect, "decision", p->decision);
      CheckText(expect, "source", p->source);
      if (auto lang = expect["language"].value<std::string>()) {
        EXPECT_EQ(p->language, *lang);
      }
      if (expect.contains("tags")) {
        EXPECT_EQ(p->tags, Strings(expect, "tags"));
      }
      EXPECT_NE(p->source.find(MarkerOf(format)), std::string::npos);
      EXPECT_EQ(FormatOfSource(p->source), format);
    } else {
      ASSERT_EQ(outcome, "failure");
      const ParseFailure* f = std::get_if<ParseFailure>(&parsed);
      ASSERT_NE(f, nullptr) << "parsed as a proposal";
      CheckText(expect, "reason", f->reason);
    }
  }
}

// Every prefix of a good reply that cuts the kernel block before its closing
// fence must fail, never yield a partial kernel.
TEST(ProposalTest, TruncatedRepliesNeverYieldPartialKernels) {
  for (const fs::path& reply_path : ReplyFiles()) {
    SCOPED_TRACE(reply_path.filename().string());
    const std::string text = ReadFileText(reply_path).value_or("");
    const SourceFormat format = FormatOf(ExpectationOf(reply_path));
    ParsedReply full = ParseProposal(text, format);
    const Proposal* p = std::get_if<Proposal>(&full);
    if (p == nullptr) continue;
    size_t source_at = text.find(p->source);
    if (source_at == std::string::npos) continue;  // CRLF or indented: not a byte range
    const size_t fence_end = source_at + p->source.size() + 3;
    for (size_t cut = 0; cut < text.size(); ++cut) {
      ParsedReply parsed = ParseProposal(std::string_view(text).substr(0, cut), format);
      if (cut > source_at && cut < fence_end) {
        ASSERT_TRUE(std::holds_alternative<ParseFailure>(parsed)) << "cut at " << cut;
      }
      if (const ParseFailure* f = std::get_if<ParseFailure>(&parsed)) {
        ASSERT_FALSE(f->reason.empty());
      }
    }
  }
}

TEST(ProposalTest, ArbitraryBytesGiveAValueNotACrash) {
  std::mt19937 rng(12345);
  const std::vector<std::string> pieces = {
      "```",       "```cpp\n", "~~~", "\n",      "kope_kernel", "(",    ")", "{",  "}",
      "DECISION:", "TAGS:",    " ",   "<think>", "</think>",    "\r\n", "#", "**", "x"};
  for (int round = 0; round < 2000; ++round) {
    std::string reply;
    int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      if (rng() % 4 == 0) {
        reply += static_cast<char>(rng() % 256);
      } else {
        reply += pieces[rng() % pieces.size()];
      }
    }
    ParsedReply parsed = ParseProposal(reply);
    if (const Proposal* p = std::get_if<Proposal>(&parsed)) {
      EXPECT_NE(p->source.find("kope_kernel"), std::string::npos);
      EXPECT_FALSE(p->decision.empty());
    } else {
      EXPECT_FALSE(std::get<ParseFailure>(parsed).reason.empty());
    }
  }
}

TEST(ProposalTest, EmptyReplyFails) {
  ParsedReply parsed = ParseProposal("");
  ASSERT_TRUE(std::holds_alternative<ParseFailure>(parsed));
  EXPECT_NE(std::get<ParseFailure>(parsed).reason.find("no code block"), std::string::npos);
}

TEST(ProposalTest, InstructionsDescribeTheFormatTheParserAccepts) {
  std::string_view instructions = ReplyFormatInstructions();
  EXPECT_NE(instructions.find("DECISION:"), std::string_view::npos);
  EXPECT_NE(instructions.find("TAGS:"), std::string_view::npos);
  EXPECT_NE(instructions.find("kope_kernel"), std::string_view::npos);
  std::string_view python = ReplyFormatInstructions(SourceFormat::kModelNew);
  EXPECT_NE(python.find("DECISION:"), std::string_view::npos);
  EXPECT_NE(python.find("```python"), std::string_view::npos);
  EXPECT_NE(python.find("class ModelNew(nn.Module)"), std::string_view::npos);
  EXPECT_EQ(python.find("kope_kernel"), std::string_view::npos);
}

// A source's format, by what it defines.
TEST(ProposalTest, FormatOfSourceTellsModelNewFromNativeKernels) {
  struct Case {
    const char* source;
    SourceFormat format;
  };
  const Case cases[] = {
      {"class ModelNew(nn.Module):\n    pass\n", SourceFormat::kModelNew},
      {"import torch\nclass ModelNew (torch.nn.Module):\n", SourceFormat::kModelNew},
      {"from p import Model\nclass ModelNew(Model): pass\n", SourceFormat::kModelNew},
      {"class ModelNew:\n", SourceFormat::kModelNew},
      {"class ModelNewer(nn.Module):\n", SourceFormat::kNativeKernel},
      {"    class ModelNew(nn.Module):\n",
       SourceFormat::kNativeKernel},  // nested, not the module's
      {"# class ModelNew(nn.Module)\n", SourceFormat::kNativeKernel},
      {"extern \"C\" int kope_kernel(const kope_tensor* i, int n) { return 0; }\n",
       SourceFormat::kNativeKernel},
      {"", SourceFormat::kNativeKernel},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FormatOfSource(c.source), c.format) << c.source;
  }
}

// A native kernel reply is no ModelNew, and a ModelNew reply is no native kernel.
TEST(ProposalTest, EachFormatRefusesTheOther) {
  const std::string python =
      "DECISION: relu\n```python\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
      "        return x.relu()\n```\n";
  ASSERT_TRUE(std::holds_alternative<Proposal>(ParseProposal(python, SourceFormat::kModelNew)));
  const ParsedReply native = ParseProposal(python);
  ASSERT_TRUE(std::holds_alternative<ParseFailure>(native));
  EXPECT_NE(std::get<ParseFailure>(native).reason.find("kope_kernel"), std::string::npos);
}

}  // namespace
}  // namespace kope::llm
