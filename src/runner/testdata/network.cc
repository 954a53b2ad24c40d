// Tries to open sockets. Results (i64 output), 0 for success or the errno:
//   [0] AF_INET stream   [1] AF_INET6 datagram   [2] AF_NETLINK   [3] AF_PACKET
//   [4] AF_UNIX stream (allowed)   [5] socketpair AF_UNIX (allowed)
//   [6] AF_INET through the x32 system call ABI (-1 for any failure)
//   [7] AF_INET through int 0x80 (the i386 ABI; -1 for any failure)
#include <errno.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kope/kernel.h"

namespace {

int64_t Open(int domain, int type) {
  int fd = socket(domain, type, 0);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor*, int, kope_tensor* outputs, int, void*) {
  int64_t* r = static_cast<int64_t*>(outputs[0].data);
  r[0] = Open(AF_INET, SOCK_STREAM);
  r[1] = Open(AF_INET6, SOCK_DGRAM);
  r[2] = Open(AF_NETLINK, SOCK_RAW);
  r[3] = Open(AF_PACKET, SOCK_RAW);
  r[4] = Open(AF_UNIX, SOCK_STREAM);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
    close(sv[0]);
    close(sv[1]);
    r[5] = 0;
  } else {
    r[5] = errno;
  }
  long x32 = syscall(0x40000000L | SYS_socket, AF_INET, SOCK_STREAM, 0);
  if (x32 >= 0) close(static_cast<int>(x32));
  r[6] = x32 >= 0 ? 0 : -1;
  long i386 = 0;
  // i386 socket(2) is system call 359.
  asm volatile("int $0x80"
               : "=a"(i386)
               : "a"(359L), "b"(long{AF_INET}), "c"(long{SOCK_STREAM}), "d"(0L)
               : "memory", "r8", "r9", "r10", "r11");
  if (i386 >= 0) close(static_cast<int>(i386));
  r[7] = i386 >= 0 ? 0 : -1;
  return 0;
}
