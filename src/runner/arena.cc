#include "kope/runner/arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

namespace kope {

Result<std::unique_ptr<SharedArena>> SharedArena::Create(size_t bytes) {
  if (bytes == 0) return Status::InvalidArgument("an arena needs at least one byte");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t rounded;
  if (__builtin_add_overflow(bytes, page - 1, &rounded)) {
    return Status::InvalidArgument("arena size overflows");
  }
  rounded -= rounded % page;
  if (rounded > static_cast<size_t>(std::numeric_limits<off_t>::max())) {
    return Status::InvalidArgument("arena size too large");
  }
  int fd = memfd_create("kope-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Status::IoError(std::string("memfd_create: ") + std::strerror(errno));
  auto fail = [fd](const char* what) {
    Status s = Status::IoError(std::string(what) + ": " + std::strerror(errno));
    close(fd);
    return s;
  };
  if (ftruncate(fd, static_cast<off_t>(rounded)) != 0) return fail("ftruncate");
  // The runner gets this descriptor: it must not be able to shrink the file
  // under the parent's mapping (the parent would die of SIGBUS) or grow it.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return fail("sealing the arena");
  }
  void* data = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) return fail("mmap");
  return std::unique_ptr<SharedArena>(new SharedArena(fd, static_cast<uint8_t*>(data), rounded));
}

SharedArena::~SharedArena() {
  munmap(data_, size_);
  close(fd_);
}

}  // namespace kope
