// SharedArena: memory shared between the trusted parent and one runner.
//
// An anonymous memfd mapped MAP_SHARED. The parent writes inputs and poisons
// outputs here, the runner maps the same pages (the fd is passed over the
// control socket) and hands pointers into it to the kernel. Nothing is written
// to disk. Not thread-safe; owned by one evaluation.
#ifndef KOPE_RUNNER_ARENA_H_
#define KOPE_RUNNER_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kope/base/status.h"

namespace kope {

class SharedArena {
 public:
  // `bytes` is rounded up to whole pages; the memory starts zeroed.
  static Result<std::unique_ptr<SharedArena>> Create(size_t bytes);
  ~SharedArena();
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }

 private:
  SharedArena(int fd, uint8_t* data, size_t size) : fd_(fd), data_(data), size_(size) {}
  int fd_;
  uint8_t* data_;
  size_t size_;
};

}  // namespace kope

#endif  // KOPE_RUNNER_ARENA_H_
