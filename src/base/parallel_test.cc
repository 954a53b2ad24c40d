#include "kope/base/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace kope {
namespace {

TEST(ParallelForTest, CoversTheRangeExactlyOnce) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{100003}}) {
    std::vector<std::atomic<int>> hits(count);
    ParallelFor(count, 100, [&](size_t begin, size_t end) {
      ASSERT_LE(begin, end);
      ASSERT_LE(end, count);
      for (size_t i = begin; i < end; ++i) hits[i]++;
    });
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(hits[i].load(), 1) << count << " " << i;
  }
}

TEST(ParallelForTest, SmallRangesRunOnTheCallingThread) {
  std::set<std::thread::id> ids;
  std::mutex mu;
  ParallelFor(150, 100, [&](size_t, size_t) {
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(*ids.begin(), std::this_thread::get_id());
}

TEST(ParallelForTest, LargeRangesUseEveryThread) {
  std::set<std::thread::id> ids;
  std::mutex mu;
  ParallelFor(1000000, 1000, [&](size_t, size_t) {
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ids.size(), static_cast<size_t>(HardwareThreads()));
}

TEST(ForEachBlockTest, BlocksAreFixedByCountAndSize) {
  std::vector<std::pair<size_t, size_t>> blocks(4);
  ForEachBlock(1000, 300, [&](size_t b, size_t begin, size_t end) { blocks[b] = {begin, end}; });
  EXPECT_EQ(blocks, (std::vector<std::pair<size_t, size_t>>{
                        {0, 300}, {300, 600}, {600, 900}, {900, 1000}}));
}

TEST(ParallelMemcpyTest, CopiesEveryByte) {
  for (size_t bytes : {size_t{0}, size_t{100}, size_t{(40u << 20) + 3}}) {
    std::vector<uint8_t> src(bytes), dst(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
    ParallelMemcpy(dst.data(), src.data(), bytes);
    EXPECT_EQ(dst, src) << bytes;
  }
}

}  // namespace
}  // namespace kope
