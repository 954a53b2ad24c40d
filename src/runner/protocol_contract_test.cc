// The control protocol's golden messages (testdata/contract/protocol.json), on the C++ side:
// every request as a real Runner sends it (to testdata/protocol_echo.cc, which answers with
// the bytes it got), HELLO and REPLY as kope-runner writes them and as the parent reads them,
// the call specs of CALL and TIME as kope-runner reads them, the frame header, the constants.
// python/kope_bridge/contract_protocol_test.py checks the bridge against the same file. With
// KOPE_CONTRACT_REGENERATE=1 the bytes are written into the file instead.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "protocol.h"
#include "runner_test_support.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace rp = runner_protocol;
using Json = nlohmann::ordered_json;

const std::string kFile = kope::testing::SourceDir() + "/testdata/contract/protocol.json";

bool Regenerating() { return std::getenv("KOPE_CONTRACT_REGENERATE") != nullptr; }

std::string Hex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

double Number(const Json& v) { return std::strtod(v.get<std::string>().c_str(), nullptr); }

TensorSlot SlotOf(const Json& j) {
  TensorSlot s;
  s.dtype = static_cast<DType>(j["dtype"].get<int>());
  s.shape = j["shape"].get<std::vector<int64_t>>();
  s.strides = j["strides"].get<std::vector<int64_t>>();
  s.offset = j["offset"].get<uint64_t>();
  return s;
}

CallSpec CallOf(const Json& j) {
  CallSpec call;
  for (const Json& s : j["inputs"]) call.inputs.push_back(SlotOf(s));
  for (const Json& s : j["outputs"]) call.outputs.push_back(SlotOf(s));
  return call;
}

void ExpectSameCall(const CallSpec& want, const CallSpec& got) {
  ASSERT_EQ(want.inputs.size(), got.inputs.size());
  ASSERT_EQ(want.outputs.size(), got.outputs.size());
  for (const auto& [w, g] : {std::pair{&want.inputs, &got.inputs}, {&want.outputs, &got.outputs}}) {
    for (size_t i = 0; i < w->size(); ++i) {
      EXPECT_EQ((*w)[i].dtype, (*g)[i].dtype);
      EXPECT_EQ((*w)[i].shape, (*g)[i].shape);
      EXPECT_EQ((*w)[i].strides, (*g)[i].strides);
      EXPECT_EQ((*w)[i].offset, (*g)[i].offset);
    }
  }
}

// The bytes WriteFrame puts on a socket for one frame.
std::string FrameBytes(rp::MessageType type, const std::string& payload) {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  EXPECT_TRUE(rp::WriteFrame(sv[0], type, payload, -1, std::nullopt).ok());
  close(sv[0]);
  std::string bytes;
  char buf[4096];
  for (ssize_t n; (n = read(sv[1], buf, sizeof(buf))) > 0;) bytes.append(buf, n);
  close(sv[1]);
  return bytes;
}

// Records a message's bytes (regenerating) or checks them against the file's.
void Settle(Json* m, const std::string& frame) {
  if (Regenerating()) {
    (*m)["payload_hex"] = Hex(frame.substr(8));
    (*m)["frame_hex"] = Hex(frame);
    return;
  }
  ASSERT_TRUE(m->contains("frame_hex"));
  EXPECT_EQ((*m)["frame_hex"].get<std::string>(), Hex(frame)) << (*m)["type"];
  EXPECT_EQ((*m)["payload_hex"].get<std::string>(), Hex(frame.substr(8))) << (*m)["type"];
}

class ProtocolContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream in(kFile);
    ASSERT_TRUE(in.good()) << kFile;
    file_ = Json::parse(in);
    dir_ = testing::MakeTempDir("kope-protocol-contract");
  }
  void TearDown() override {
    if (Regenerating() && !HasFailure()) std::ofstream(kFile) << file_.dump(1) << "\n";
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  uint64_t arena_bytes() const { return file_["constants"]["arena_bytes"].get<uint64_t>(); }

  Json file_;
  std::filesystem::path dir_;
};

