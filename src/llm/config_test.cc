#include "kope/llm/config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "kope/base/file.h"
#include "testing/test_paths.h"

namespace kope::llm {
namespace {

namespace fs = std::filesystem;

constexpr char kConfig[] = R"(
default = "local"

[cache]
dir = "llm-cache"
mode = "replay"

[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:8000/v1"
model = "Qwen/Qwen2.5-Coder-32B-Instruct"
api_key_env = ""
temperature = 0.2
max_tokens = 4096
timeout_s = 120
retries = 2
concurrency = 8

[providers.claude]
kind = "anthropic"
model = "claude-sonnet-4-5"

[providers.replay]
kind = "scripted"
replies = "replies.json"

[prices."claude-sonnet-4-5"]
prompt_usd_per_mtok = 3
completion_usd_per_mtok = 15.0
)";

Status ParseError(std::string_view text) {
  Result<LlmConfig> c = ParseLlmConfig(text, "", "test.toml");
  return c.ok() ? Status::Ok() : c.status();
}

TEST(LlmConfigTest, ParsesProvidersPricesAndCache) {
  Result<LlmConfig> c = ParseLlmConfig(kConfig, "conf", "test.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->default_provider, "local");
  EXPECT_EQ(c->cache.mode, CacheMode::kReplay);
  EXPECT_EQ(c->cache.dir, fs::path("conf/llm-cache"));
  ASSERT_EQ(c->providers.size(), 3u);

  const ProviderConfig& local = c->providers.at("local");
  EXPECT_EQ(local.kind, ProviderKind::kOpenAi);
  EXPECT_EQ(local.base_url, "http://127.0.0.1:8000/v1");
  EXPECT_EQ(local.api_key_env, "");
  EXPECT_EQ(local.temperature, 0.2);
  EXPECT_EQ(local.max_tokens, 4096);
  EXPECT_EQ(local.timeout_s, 120);
  EXPECT_EQ(local.retries, 2);
  EXPECT_EQ(local.concurrency, 8);

  const ProviderConfig& claude = c->providers.at("claude");
  EXPECT_EQ(claude.base_url, "https://api.anthropic.com");
  EXPECT_EQ(claude.api_key_env, "ANTHROPIC_API_KEY");
  EXPECT_FALSE(claude.temperature.has_value());
  EXPECT_EQ(c->providers.at("replay").replies, fs::path("conf/replies.json"));

  std::optional<Price> price = c->prices.Find("claude-sonnet-4-5-20250929");
  ASSERT_TRUE(price.has_value());
  EXPECT_EQ(price->prompt_usd_per_mtok, 3.0);
  EXPECT_EQ(price->completion_usd_per_mtok, 15.0);
}

TEST(LlmConfigTest, ErrorsNameTheKeyAndLine) {
  struct Case {
    std::string text;
    std::string expected;
  } cases[] = {
      {"[providers.a]\nkind = \"openai\"\nmodle = \"x\"\n",
       "test.toml:3: providers.a.modle: unknown key"},
      {"[providers.a]\nkind = \"gemini\"\n", "providers.a.kind: unknown provider kind 'gemini'"},
      {"[providers.a]\nmodel = \"x\"\n", "test.toml:1: providers.a: missing key 'kind'"},
      {"[providers.a]\nkind = \"openai\"\ntimeout_s = \"slow\"\n",
       "test.toml:3: providers.a.timeout_s: expected a finite number"},
      {"[providers.a]\nkind = \"openai\"\nretries = 1.5\n",
       "providers.a.retries: expected an integer"},
      {"[providers.a]\nkind = \"openai\"\nbase_url = \"ftp://x\"\n", "must start with http://"},
      {"[providers.a]\nkind = \"openai\"\nconcurrency = 0\n",
       "concurrency must be within [1, 256]"},
      {"[providers.a]\nkind = \"openai\"\ntemperature = 3\n", "temperature must be within [0, 2]"},
      {"[providers.a]\nkind = \"openai\"\nmax_tokens_field = \"tokens\"\n",
       "max_tokens_field must be"},
      {"default = \"b\"\n[providers.a]\nkind = \"openai\"\n", "no provider named 'b' is defined"},
      {"[cache]\nmode = \"replay\"\n", "needs 'dir'"},
      {"[cache]\ndir = \"d\"\nmode = \"always\"\n", "unknown cache mode 'always'"},
      {"[prices.m]\nprompt_usd_per_mtok = 1\n", "missing key 'completion_usd_per_mtok'"},
      {"[prices.m]\nprompt_usd_per_mtok = -1\ncompletion_usd_per_mtok = 1\n", "cannot be negative"},
      {"api_key = \"sk-123\"\n", "unknown key"},
      {"[providers.a\n", "test.toml:1:"},
  };
  for (const Case& c : cases) {
    Status s = ParseError(c.text);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.message();
  }
}

TEST(LlmConfigTest, SelectsByNameDefaultOrKindAndAppliesOverrides) {
  Result<LlmConfig> c = ParseLlmConfig(kConfig, "", "test.toml");
  ASSERT_TRUE(c.ok());
  Result<ProviderConfig> p = SelectProvider(*c, "", {});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->name, "local");

  ProviderOverrides o;
  o.model = "claude-opus-4-1";
  o.timeout_s = 30;
  o.retries = 0;
  p = SelectProvider(*c, "claude", o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->model, "claude-opus-4-1");
  EXPECT_EQ(p->timeout_s, 30);
  EXPECT_EQ(p->attempt_timeout_s, 30);  // never longer than the whole call
  EXPECT_EQ(p->retries, 0);

  // A kind name that the file does not define gives that kind's defaults.
  o = {};
  o.model = "gpt-4o";
  p = SelectProvider(LlmConfig{}, "openai", o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->base_url, "https://api.openai.com/v1");
  EXPECT_EQ(p->api_key_env, "OPENAI_API_KEY");

  o.kind = ProviderKind::kOpenAi;
  o.base_url = "http://localhost:11434/v1";
  o.api_key_env = "";
  p = SelectProvider(LlmConfig{}, "", o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->base_url, "http://localhost:11434/v1");
  EXPECT_EQ(p->api_key_env, "");
}

TEST(LlmConfigTest, SelectionErrorsSayWhatIsMissing) {
  Result<LlmConfig> c = ParseLlmConfig(kConfig, "", "test.toml");
  ASSERT_TRUE(c.ok());
  Result<ProviderConfig> p = SelectProvider(*c, "nope", {});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("no provider named 'nope'"), std::string::npos);
  EXPECT_NE(p.status().message().find("claude, local, replay"), std::string::npos);

