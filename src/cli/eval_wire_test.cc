// The warm service's frames: a round trip, frames that are refused, a peer that went away,
// and requests checked as kope eval checks its options.
#include "eval_wire.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace kope::cli {
namespace {

using nlohmann::json;

class Wire : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  void TearDown() override {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  void Raw(const std::string& bytes) {
    ASSERT_EQ(write(fds_[0], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  static std::string Length(uint32_t n) {
    return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
            static_cast<char>(n)};
  }
  void CloseWriter() {
    close(fds_[0]);
    fds_[0] = -1;
  }
  int fds_[2] = {-1, -1};
};

WarmRequest Example() {
  WarmRequest r;
  r.task = "/tasks/19_ReLU.py";
  r.candidate = "/work/relu new.py";
  r.source = "class ModelNew:\n  pass  # \xc3\xa9 \"quoted\"\n";
  r.backend = "cuda";
  r.trials = 7;
  r.timeout = 2.5;
  r.json = true;
  r.confirm = true;
  r.no_bubblewrap = true;
  r.sanitize = true;
  return r;
}

TEST_F(Wire, RequestRoundTripsThroughAFrame) {
  ASSERT_TRUE(WriteFrame(fds_[0], WarmRequestToJson(Example())).ok());
  Result<json> m = ReadFrame(fds_[1]);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Result<WarmRequest> r = WarmRequestFromJson(*m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const WarmRequest want = Example();
  EXPECT_EQ(r->task, want.task);
  EXPECT_EQ(r->candidate, want.candidate);
  EXPECT_EQ(r->source, want.source);
  EXPECT_EQ(r->backend, "cuda");
  EXPECT_EQ(r->trials, 7);
  EXPECT_DOUBLE_EQ(r->timeout, 2.5);
  EXPECT_TRUE(r->json && r->confirm && r->no_bubblewrap && r->sanitize);
  EXPECT_FALSE(r->quiet || r->profile);
}

TEST_F(Wire, SeveralFramesKeepTheirBoundaries) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(WriteFrame(fds_[0], {{"type", "progress"}, {"line", std::to_string(i)}}).ok());
  }
  for (int i = 0; i < 3; ++i) {
    Result<json> m = ReadFrame(fds_[1]);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ((*m)["line"], std::to_string(i));
  }
}

struct BadFrame {
  const char* name;
  std::string bytes;
  StatusCode code;
};

TEST_F(Wire, BadFramesAreRefusedWithTheirReason) {
  const std::string body = "{\"type\": \"eval\"}";
  const BadFrame cases[] = {
      {"above the limit", Length(kMaxFrameBytes + 1), StatusCode::kInvalidArgument},
      {"not JSON", Length(5) + "{{{{{", StatusCode::kCorruption},
      {"an array", Length(2) + "[]", StatusCode::kCorruption},
      {"no type", Length(2) + "{}", StatusCode::kCorruption},
      {"a cut length", std::string("\0\0", 2), StatusCode::kUnavailable},
      {"a cut body", Length(body.size()) + body.substr(0, 4), StatusCode::kUnavailable},
      {"nothing", "", StatusCode::kUnavailable},
  };
  for (const BadFrame& c : cases) {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    ASSERT_EQ(write(fds[0], c.bytes.data(), c.bytes.size()), static_cast<ssize_t>(c.bytes.size()));
    close(fds[0]);
    Result<json> m = ReadFrame(fds[1]);
    close(fds[1]);
    ASSERT_FALSE(m.ok()) << c.name;
    EXPECT_EQ(m.status().code(), c.code) << c.name << ": " << m.status().ToString();
  }
}

TEST_F(Wire, ADeadPeerIsUnavailableOnBothSides) {
  CloseWriter();
  Result<json> m = ReadFrame(fds_[1]);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnavailable);
  // Writing to a closed peer neither raises SIGPIPE nor succeeds.
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  close(fds[1]);
  Status s = WriteFrame(fds[0], {{"type", "result"}});
  close(fds[0]);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
}

TEST(WarmRequestCheck, FieldsAreCheckedAsKopeEvalChecksItsOptions) {
  struct Case {
    const char* field;
    json value;
  };
  const Case bad[] = {{"trials", 4},
                      {"trials", 1001},
                      {"timeout", 0.01},
                      {"backend", "rocm"},
                      {"task", "relative/task"},
                      {"candidate", ""},
                      {"version", 99},
                      {"unknown", 1},
                      {"json", "yes"}};
  for (const Case& c : bad) {
    json m = WarmRequestToJson(Example());
    m[c.field] = c.value;
    Result<WarmRequest> r = WarmRequestFromJson(m);
    EXPECT_FALSE(r.ok()) << c.field << " = " << c.value.dump();
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.field;
    }
  }
  json missing = WarmRequestToJson(Example());
  missing.erase("source");
  EXPECT_FALSE(WarmRequestFromJson(missing).ok());
}

}  // namespace
}  // namespace kope::cli
