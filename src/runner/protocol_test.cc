#include "protocol.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "runner_test_support.h"

namespace kope::runner_protocol {
namespace {

using kope::testing::Slot;

TEST(SlotRangeTest, ContiguousStridedScalarAndEmpty) {
  auto r = SlotRange(Slot(KOPE_F32, {3, 4}, 16), 1024);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->offset, 16u);
  EXPECT_EQ(r->bytes, 48u);
  r = SlotRange(Slot(KOPE_F64, {3, 4}, 0, {8, 2}), 1024);  // last element at 2*8 + 3*2 = 22
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes, 23u * 8);
  r = SlotRange(Slot(KOPE_BF16, {}, 2), 4);  // a scalar
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes, 2u);
  r = SlotRange(Slot(KOPE_I32, {5, 0}, 1024), 1024);  // empty, at the very end
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes, 0u);
  r = SlotRange(Slot(KOPE_I64, {4}, 992), 1024);  // exactly fits
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes, 32u);
}

TEST(SlotRangeTest, RejectsWhatDoesNotFit) {
  EXPECT_FALSE(SlotRange(Slot(KOPE_I64, {5}, 992), 1024).ok());             // one past the end
  EXPECT_FALSE(SlotRange(Slot(KOPE_F32, {4}, 2), 1024).ok());               // misaligned
  EXPECT_FALSE(SlotRange(Slot(KOPE_F32, {-1}, 0), 1024).ok());              // negative dim
  EXPECT_FALSE(SlotRange(Slot(KOPE_F32, {4}, 0, {-1}), 1024).ok());         // negative stride
  EXPECT_FALSE(SlotRange(Slot(KOPE_F32, {4, 4}, 0, {1}), 1024).ok());       // rank mismatch
  EXPECT_FALSE(SlotRange(Slot(static_cast<DType>(7), {4}, 0), 1024).ok());  // dtype
  EXPECT_FALSE(SlotRange(Slot(KOPE_F32, {1, 1, 1, 1, 1, 1, 1, 1, 1}, 0), 1024).ok());
  EXPECT_FALSE(SlotRange(Slot(KOPE_F32, {2}, 0, {int64_t{1} << 62}), ~uint64_t{0}).ok());
  EXPECT_FALSE(
      SlotRange(Slot(KOPE_F32, {int64_t{1} << 40, int64_t{1} << 40}, 0), ~uint64_t{0}).ok());
  EXPECT_FALSE(SlotRange(Slot(KOPE_F32, {1}, ~uint64_t{0} - 3), ~uint64_t{0}).ok());
}

TEST(CallSpecTest, RoundTripsAndValidates) {
  CallSpec call;
  call.inputs = {Slot(KOPE_F32, {2, 3}, 0), Slot(KOPE_I64, {}, 64)};
  call.outputs = {Slot(KOPE_F16, {3, 2}, 128, {1, 3})};
  Writer w;
  WriteCallSpec(call, &w);
  Reader r(w.payload());
  auto back = ReadCallSpec(&r, 4096);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(r.AtEnd());
  ASSERT_EQ(back->inputs.size(), 2u);
  ASSERT_EQ(back->outputs.size(), 1u);
  EXPECT_EQ(back->inputs[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back->inputs[1].dtype, KOPE_I64);
  EXPECT_EQ(back->inputs[1].offset, 64u);
  EXPECT_EQ(back->outputs[0].strides, (std::vector<int64_t>{1, 3}));
  // The same bytes against a smaller arena fail validation.
  Reader small(w.payload());
  EXPECT_FALSE(ReadCallSpec(&small, 100).ok());
  // Every truncation fails cleanly.
  for (size_t n = 0; n < w.payload().size(); ++n) {
    Reader cut(std::string_view(w.payload()).substr(0, n));
    EXPECT_FALSE(ReadCallSpec(&cut, 4096).ok()) << n;
  }
}

TEST(CallSpecTest, RejectsAbsurdCountsAndUnknownDtypes) {
  Writer w;
  w.U32(1000);
  w.U32(0);
  Reader r(w.payload());
  EXPECT_FALSE(ReadCallSpec(&r, 4096).ok());
  Writer bad_dtype;
  bad_dtype.U32(1);
  bad_dtype.U32(0);
  bad_dtype.I32(17);
  bad_dtype.U32(0);
  bad_dtype.U32(0);
  bad_dtype.U64(0);
  Reader r2(bad_dtype.payload());
  auto spec = ReadCallSpec(&r2, 4096);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("dtype"), std::string::npos);
}