TEST_F(ProtocolContractTest, TypesAndConstantsAreTheFilesOnes) {
  for (const Json& m : file_["messages"]) {
    EXPECT_EQ(rp::MessageTypeName(m["number"].get<uint32_t>()), m["type"].get<std::string>());
  }
  const Json& k = file_["constants"];
  for (const auto& [dtype, entry] : k["dtypes"].items()) {
    EXPECT_EQ(rp::ElementBytes(std::stoi(dtype)), entry[1].get<size_t>()) << dtype;
  }
  EXPECT_EQ(rp::ElementBytes(static_cast<int>(k["dtypes"].size())), 0u);
  EXPECT_EQ(static_cast<uint32_t>(rp::ReplyStatus::kOk), k["reply_status"]["ok"].get<uint32_t>());
  EXPECT_EQ(static_cast<uint32_t>(rp::ReplyStatus::kKernelError),
            k["reply_status"]["kernel_error"].get<uint32_t>());
  EXPECT_EQ(static_cast<uint32_t>(rp::ReplyStatus::kLoadError),
            k["reply_status"]["load_error"].get<uint32_t>());
  EXPECT_EQ(static_cast<uint32_t>(rp::ReplyStatus::kBadRequest),
            k["reply_status"]["bad_request"].get<uint32_t>());
  EXPECT_EQ(rp::kMaxPayloadBytes, k["max_payload_bytes"].get<uint32_t>());
  EXPECT_EQ(rp::kMaxTensorsPerCall, k["max_tensors_per_call"].get<uint32_t>());
  EXPECT_EQ(rp::kMaxRotation, k["max_rotation"].get<uint32_t>());
  EXPECT_EQ(rp::kMaxTimedCalls, k["max_timed_calls"].get<uint32_t>());
  EXPECT_EQ(KOPE_MAX_DIMS, k["max_dims"].get<int>());
}

TEST_F(ProtocolContractTest, HelloAndReplyAreWrittenAndReadAsTheFileHasThem) {
  for (Json& m : file_["messages"]) {
    const Json& f = m["fields"];
    rp::Writer w;
    if (m["type"] == "hello") {
      rp::WriteHello({f["seccomp"].get<bool>(), f["rlimits"].get<bool>(),
                      f["notes"].get<std::vector<std::string>>()},
                     &w);
    } else if (m["type"] == "reply") {
      rp::WriteReply(
          {static_cast<rp::ReplyStatus>(f["status"].get<uint32_t>()), f["rc"].get<int32_t>(),
           f["flushed_bytes"].get<uint64_t>(), f["copy_ns"].get<uint64_t>(),
           f["ns"].get<std::vector<int64_t>>(), f["message"].get<std::string>()},
          &w);
    } else {
      continue;
    }
    const auto type = static_cast<rp::MessageType>(m["number"].get<uint32_t>());
    Settle(&m, FrameBytes(type, w.payload()));
    if (Regenerating()) continue;
    const std::string payload = Unhex(m["payload_hex"].get<std::string>());
    if (m["type"] == "hello") {
      Result<rp::Hello> hello = rp::ReadHello(payload);
      ASSERT_TRUE(hello.ok());
      EXPECT_EQ(hello->seccomp, f["seccomp"].get<bool>());
      EXPECT_EQ(hello->rlimits, f["rlimits"].get<bool>());
      EXPECT_EQ(hello->notes, f["notes"].get<std::vector<std::string>>());
    } else {
      Result<rp::Reply> reply = rp::ReadReply(payload);
      ASSERT_TRUE(reply.ok());
      EXPECT_EQ(static_cast<uint32_t>(reply->status), f["status"].get<uint32_t>());
      EXPECT_EQ(reply->rc, f["rc"].get<int32_t>());
      EXPECT_EQ(reply->flushed_bytes, f["flushed_bytes"].get<uint64_t>());
      EXPECT_EQ(reply->copy_ns, f["copy_ns"].get<uint64_t>());
      EXPECT_EQ(reply->ns, f["ns"].get<std::vector<int64_t>>());
      EXPECT_EQ(reply->message, f["message"].get<std::string>());
    }
  }
}

TEST_F(ProtocolContractTest, KopeRunnerReadsTheCallSpecsOfCallAndTime) {
  if (Regenerating()) GTEST_SKIP() << "reads what the other tests write";
  for (const Json& m : file_["messages"]) {
    const Json& f = m["fields"];
    const std::string payload = Unhex(m["payload_hex"].get<std::string>());
    rp::Reader r(payload);
    std::vector<Json> calls;
    if (m["type"] == "call") {
      calls = {f["call"]};
    } else if (m["type"] == "time") {
      uint32_t count, n;
      uint8_t flush;
      ASSERT_TRUE(r.U32(&count) && r.U8(&flush) && r.U32(&n));
      EXPECT_EQ(count, f["count"].get<uint32_t>());
      EXPECT_EQ(flush != 0, f["flush"].get<bool>());
      calls = f["rotation"].get<std::vector<Json>>();
      ASSERT_EQ(n, calls.size());
    } else {
      continue;
    }
    for (const Json& call : calls) {
      Result<CallSpec> got = rp::ReadCallSpec(&r, arena_bytes());
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ExpectSameCall(CallOf(call), *got);
    }
    EXPECT_TRUE(r.AtEnd()) << m["type"];
  }
}

