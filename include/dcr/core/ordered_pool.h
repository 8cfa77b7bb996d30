// Work on several threads, results taken in order: item i is made by work(i, worker) on one of
// `threads` workers and handed to take(i) on the calling thread, strictly in index order, as soon
// as it and every item before it are done. Workers run at most `ahead` items past the one the
// caller waits for, so a slow taker bounds the memory held in finished items.
//
// The trainer's frames go this way: while one worker codes frame k's entropy stage, another scans
// frame k+1, and the caller sends frame k the moment it is done.
#pragma once

#include <cstddef>
#include <functional>

#include "dcr/core/status.h"

namespace dcr {

using PoolWork = std::function<Status(size_t item, int worker)>;
using PoolTake = std::function<Status(size_t item)>;

// With threads <= 1 everything runs on the calling thread (worker 0). The first failure, in item
// order, is returned; no item after a failed one is taken, and no new item is started.
Status run_ordered(size_t items, int threads, size_t ahead, const PoolWork& work, const PoolTake& take);

}  // namespace dcr