  p = SelectProvider(LlmConfig{}, "anthropic", {});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("no model"), std::string::npos) << p.status().message();

  p = SelectProvider(LlmConfig{}, "", {});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("no provider chosen"), std::string::npos);

  ProviderOverrides o;
  o.base_url = "localhost:8000";
  p = SelectProvider(*c, "local", o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("must start with http://"), std::string::npos);
}

TEST(LlmConfigTest, LoadReportsAMissingFile) {
  Result<LlmConfig> c = LoadLlmConfig("does/not/exist.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
}

// The example in docs/LLM_PROVIDERS.md is a valid configuration.
TEST(LlmConfigTest, DocumentedExampleParses) {
  Result<std::string> read =
      ReadFileText(fs::path(kope::testing::SourceDir()) / "docs/LLM_PROVIDERS.md");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  const std::string& doc = *read;
  size_t start = doc.find("```toml\n");
  ASSERT_NE(start, std::string::npos);
  start += 8;
  size_t end = doc.find("```", start);
  Result<LlmConfig> c = ParseLlmConfig(doc.substr(start, end - start), "", "LLM_PROVIDERS.md");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->providers.empty());
  EXPECT_FALSE(c->prices.empty());
  for (const auto& [name, provider] : c->providers) {
    EXPECT_TRUE(SelectProvider(*c, name, {}).ok()) << name;
  }
}

}  // namespace
}  // namespace kope::llm
