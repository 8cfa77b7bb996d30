// Internal to the codec: the pass that applies a delta frame's changes to its box (the runs of
// elements it lies in): the changes of a cache-sized block are decoded while the block's bytes are
// fetched, then the block is scattered, keeping the old bits in the words, and hashed while it is in
// cache; and the way back, should the result miss.
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/codec/value_mode.h"
#include "dcr/core/hash.h"
#include "dcr/core/status.h"
#include "src/codec/decode/change_reader.h"
#include "src/codec/decode/element_run.h"

namespace dcr {

// The box's hash after the scatter, and before it when asked for (see FrameDecoder::apply).
struct BoxHashes {
  bool with_before = false;
  uint64_t before = 0;
  uint64_t after = 0;
};

// Decodes and scatters the `changed` changes of `changes` into `runs`, all of them hashed as one
// concatenation (after, and before where hashes->with_before); *applied counts the changes
// scattered, also on failure. `before`, `after` and `local` are scratch.
Status scatter_swap_and_hash(const std::vector<ElementRun>& runs, unsigned width, ValueMode mode,
                             ChangeReader* changes, uint32_t* positions, uint64_t changed, uint64_t* words,
                             BoxHashes* hashes, uint64_t* applied, Hasher* before, Hasher* after,
                             std::vector<uint32_t>* local);

// Puts the first n changes' old bits (in the words, after a scatter_swap) back.
void scatter_back(const std::vector<ElementRun>& runs, unsigned width, const uint32_t* positions, uint64_t n,
                  uint64_t* words, std::vector<uint32_t>* local);

// XXH3 of the runs' bits, concatenated.
uint64_t runs_hash(const std::vector<ElementRun>& runs, unsigned width, Hasher* hasher);

}  // namespace dcr
