// The spool backend (include/dcr/transport/spool.h): messages as files in a shared directory.
// A send writes one file and is then complete; a receive looks for the next file of each matching
// (sender, channel) stream, validates it, hands over its payload and deletes it. Wildcard receives
// also list the inbox to find streams they have not seen yet.
#include "dcr/transport/spool.h"

#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "dcr/codec/byte_io.h"
#include "dcr/core/hash.h"
#include "dcr/core/log.h"
#include "src/core/files.h"
#include "src/transport/backoff.h"
#include "src/transport/describe.h"
#include "src/transport/shutdown.h"

namespace dcr {
namespace {

constexpr uint32_t kMagic = 0x53524344;  // "DCRS" in little-endian byte order
constexpr uint16_t kFormat = 1;
constexpr size_t kHeaderBytes = 40;
constexpr int kSeqDigits = 16;
constexpr double kSendsTimeout = 10.0;  // at shutdown; spool sends are complete at once anyway
constexpr double kRanksTimeout = 60.0;  // at shutdown, for the other ranks to get there

using Clock = std::chrono::steady_clock;

// What a message file's header says; sender, channel and seq must match where the file lies.
struct FileHeader {
  uint32_t sender = 0;
  uint32_t channel = 0;
  uint64_t seq = 0;
  uint64_t length = 0;
  uint64_t hash = 0;
};

std::array<uint8_t, kHeaderBytes> encode_header(const FileHeader& h) {
  std::array<uint8_t, kHeaderBytes> out{};
  store_le(&out[0], kMagic, 4);
  store_le(&out[4], kFormat, 2);
  store_le(&out[6], kHeaderBytes, 2);
  store_le(&out[8], h.sender, 4);
  store_le(&out[12], h.channel, 4);
  store_le(&out[16], h.seq, 8);
  store_le(&out[24], h.length, 8);
  store_le(&out[32], h.hash, 8);
  return out;
}

Status corrupt(const std::string& path, const std::string& why) {
  return Status(Code::corrupt, "spool message file '" + path + "' is corrupt: " + why);
}

// Checks the file's header and payload against `expected` (sender, channel, seq).
Status check_file(const std::vector<uint8_t>& file, const std::string& path, const FileHeader& expected) {
  if (file.size() < kHeaderBytes)
    return corrupt(path, "truncated to " + std::to_string(file.size()) + " bytes, shorter than its header");
  const uint8_t* h = file.data();
  if (get_le(h, 4) != kMagic) return corrupt(path, "bad magic");
  if (get_le(h + 4, 2) != kFormat || get_le(h + 6, 2) != kHeaderBytes)
    return corrupt(path, "unknown format " + std::to_string(get_le(h + 4, 2)));
  if (get_le(h + 8, 4) != expected.sender || get_le(h + 12, 4) != expected.channel || get_le(h + 16, 8) != expected.seq)
    return corrupt(path, "its header names another sender, channel or sequence number");
  const uint64_t length = get_le(h + 24, 8);
  if (file.size() - kHeaderBytes != length)
    return corrupt(path, "payload of " + std::to_string(file.size() - kHeaderBytes) + " bytes, header says " +
                             std::to_string(length) + " (truncated or overwritten)");
  if (hash64(file.data() + kHeaderBytes, length) != get_le(h + 32, 8)) return corrupt(path, "payload hash mismatch");
  return Status::ok();
}

// Polls of a file system cost metadata operations: after 16 quick polls, sleep 20 us doubling to
// 1 ms, so that an idle receiver adds at most about 1 ms of latency.
Backoff poll_backoff() { return Backoff(16, std::chrono::microseconds(20), std::chrono::microseconds(1000)); }

// One incoming (sender, channel) stream and the sequence number of its next file.
struct Stream {
  uint32_t channel;
  int sender;
  uint64_t next = 0;
};

bool matches(const Stream& s, int from, uint32_t channel) {
  return (from == kAnyPeer || s.sender == from) && (channel == kAnyChannel || s.channel == channel);
}

class SpoolTransport : public Transport {
 public:
  // With `comm` (owned, freed here) destruction is collective and rank 0 removes `job_dir`.
  SpoolTransport(std::string job_dir, int rank, int size, MPI_Comm comm)
      : job_dir_(std::move(job_dir)), rank_(rank), size_(size), comm_(comm) {}

  ~SpoolTransport() override {
    if (comm_ == MPI_COMM_NULL) return;
    settle_for_shutdown(*this, comm_, kSendsTimeout, kRanksTimeout);
    MPI_Barrier(comm_);  // nobody reads the job directory any more
    if (rank_ == 0) {
      const Status s = files::remove_tree(job_dir_);
      if (!s.is_ok()) DCR_LOG(warn, "transport", "rank 0: spool shutdown: %s", s.message().c_str());
    }
    MPI_Comm_free(&comm_);
  }

