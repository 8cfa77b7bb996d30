// The transport test suite, written once and run on every backend: by threads over a loopback group
// (tests/transport/test_loopback.cc) and by MPI ranks over "mpi" and "ucx"
// (tests/mpi/mpi_test_transport.cc). Each case runs on every rank with that rank's Transport and a
// barrier across the group. Cases use EXPECT (never ASSERT) so that a failing rank still reaches
// every barrier, and each ends with finish(): all sends complete, then the barrier.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dcr/transport/rate_limit.h"
#include "dcr/transport/transport.h"

namespace dcr::test {

using Barrier = std::function<void()>;

constexpr double kPatience = 60.0;  // seconds a receive in a passing run never comes close to

// Deterministic bytes for message `index` from `sender` on `channel`.
inline uint64_t message_seed(int sender, uint32_t channel, int index) {
  return (static_cast<uint64_t>(sender) << 40) ^ (static_cast<uint64_t>(channel) << 20) ^
         static_cast<uint64_t>(index);
}

inline uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline std::vector<uint8_t> pattern(size_t size, uint64_t seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t word = 0; word * 8 < size; ++word) {
    const uint64_t x = mix(seed + word);
    for (size_t i = word * 8; i < size && i < word * 8 + 8; ++i) bytes[i] = static_cast<uint8_t>(x >> ((i & 7) * 8));
  }
  return bytes;
}

inline SharedBytes pattern_message(size_t size, uint64_t seed) {
  return std::make_shared<const std::vector<uint8_t>>(pattern(size, seed));
}

// Checks one received message against what `sender` sent as message `index`; false on mismatch.
inline bool check_message(const Message& m, int sender, uint32_t channel, int index, size_t size) {
  EXPECT_EQ(m.peer, sender);
  EXPECT_EQ(m.channel, channel);
  EXPECT_EQ(m.bytes.size(), size) << "message " << index << " from rank " << sender;
  const bool same = m.bytes == pattern(size, message_seed(sender, channel, index));
  EXPECT_TRUE(same) << "content of message " << index << " from rank " << sender << " on channel "
                    << channel << " differs (lost, reordered or corrupted)";
  return m.peer == sender && m.channel == channel && same;
}

inline int next_rank(const Transport& t) { return (t.rank() + 1) % t.size(); }
inline int previous_rank(const Transport& t) { return (t.rank() + t.size() - 1) % t.size(); }

inline void finish(Transport& t, const Barrier& barrier) {
  const Status s = t.wait_sends(kPatience);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  barrier();
}

