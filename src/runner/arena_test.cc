#include "kope/runner/arena.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

namespace kope {
namespace {

TEST(SharedArenaTest, RoundsUpToPagesAndStartsZeroed) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto arena = SharedArena::Create(page + 1);
  ASSERT_TRUE(arena.ok()) << arena.status().ToString();
  EXPECT_EQ((*arena)->size(), 2 * page);
  for (size_t i = 0; i < (*arena)->size(); ++i) ASSERT_EQ((*arena)->data()[i], 0) << i;
  auto exact = SharedArena::Create(page);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ((*exact)->size(), page);
}

TEST(SharedArenaTest, OtherMappingsOfTheDescriptorShareThePages) {
  auto arena = SharedArena::Create(8192);
  ASSERT_TRUE(arena.ok());
  SharedArena& a = **arena;
  void* other = mmap(nullptr, a.size(), PROT_READ | PROT_WRITE, MAP_SHARED, a.fd(), 0);
  ASSERT_NE(other, MAP_FAILED);
  a.data()[100] = 42;
  EXPECT_EQ(static_cast<uint8_t*>(other)[100], 42);
  static_cast<uint8_t*>(other)[5000] = 7;
  EXPECT_EQ(a.data()[5000], 7);
  munmap(other, a.size());
}

TEST(SharedArenaTest, DescriptorIsSealedAndCloseOnExec) {
  auto arena = SharedArena::Create(4096);
  ASSERT_TRUE(arena.ok());
  const int fd = (*arena)->fd();
  EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  const int seals = fcntl(fd, F_GET_SEALS);
  EXPECT_NE(seals & F_SEAL_SHRINK, 0);
  EXPECT_NE(seals & F_SEAL_GROW, 0);
  // A runner holding the descriptor cannot shrink the file under the parent's mapping.
  EXPECT_NE(ftruncate(fd, 0), 0);
  EXPECT_EQ(errno, EPERM);
}

TEST(SharedArenaTest, RejectsEmptyAndAbsurdSizes) {
  EXPECT_EQ(SharedArena::Create(0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(SharedArena::Create(~size_t{0}).ok());
}

}  // namespace
}  // namespace kope