  std::string name() const override { return "spool"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  size_t sends_in_flight() const override { return 0; }
  std::vector<int> peers_with_sends_in_flight() const override { return {}; }
  Status progress() override { return Status::ok(); }

  Status send(int peer, uint32_t channel, SharedBytes message) override {
    DCR_TRY(check_send(peer, channel, message));
    const std::string dir = stream_dir(peer, channel, rank_);
    Status s = make_dir_once(dir);
    uint64_t& seq = next_out_[{peer, channel}];
    FileHeader h{static_cast<uint32_t>(rank_), channel, seq, message->size(), 0};
    h.hash = hash64(message->data(), message->size());
    const std::array<uint8_t, kHeaderBytes> header = encode_header(h);
    if (s.is_ok())
      s = files::write_atomic(file_path(dir, seq), {{header.data(), header.size()}, {message->data(), message->size()}},
                              false);
    if (!s.is_ok()) return s.with_context(where(peer) + " on " + describe_channel(channel));
    ++seq;
    return Status::ok();
  }

  Status try_receive(int from, uint32_t channel, Message* out, bool* received) override {
    DCR_TRY(check_receive(from, channel));
    *received = false;
    if (from != kAnyPeer && channel != kAnyChannel) return take(stream(channel, from), out, received);
    DCR_TRY(take_known(from, channel, out, received));
    if (*received) return Status::ok();
    const size_t known = streams_.size();
    DCR_TRY(discover(from, channel));
    for (size_t i = known; i < streams_.size() && !*received; ++i) DCR_TRY(take(i, out, received));
    return Status::ok();
  }

  Status receive(int from, uint32_t channel, Message* out, double timeout_s) override {
    DCR_TRY(check_receive(from, channel));
    const Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    Backoff backoff = poll_backoff();
    for (;;) {
      bool received = false;
      DCR_TRY(try_receive(from, channel, out, &received));
      if (received) return Status::ok();
      if (Clock::now() >= deadline) return receive_timeout(rank_, from, channel, timeout_s);
      backoff.idle();
    }
  }

 private:
  std::string where(int peer) const { return "rank " + std::to_string(rank_) + ", " + describe_peer(peer); }

  std::string inbox(int receiver) const { return job_dir_ + "/r" + std::to_string(receiver); }

  std::string stream_dir(int receiver, uint32_t channel, int sender) const {
    return inbox(receiver) + "/c" + std::to_string(channel) + "/s" + std::to_string(sender);
  }

  static std::string file_path(const std::string& dir, uint64_t seq) {
    return dir + "/" + files::zero_padded(seq, kSeqDigits) + ".msg";
  }

  Status make_dir_once(const std::string& dir) {
    if (made_.count(dir)) return Status::ok();
    DCR_TRY(files::make_dirs(dir));
    made_.insert(dir);
    return Status::ok();
  }

  // The index of the stream (channel, sender), added when new.
  size_t stream(uint32_t channel, int sender) {
    auto [it, added] = index_.emplace(std::make_pair(channel, sender), streams_.size());
    if (added) streams_.push_back(Stream{channel, sender, 0});
    return it->second;
  }

  // Tries the known matching streams, starting after the one that last delivered (fairness).
  Status take_known(int from, uint32_t channel, Message* out, bool* received) {
    const size_t n = streams_.size();
    for (size_t k = 0; k < n && !*received; ++k) {
      const size_t i = (cursor_ + k) % n;
      if (!matches(streams_[i], from, channel)) continue;
      DCR_TRY(take(i, out, received));
      if (*received) cursor_ = i + 1;
    }
    return Status::ok();
  }

  // Adds the streams of this rank's inbox that match (from, channel) and are not known yet.
  Status discover(int from, uint32_t channel) {
    std::vector<std::string> channels, senders;
    DCR_TRY(files::list_dir(inbox(rank_), &channels));
    for (const std::string& name : channels) {
      uint64_t c = 0;
      if (!files::parse_numbered(name, "c", &c) || c >= kAnyChannel) continue;
      if (channel != kAnyChannel && c != channel) continue;
      if (from != kAnyPeer) {
        stream(static_cast<uint32_t>(c), from);
        continue;
      }
      DCR_TRY(files::list_dir(inbox(rank_) + "/" + name, &senders));
      for (const std::string& sender : senders) {
        uint64_t s = 0;
        if (files::parse_numbered(sender, "s", &s) && s < static_cast<uint64_t>(size_))
          stream(static_cast<uint32_t>(c), static_cast<int>(s));
      }
    }
    return Status::ok();
  }

  // Takes the next file of stream `i` if it is there.
  Status take(size_t i, Message* out, bool* received) {
    Stream& s = streams_[i];
    const std::string path = file_path(stream_dir(rank_, s.channel, s.sender), s.next);
    bool found = false;
    DCR_TRY(files::read_whole(path, &out->bytes, &found).with_context("rank " + std::to_string(rank_)));
    if (!found) return Status::ok();
    const FileHeader expected{static_cast<uint32_t>(s.sender), s.channel, s.next, 0, 0};
    DCR_TRY(check_file(out->bytes, path, expected).with_context("rank " + std::to_string(rank_)));
    out->bytes.erase(out->bytes.begin(), out->bytes.begin() + kHeaderBytes);
    out->peer = s.sender;
    out->channel = s.channel;
    ++s.next;
    *received = true;
    if (::unlink(path.c_str()) != 0)
      DCR_LOG(warn, "transport", "rank %d: cannot delete spool message file '%s' after reading it", rank_,
              path.c_str());
    return Status::ok();
  }

  std::string job_dir_;
  int rank_;
  int size_;
  MPI_Comm comm_;
  std::map<std::pair<int, uint32_t>, uint64_t> next_out_;  // (peer, channel) -> next sequence number
  std::set<std::string> made_;                              // stream directories known to exist
  std::vector<Stream> streams_;                             // incoming streams seen so far
  std::map<std::pair<uint32_t, int>, size_t> index_;        // (channel, sender) -> index in streams_
  size_t cursor_ = 0;
};

uint64_t random_word() {
  std::random_device device;
  const uint64_t now = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  const uint64_t seed = (static_cast<uint64_t>(device()) << 32) ^ device() ^ now ^
                        (static_cast<uint64_t>(::getpid()) << 16);
  return std::mt19937_64(seed)();
}

std::string hex(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) text[static_cast<size_t>(i)] = digits[value & 15];
  return text;
}

// Rank 0: creates "<dir>/job-<random hex>" (a fresh name) and returns its name through *name.
Status create_job_dir(const std::string& dir, std::string* name) {
  DCR_TRY(files::make_dirs(dir));
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::string candidate = "job-" + hex(random_word());
    if (::mkdir((dir + "/" + candidate).c_str(), 0755) == 0) {
      *name = candidate;
      return Status::ok();
    }
    if (errno != EEXIST) break;
  }
  return Status(Code::io_error, "cannot create a job directory under '" + dir + "': " + std::strerror(errno));
}

// Rank 0's `text` on every rank of `comm`.
void broadcast(MPI_Comm comm, std::string* text) {
  int length = static_cast<int>(text->size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  text->resize(static_cast<size_t>(length));
  if (length > 0) MPI_Bcast(text->data(), length, MPI_CHAR, 0, comm);
}

bool all_ranks(MPI_Comm comm, bool value) {
  int mine = value ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

// Every rank: joins rank 0's job directory (*job_dir stays empty when it has none) and creates its
// inbox there.
Status join_job(const std::string& dir, MPI_Comm comm, int rank, std::string* job_dir) {
  std::string name;
  Status s = rank == 0 ? create_job_dir(dir, &name) : Status::ok();
  broadcast(comm, &name);
  if (name.empty())
    return s.is_ok() ? Status(Code::unavailable, "rank 0 could not create the job directory (see its error)") : s;
  *job_dir = dir + "/" + name;
  return files::make_dirs(*job_dir + "/r" + std::to_string(rank));
}

}  // namespace

Status make_spool_transport(const std::string& dir, MPI_Comm comm, std::unique_ptr<Transport>* out) {
  MPI_Comm own = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &own);
  int rank = 0, size = 0;
  MPI_Comm_rank(own, &rank);
  MPI_Comm_size(own, &size);
  std::string job_dir;
  Status s = join_job(dir, own, rank, &job_dir);
  if (!all_ranks(own, s.is_ok())) {
    if (s.is_ok()) s = Status(Code::unavailable, "the spool transport failed on another rank (see its error)");
    if (rank == 0 && !job_dir.empty()) files::remove_tree(job_dir);
    MPI_Comm_free(&own);
    return s.with_context("rank " + std::to_string(rank) + ": transport 'spool' in '" + dir + "'");
  }
  *out = std::make_unique<SpoolTransport>(job_dir, rank, size, own);
  return Status::ok();
}

Status make_spool_transport(MPI_Comm comm, std::unique_ptr<Transport>* out) {
  const char* dir = std::getenv(kSpoolDirVariable);
  const bool set = dir != nullptr && *dir != '\0';
  const bool everywhere = all_ranks(comm, set);
  DCR_REQUIRE(set, Code::invalid_argument,
              std::string("transport 'spool' needs ") + kSpoolDirVariable +
                  " (a directory every rank shares), which is not set");
  DCR_REQUIRE(everywhere, Code::invalid_argument,
              std::string("transport 'spool': ") + kSpoolDirVariable + " is not set on every rank");
  return make_spool_transport(std::string(dir), comm, out);
}

Status open_spool_endpoint(const std::string& job_dir, int rank, int size, std::unique_ptr<Transport>* out) {
  DCR_REQUIRE(size > 0 && rank >= 0 && rank < size, Code::invalid_argument,
              "spool endpoint: rank " + std::to_string(rank) + " is not in a group of " + std::to_string(size));
  DCR_TRY(files::make_dirs(job_dir + "/r" + std::to_string(rank)));
  *out = std::make_unique<SpoolTransport>(job_dir, rank, size, MPI_COMM_NULL);
  return Status::ok();
}

}  // namespace dcr
