// ParallelFor: splitting one large memory-bound loop over the machine's cores.
//
// The evaluator draws, hashes, poisons and compares tensors of up to billions of elements
// per call; one core does that far below the memory's bandwidth. ParallelFor cuts [0, count) into
// contiguous pieces of at least `grain` elements and runs fn(begin, end) for each on up to
// HardwareThreads() threads (the calling thread among them), returning when all are done.
// Below two grains it runs fn(0, count) on the calling thread. Pieces are disjoint and cover
// the range exactly once; which thread runs which piece is unspecified, so fn must not
// depend on it (results that must not depend on the thread count are computed per fixed
// block by the caller, e.g. with ForEachBlock below). Thread-safe; fn must be too.
#ifndef KOPE_BASE_PARALLEL_H_
#define KOPE_BASE_PARALLEL_H_

#include <cstddef>
#include <functional>

namespace kope {

// Threads ParallelFor uses at most: std::thread::hardware_concurrency(), at least 1,
// at most 64.
int HardwareThreads();

void ParallelFor(size_t count, size_t grain, const std::function<void(size_t, size_t)>& fn);

// Runs fn(block, begin, end) for every block of `block_size` elements of [0, count) (the last
// may be shorter), in parallel. Block boundaries depend only on count and block_size.
void ForEachBlock(size_t count, size_t block_size,
                  const std::function<void(size_t, size_t, size_t)>& fn);

// memcpy of large ranges split over the threads (one memcpy below 16 MiB).
void ParallelMemcpy(void* dst, const void* src, size_t bytes);

}  // namespace kope

#endif  // KOPE_BASE_PARALLEL_H_
