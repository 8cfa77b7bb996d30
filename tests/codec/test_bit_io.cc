// Bit fields of every length 0..64 packed by BitPacker read back exactly with BitReader, and the
// packed size is the bit count rounded up to bytes.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "dcr/codec/bit_io.h"

namespace dcr {
namespace {

TEST(BitIo, FieldsOfEveryLengthReadBackExactly) {
  std::mt19937_64 rng(11);
  std::vector<std::pair<uint64_t, unsigned>> fields;
  uint64_t total = 0;
  for (int i = 0; i < 20000; ++i) {
    const unsigned count = i < 65 ? static_cast<unsigned>(i) : static_cast<unsigned>(rng() % 65);
    const uint64_t value = count == 64 ? rng() : rng() & ((1ull << count) - 1);
    fields.push_back({value, count});
    total += count;
  }
  std::vector<uint8_t> buffer(BitPacker::capacity(total));
  BitPacker packer(buffer.data());
  for (const auto& [value, count] : fields) packer.put(value, count);
  EXPECT_EQ(packer.bits(), total);
  const size_t bytes = packer.bytes();
  ASSERT_EQ(bytes, (total + 7) / 8);
  BitReader reader(buffer.data(), bytes);
  for (const auto& [value, count] : fields) {
    uint64_t got = 0;
    ASSERT_TRUE(reader.get(count, &got));
    ASSERT_EQ(got, value) << count << " bits";
  }
  EXPECT_TRUE(reader.at_end());
}

}  // namespace
}  // namespace dcr
