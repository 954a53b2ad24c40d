// A stand-in for kope-runner that answers every request with what it received: it takes
// kope-runner's arguments, sends a hello, and replies OK to each frame with the frame's bytes
// (header and payload) in hex as the reply's message; a SHARE reply carries a memfd of the
// asked size. It also prints each frame's hex on stdout (the runner's log), QUIT included.
// protocol_contract_test drives a real Runner against it to see the bytes the parent sends.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "protocol.h"

namespace rp = kope::runner_protocol;

namespace {

std::string HexOf(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

int SharedMemory(std::string_view payload) {
  uint64_t bytes = 0;
  if (payload.size() >= sizeof(bytes)) std::memcpy(&bytes, payload.data(), sizeof(bytes));
  int fd = memfd_create("kope-echo-shared", MFD_CLOEXEC);
  if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  int control_fd = -1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string_view(argv[i]) == "--control-fd") control_fd = std::atoi(argv[i + 1]);
  }
  if (control_fd < 0) return 2;
  rp::Writer hello;
  rp::WriteHello(rp::Hello{false, false, {"protocol echo"}}, &hello);
  if (!rp::WriteFrame(control_fd, rp::MessageType::kHello, hello.payload(), -1, std::nullopt)
           .ok()) {
    return 1;
  }
  while (true) {
    kope::Result<rp::Frame> frame = rp::ReadFrame(control_fd, std::nullopt, -1);
    if (!frame.ok()) return 0;
    for (int fd : frame->fds) close(fd);
    const uint32_t header[2] = {static_cast<uint32_t>(frame->type),
                                static_cast<uint32_t>(frame->payload.size())};
    const std::string bytes =
        std::string(reinterpret_cast<const char*>(header), sizeof(header)) + frame->payload;
    std::printf("%s\n", HexOf(bytes).c_str());
    std::fflush(stdout);
    if (frame->type == rp::MessageType::kQuit) return 0;
    rp::Reply reply;
    reply.message = HexOf(bytes);
    rp::Writer w;
    rp::WriteReply(reply, &w);
    const int fd = frame->type == rp::MessageType::kShare ? SharedMemory(frame->payload) : -1;
    const bool sent =
        rp::WriteFrame(control_fd, rp::MessageType::kReply, w.payload(), fd, std::nullopt).ok();
    if (fd >= 0) close(fd);
    if (!sent) return 1;
  }
}