TEST(ReplyTest, RoundTripsAndRejectsGarbage) {
  Reply reply;
  reply.status = ReplyStatus::kKernelError;
  reply.rc = -3;
  reply.flushed_bytes = 12345;
  reply.copy_ns = 678;
  reply.ns = {5, 6, 7};
  reply.message = "why";
  Writer w;
  WriteReply(reply, &w);
  auto back = ReadReply(w.payload());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->status, ReplyStatus::kKernelError);
  EXPECT_EQ(back->rc, -3);
  EXPECT_EQ(back->flushed_bytes, 12345u);
  EXPECT_EQ(back->copy_ns, 678u);
  EXPECT_EQ(back->ns, (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(back->message, "why");
  EXPECT_FALSE(ReadReply(std::string_view(w.payload()).substr(0, w.payload().size() - 1)).ok());
  EXPECT_FALSE(ReadReply(w.payload() + "x").ok());
  Writer bad;
  bad.U32(99);
  EXPECT_FALSE(ReadReply(bad.payload()).ok());
}

TEST(HelloTest, RoundTrips) {
  Hello hello{true, false, {"first note", "second note"}};
  Writer w;
  WriteHello(hello, &w);
  auto back = ReadHello(w.payload());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->seccomp);
  EXPECT_FALSE(back->rlimits);
  EXPECT_EQ(back->notes, (std::vector<std::string>{"first note", "second note"}));
}

class FrameTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv_), 0); }
  void TearDown() override {
    for (int fd : sv_) {
      if (fd >= 0) close(fd);
    }
  }
  static Deadline Soon() { return std::chrono::steady_clock::now() + std::chrono::seconds(5); }
  int sv_[2] = {-1, -1};
};

TEST_F(FrameTest, CarriesPayloadAndDescriptor) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  std::string big(300000, 'k');  // larger than a socket buffer: sent while read
  ASSERT_TRUE(WriteFrame(sv_[0], MessageType::kMap, "abc", pipe_fds[1], Soon()).ok());
  close(pipe_fds[1]);
  auto frame = ReadFrame(sv_[1], Soon(), -1);
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  EXPECT_EQ(frame->type, MessageType::kMap);
  EXPECT_EQ(frame->payload, "abc");
  ASSERT_EQ(frame->fds.size(), 1u);
  ASSERT_EQ(write(frame->fds[0], "z", 1), 1);
  char c = 0;
  ASSERT_EQ(read(pipe_fds[0], &c, 1), 1);
  EXPECT_EQ(c, 'z');
  EXPECT_NE(fcntl(frame->fds[0], F_GETFD) & FD_CLOEXEC, 0);
  close(frame->fds[0]);
  close(pipe_fds[0]);

  std::thread reader([&] {
    auto f = ReadFrame(sv_[1], Soon(), -1);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->payload, big);
  });
  EXPECT_TRUE(WriteFrame(sv_[0], MessageType::kCall, big, -1, Soon()).ok());
  reader.join();
}

TEST_F(FrameTest, DeadlineAndClosedPeerAndWatchedDescriptor) {
  auto frame =
      ReadFrame(sv_[1], std::chrono::steady_clock::now() + std::chrono::milliseconds(50), -1);
  EXPECT_EQ(frame.status().code(), StatusCode::kDeadlineExceeded);
  int watched[2];
  ASSERT_EQ(pipe2(watched, O_CLOEXEC), 0);
  ASSERT_EQ(write(watched[1], "x", 1), 1);
  frame = ReadFrame(sv_[1], Soon(), watched[0]);
  EXPECT_EQ(frame.status().code(), StatusCode::kUnavailable);
  close(watched[0]);
  close(watched[1]);
  close(sv_[0]);
  sv_[0] = -1;
  frame = ReadFrame(sv_[1], Soon(), -1);
  EXPECT_EQ(frame.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(WriteFrame(sv_[1], MessageType::kQuit, "", -1, Soon()).code(),
            StatusCode::kUnavailable);
}

TEST_F(FrameTest, MalformedHeaderIsCorruption) {
  const uint32_t header[2] = {777, 0};
  ASSERT_EQ(write(sv_[0], header, sizeof(header)), static_cast<ssize_t>(sizeof(header)));
  EXPECT_EQ(ReadFrame(sv_[1], Soon(), -1).status().code(), StatusCode::kCorruption);
  const uint32_t huge[2] = {static_cast<uint32_t>(MessageType::kReply), 0xffffffffu};
  ASSERT_EQ(write(sv_[0], huge, sizeof(huge)), static_cast<ssize_t>(sizeof(huge)));
  EXPECT_EQ(ReadFrame(sv_[1], Soon(), -1).status().code(), StatusCode::kCorruption);
}

TEST_F(FrameTest, CredentialsNameTheSender) {
  const int one = 1;
  ASSERT_EQ(setsockopt(sv_[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
  ASSERT_TRUE(WriteFrame(sv_[0], MessageType::kHello, "", -1, Soon()).ok());
  auto frame = ReadFrame(sv_[1], Soon(), -1);
  ASSERT_TRUE(frame.ok());
  EXPECT_EQ(frame->sender_pid, getpid());
}

}  // namespace
}  // namespace kope::runner_protocol