// The Runner call that sends `m`; the reply's message is the frame the echo child received.
Result<CallOutcome> Send(Runner& runner, const Json& m, const SharedArena& arena,
                         const std::filesystem::path& kernel, int* shared_fd) {
  const Json& f = m["fields"];
  const std::string type = m["type"];
  const double t = 30;
  if (type == "load") return runner.Load(kernel, t);
  if (type == "map") return runner.MapArena(arena, t, f["copies"].get<bool>());
  if (type == "call") return runner.Call(CallOf(f["call"]), t);
  if (type == "time") {
    std::vector<CallSpec> rotation;
    for (const Json& c : f["rotation"]) rotation.push_back(CallOf(c));
    return runner.Time(rotation, f["count"].get<int>(), f["flush"].get<bool>(), t);
  }
  if (type == "share")
    return runner.ShareArena(f["bytes"].get<uint64_t>(), f["token"].get<uint64_t>(), shared_fd, t);
  if (type == "map_shared") return runner.MapSharedArena(*shared_fd, f["bytes"].get<uint64_t>(), t);
  if (type == "ref_call")
    return runner.ReferenceCall(CallOf(f["call"]), f["summarize"].get<bool>(), t);
  if (type == "draw") {
    std::vector<Runner::DrawSpec> specs;
    for (const Json& d : f["distributions"]) {
      specs.push_back({d["kind"].get<uint8_t>(), Number(d["mean"]), Number(d["stddev"]),
                       Number(d["low"]), Number(d["high"]), Number(d["low_exp"]),
                       Number(d["high_exp"]), d["num_distinct"].get<int32_t>()});
    }
    return runner.Draw(CallOf(f["call"]), f["seed"].get<uint64_t>(),
                       static_cast<Runner::DrawMode>(f["mode"].get<uint8_t>()), specs, t);
  }
  if (type == "poison") {
    std::vector<Runner::PoisonSpan> spans;
    for (const Json& s : f["spans"]) {
      spans.push_back({{s["offset"].get<uint64_t>(), s["bytes"].get<uint64_t>()},
                       Unhex(s["element"].get<std::string>())});
    }
    return runner.Poison(spans, Unhex(f["guard"].get<std::string>()), t);
  }
  if (type == "check") {
    std::vector<std::pair<double, double>> tolerances;
    for (const Json& p : f["tolerances"]) tolerances.emplace_back(Number(p[0]), Number(p[1]));
    return runner.Check(CallOf(f["call"]), tolerances, t);
  }
  return Status::InvalidArgument("not a request the parent sends: " + type);
}

TEST_F(ProtocolContractTest, TheParentSendsEveryRequestAsTheFileHasIt) {
  RunnerOptions options;
  options.runner_exe = kope::testing::BinaryDir() + "/src/runner/kope_protocol_echo";
  options.sandbox.scratch_dir = dir_ / "scratch";
  options.sandbox.use_bubblewrap = false;
  std::filesystem::create_directory(options.sandbox.scratch_dir);
  const std::filesystem::path kernel = dir_ / "kernel.so";
  std::ofstream(kernel) << "not loaded: the echo child only reports the request";
  Result<std::unique_ptr<SharedArena>> arena = SharedArena::Create(arena_bytes());
  ASSERT_TRUE(arena.ok()) << arena.status().ToString();
  Result<std::unique_ptr<Runner>> runner = Runner::Start(options);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  int shared_fd = -1;
  Json* quit = nullptr;
  for (Json& m : file_["messages"]) {
    const std::string type = m["type"];
    if (type == "hello" || type == "reply") continue;
    if (type == "quit") {
      quit = &m;
      continue;
    }
    SCOPED_TRACE(type);
    Result<CallOutcome> out = Send(**runner, m, **arena, kernel, &shared_fd);
    ASSERT_TRUE(out.ok() && out->ok()) << (out.ok() ? out->detail : out.status().ToString());
    std::string frame = Unhex(out->detail);
    if (type == "load") {  // the path is this run's: the file's path in the same frame
      rp::Writer sent, filed;
      sent.String((options.sandbox.scratch_dir / "kernels" / "kernel-1.so").string());
      filed.String(m["fields"]["path"].get<std::string>());
      EXPECT_EQ(Hex(frame), Hex(FrameBytes(rp::MessageType::kLoad, sent.payload())));
      frame = FrameBytes(rp::MessageType::kLoad, filed.payload());
    }
    Settle(&m, frame);
  }
  if (shared_fd >= 0) close(shared_fd);
  runner->reset();  // sends QUIT; the echo child logs it and exits
  ASSERT_NE(quit, nullptr);
  std::ifstream log(options.sandbox.scratch_dir / "runner.log");
  std::string line, last;
  while (std::getline(log, line)) last = line;
  Settle(quit, Unhex(last));
}

}  // namespace
}  // namespace kope