// Each rank sends messages of 0 B, 1 B, 4 KiB and 8 MiB to the next rank and checks the previous
// rank's.
inline void ring_exchange(Transport& t, const Barrier& barrier) {
  const std::vector<size_t> sizes = {0, 1, 4096, 8u << 20};
  const uint32_t channel = 1;
  for (int k = 0; k < static_cast<int>(sizes.size()); ++k) {
    const Status s = t.send(next_rank(t), channel, pattern_message(sizes[k], message_seed(t.rank(), channel, k)));
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  Message m;
  for (int k = 0; k < static_cast<int>(sizes.size()); ++k) {
    const Status s = t.receive(previous_rank(t), channel, &m, kPatience);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    if (!s.is_ok() || !check_message(m, previous_rank(t), channel, k, sizes[k])) break;
  }
  finish(t, barrier);
}

// 200 messages of 64 KiB posted at once to the next rank arrive complete and in order.
inline void many_in_flight(Transport& t, const Barrier& barrier) {
  const int count = 200;
  const size_t size = 64u << 10;
  const uint32_t channel = 2;
  for (int k = 0; k < count; ++k) {
    const Status s = t.send(next_rank(t), channel, pattern_message(size, message_seed(t.rank(), channel, k)));
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  Message m;
  for (int k = 0; k < count; ++k) {
    const Status s = t.receive(previous_rank(t), channel, &m, kPatience);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    if (!s.is_ok() || !check_message(m, previous_rank(t), channel, k, size)) break;
  }
  finish(t, barrier);
}

// Every rank (rank 0 included) sends 5 messages to rank 0, which takes them from any rank and
// finds each sender's messages in order.
inline void any_source(Transport& t, const Barrier& barrier) {
  const int count = 5;
  const uint32_t channel = 3;
  auto size_of = [](int sender, int k) { return static_cast<size_t>(100 * k + sender); };
  for (int k = 0; k < count; ++k) {
    const Status s = t.send(0, channel, pattern_message(size_of(t.rank(), k), message_seed(t.rank(), channel, k)));
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  if (t.rank() == 0) {
    std::vector<int> seen(static_cast<size_t>(t.size()), 0);
    Message m;
    for (int got = 0; got < count * t.size(); ++got) {
      const Status s = t.receive(kAnyPeer, channel, &m, kPatience);
      EXPECT_TRUE(s.is_ok()) << s.to_string();
      if (!s.is_ok() || m.peer < 0 || m.peer >= t.size()) break;
      const int k = seen[m.peer]++;
      if (!check_message(m, m.peer, channel, k, size_of(m.peer, k))) break;
    }
    for (int r = 0; r < t.size(); ++r) EXPECT_EQ(seen[r], count) << "messages from rank " << r;
  }
  finish(t, barrier);
}

// Two channels interleaved by the sender: the receiver drains channel 11 before channel 10, then
// takes a second round from any channel; each channel stays in order.
inline void two_channels(Transport& t, const Barrier& barrier) {
  const int count = 20;
  const uint32_t a = 10, b = 11;
  auto size_of = [](uint32_t channel, int k) {
    return channel == 10 && k == 7 ? size_t{1} << 20 : static_cast<size_t>(1000 + 37 * k);
  };
  for (int k = 0; k < 2 * count; ++k) {
    const uint32_t channel = k % 2 ? b : a;
    const int index = k / 2;
    const Status s = t.send(next_rank(t), channel,
                            pattern_message(size_of(channel, index), message_seed(t.rank(), channel, index)));
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  Message m;
  const int from = previous_rank(t);
  for (uint32_t channel : {b, a}) {
    for (int k = 0; k < count / 2; ++k) {
      const Status s = t.receive(from, channel, &m, kPatience);
      EXPECT_TRUE(s.is_ok()) << s.to_string();
      if (!s.is_ok() || !check_message(m, from, channel, k, size_of(channel, k))) break;
    }
  }
  int next_index[2] = {count / 2, count / 2};
  for (int got = 0; got < count; ++got) {
    const Status s = t.receive(from, kAnyChannel, &m, kPatience);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    if (!s.is_ok() || (m.channel != a && m.channel != b)) break;
    const int k = next_index[m.channel - a]++;
    if (!check_message(m, from, m.channel, k, size_of(m.channel, k))) break;
  }
  finish(t, barrier);
}

// A receive with nothing to take returns Code::unavailable after about its timeout, naming the
// awaited rank and channel.
inline void receive_timeout(Transport& t, const Barrier& barrier) {
  Message m;
  const auto start = std::chrono::steady_clock::now();
  const Status s = t.receive(next_rank(t), 77, &m, 0.2);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(s.code(), Code::unavailable) << s.to_string();
  EXPECT_NE(s.message().find("rank " + std::to_string(next_rank(t))), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("channel 77"), std::string::npos) << s.message();
  EXPECT_GE(elapsed, 0.19);
  EXPECT_LT(elapsed, 5.0);
  const Status any = t.receive(kAnyPeer, kAnyChannel, &m, 0.05);
  EXPECT_EQ(any.code(), Code::unavailable) << any.to_string();
  EXPECT_NE(any.message().find("any rank"), std::string::npos) << any.message();
  finish(t, barrier);
}

// Impossible requests fail at once with Code::invalid_argument and the offending rank.
inline void bad_arguments(Transport& t, const Barrier& barrier) {
  const SharedBytes one = pattern_message(1, 0);
  Status s = t.send(t.size(), 1, one);
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  EXPECT_NE(s.message().find("rank " + std::to_string(t.size())), std::string::npos) << s.message();
  s = t.send(0, kAnyChannel, one);
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  s = t.send(0, 1, nullptr);
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  Message m;
  s = t.receive(-5, 1, &m, 1.0);
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  EXPECT_NE(s.message().find("rank -5"), std::string::npos) << s.message();
  EXPECT_EQ(t.sends_in_flight(), 0u);
  finish(t, barrier);
}

// Rank 0 sends 20 MB through a 20 MB/s limit (1 MiB burst) to rank 1 % size: the transfer takes at
// least 0.8 of its configured second, and arrives intact.
inline void rate_limit(Transport& t, const Barrier& barrier) {
  const int count = 20;
  const size_t size = 1000000;
  const uint32_t channel = 5;
  const int target = 1 % t.size();
  barrier();
  if (t.rank() == 0) {
    RateLimitedTransport limited(&t, RateLimit{20e6, 1u << 20, {target}});
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < count; ++k) {
      const Status s = limited.send(target, channel, pattern_message(size, message_seed(0, channel, k)));
      EXPECT_TRUE(s.is_ok()) << s.to_string();
    }
    EXPECT_GT(limited.sends_in_flight(), 0u);
    Message m;
    for (int k = 0; target == 0 && k < count; ++k) {
      const Status s = limited.receive(0, channel, &m, kPatience);
      EXPECT_TRUE(s.is_ok()) << s.to_string();
      if (!s.is_ok() || !check_message(m, 0, channel, k, size)) break;
    }
    const Status s = limited.wait_sends(kPatience);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GE(elapsed, 0.8 * count * size / 20e6);
  } else if (t.rank() == target) {
    Message m;
    for (int k = 0; k < count; ++k) {
      const Status s = t.receive(0, channel, &m, kPatience);
      EXPECT_TRUE(s.is_ok()) << s.to_string();
      if (!s.is_ok() || !check_message(m, 0, channel, k, size)) break;
    }
  }
  finish(t, barrier);
}

struct SuiteCase {
  const char* name;
  void (*run)(Transport&, const Barrier&);
};

inline const std::vector<SuiteCase>& suite_cases() {
  static const std::vector<SuiteCase> cases = {
      {"ring_exchange", ring_exchange}, {"many_in_flight", many_in_flight},
      {"any_source", any_source},       {"two_channels", two_channels},
      {"receive_timeout", receive_timeout}, {"bad_arguments", bad_arguments},
      {"rate_limit", rate_limit}};
  return cases;
}

}  // namespace dcr::test
