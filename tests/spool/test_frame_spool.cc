// The frame spool: versions of real frames published and read back (and applied), invisible
// until their manifests are complete, chained base -> target, checked against corruption, pruned.
#include <gtest/gtest.h>

#include "dcr/auth/seal.h"

#include <cstdio>
#include <filesystem>
#include <iterator>
#include <sstream>
#include <fstream>

#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/core/hash.h"
#include "dcr/spool/frame_spool.h"
#include "support/random_data.h"

namespace dcr {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kElements = 4096;
constexpr unsigned kWidth = 2;

// The bits of tensor `tensor` at `version`: random at version 0, each version a small step on.
std::vector<uint8_t> bits_at(uint32_t tensor, uint64_t version) {
  std::vector<uint8_t> bits = test::random_bytes(kElements * kWidth, 1000 + tensor);
  for (uint64_t v = 1; v <= version; ++v) bits = test::perturb(bits, kWidth, 0.03, 77 * v + tensor);
  return bits;
}

// One delta frame per tensor, base -> target.
std::vector<std::vector<uint8_t>> delta_frames(uint64_t base, uint64_t target, uint32_t tensors,
                                               uint32_t first_tensor = 0) {
  FrameEncoder encoder;
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t t = first_tensor; t < first_tensor + tensors; ++t) {
    const std::vector<uint8_t> from = bits_at(t, base), to = bits_at(t, target);
    frames.emplace_back();
    const Status s = encoder.encode_delta(test::flat(t, from.data(), kElements, kWidth),
                                          test::flat(t, to.data(), kElements, kWidth), {base, target}, &frames.back());
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  return frames;
}

void flip_byte(const std::string& path, size_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  const char c = static_cast<char>(file.get());
  file.seekp(static_cast<std::streamoff>(offset));
  file.put(static_cast<char>(c ^ 0x20));
}

bool mentions(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

class FrameSpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) / ("dcr-frame-spool-" + std::string(info->name()))).string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
};

TEST_F(FrameSpoolTest, PublishedFramesReadBackExactlyAndApply) {
  FrameSpool spool(dir_);
  const auto frames = delta_frames(0, 1, 3);
  ASSERT_TRUE(spool.publish(0, 1, frames).is_ok());
  EXPECT_TRUE(spool.complete(1));
  EXPECT_TRUE(fs::exists(dir_ + "/v1/MANIFEST"));

  VersionEntry entry;
  ASSERT_TRUE(spool.version(1, &entry).is_ok());
  EXPECT_EQ(entry.base, 0u);
  EXPECT_EQ(entry.target, 1u);
  EXPECT_EQ(entry.frames, 3u);

  std::vector<std::vector<uint8_t>> read;
  const Status s = spool.read_version(1, &read);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(read, frames);

  FrameDecoder decoder;
  for (uint32_t t = 0; t < 3; ++t) {
    std::vector<uint8_t> dst = bits_at(t, 0);
    ApplyOutcome outcome;
    const Status a = decoder.apply(read[t].data(), read[t].size(), test::flat(t, dst.data(), kElements, kWidth), 0,
                                   &outcome);
    ASSERT_TRUE(a.is_ok()) << a.to_string();
    EXPECT_EQ(dst, bits_at(t, 1)) << "tensor " << t;
  }
}

TEST_F(FrameSpoolTest, VersionWithoutManifestIsInvisible) {
  FrameSpool spool(dir_);
  ASSERT_TRUE(spool.publish(0, 1, delta_frames(0, 1, 2)).is_ok());
  FramePublisher unfinished;
  ASSERT_TRUE(spool.begin(1, 2, 0, &unfinished).is_ok());
  for (const auto& frame : delta_frames(1, 2, 2)) ASSERT_TRUE(unfinished.add(frame).is_ok());
  EXPECT_TRUE(fs::exists(dir_ + "/v2/w0-000001.frame"));  // frames on disk, no manifest yet

  EXPECT_FALSE(spool.complete(2));
  VersionEntry entry;
  EXPECT_EQ(spool.version(2, &entry).code(), Code::not_found);
  std::vector<std::vector<uint8_t>> read;
  const Status s = spool.read_version(2, &read);
  EXPECT_EQ(s.code(), Code::not_found) << s.to_string();
  EXPECT_TRUE(mentions(s, "version 2")) << s.message();
  std::vector<VersionEntry> all;
  ASSERT_TRUE(spool.published(&all).is_ok());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].target, 1u);

  ASSERT_TRUE(unfinished.finish().is_ok());
  EXPECT_TRUE(spool.complete(2));
  ASSERT_TRUE(spool.read_version(2, &read).is_ok());
  EXPECT_EQ(read.size(), 2u);
}

// Full frames of every tensor at `target`.
std::vector<std::vector<uint8_t>> full_frames(uint64_t target, uint32_t tensors) {
  FrameEncoder encoder;
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t t = 0; t < tensors; ++t) {
    const std::vector<uint8_t> to = bits_at(t, target);
    frames.emplace_back();
    EXPECT_TRUE(encoder.encode_full(test::flat(t, to.data(), kElements, kWidth), target, &frames.back()).is_ok());
  }
  return frames;
}

// A full snapshot is a series of its own beside the deltas: published, listed and read alike,
// refusing delta frames, and counted by newest() and remove_after().
TEST_F(FrameSpoolTest, FullSnapshotsAreASeriesBesideTheDeltas) {
  FrameSpool spool(dir_);
  FramePublisher full;
  ASSERT_TRUE(spool.begin_full(2, 0, &full).is_ok());
  EXPECT_EQ(full.add(delta_frames(1, 2, 1)[0]).code(), Code::invalid_argument);  // a delta is not a snapshot
  for (const auto& frame : full_frames(2, 2)) ASSERT_TRUE(full.add(frame).is_ok());
  uint64_t newest = 0;
  bool found = true;
  ASSERT_TRUE(spool.newest(&newest, &found).is_ok());
  EXPECT_FALSE(found);  // no manifest yet
  ASSERT_TRUE(full.finish().is_ok());
  ASSERT_TRUE(spool.publish(2, 3, delta_frames(2, 3, 2)).is_ok());

  VersionEntry snapshot;
  ASSERT_TRUE(spool.snapshot(2, &snapshot).is_ok());
  EXPECT_TRUE(snapshot.full);
  EXPECT_EQ(snapshot.base, 2u);
  EXPECT_EQ(snapshot.frames, 2u);
  EXPECT_GT(snapshot.published_us, 0u);
  VersionEntry entry;
  EXPECT_EQ(spool.version(2, &entry).code(), Code::not_found);  // no delta to 2 was published
  std::vector<FrameRef> refs;
  ASSERT_TRUE(spool.frames_of(snapshot, &refs).is_ok());
  ASSERT_EQ(refs.size(), 2u);
  std::vector<uint8_t> frame;
  ASSERT_TRUE(spool.read_frame(snapshot, refs[1], &frame).is_ok());
  EXPECT_EQ(frame, full_frames(2, 2)[1]);
  ASSERT_TRUE(spool.newest(&newest, &found).is_ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(newest, 3u);

  ASSERT_TRUE(spool.remove_after(2).is_ok());  // the delta to 3 goes, the snapshot of 2 stays
  ASSERT_TRUE(spool.newest(&newest, &found).is_ok());
  EXPECT_EQ(newest, 2u);
  ASSERT_TRUE(spool.prune_snapshots_before(3).is_ok());
  ASSERT_TRUE(spool.newest(&newest, &found).is_ok());
  EXPECT_FALSE(found);
  EXPECT_FALSE(fs::exists(dir_ + "/f2"));
}

TEST_F(FrameSpoolTest, SeveralWritersEachPublishTheirFrames) {
  FrameSpool spool(dir_, 2);
  const auto first = delta_frames(0, 1, 2, 0), second = delta_frames(0, 1, 3, 2);
  ASSERT_TRUE(spool.publish(0, 1, 1, second).is_ok());
  EXPECT_TRUE(fs::exists(dir_ + "/v1/w1.MANIFEST"));
  EXPECT_FALSE(spool.complete(1));
  std::vector<std::vector<uint8_t>> read;
  EXPECT_EQ(spool.read_version(1, &read).code(), Code::not_found);

  ASSERT_TRUE(spool.publish(0, 1, 0, first).is_ok());
  EXPECT_TRUE(spool.complete(1));
  EXPECT_TRUE(spool.complete(1, 2));
  EXPECT_FALSE(spool.complete(1, 3));
  ASSERT_TRUE(spool.read_version(1, &read).is_ok());
  std::vector<std::vector<uint8_t>> expected = first;
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(read, expected);

  const Status again = spool.publish(0, 1, 0, first);
  EXPECT_EQ(again.code(), Code::invalid_argument) << again.to_string();
  EXPECT_EQ(spool.publish(0, 1, first).code(), Code::invalid_argument);  // which writer?
  EXPECT_EQ(spool.publish(0, 1, 2, first).code(), Code::invalid_argument);
}

TEST_F(FrameSpoolTest, FramesOfAnotherVersionAreRefused) {
  FrameSpool spool(dir_);
  Status s = spool.publish(0, 2, delta_frames(0, 1, 1));
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  s = spool.publish(1, 2, delta_frames(0, 2, 1));
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  EXPECT_EQ(spool.publish(2, 2, {}).code(), Code::invalid_argument);
  std::vector<uint8_t> garbage(200, 7);
  EXPECT_NE(spool.publish(0, 3, {garbage}).code(), Code::ok);
  EXPECT_FALSE(spool.complete(2));
  EXPECT_FALSE(spool.complete(3));
}

TEST_F(FrameSpoolTest, ChainLinksThreeVersionsAndNamesTheMissingOne) {
  FrameSpool spool(dir_);
  for (uint64_t v = 1; v <= 3; ++v) ASSERT_TRUE(spool.publish(v - 1, v, delta_frames(v - 1, v, 1)).is_ok());
  std::vector<VersionEntry> chain;
  ASSERT_TRUE(spool.chain(0, 3, &chain).is_ok());
  ASSERT_EQ(chain.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(chain[i].base, i);
    EXPECT_EQ(chain[i].target, i + 1);
  }
  ASSERT_TRUE(spool.chain(1, 3, &chain).is_ok());
  EXPECT_EQ(chain.size(), 2u);
  ASSERT_TRUE(spool.chain(3, 3, &chain).is_ok());
  EXPECT_TRUE(chain.empty());

  ASSERT_TRUE(spool.publish(4, 5, delta_frames(4, 5, 1)).is_ok());  // version 4 never published
  Status s = spool.chain(0, 5, &chain);
  EXPECT_EQ(s.code(), Code::not_found) << s.to_string();
  EXPECT_TRUE(mentions(s, "version 4 is not published")) << s.message();
  s = spool.chain(0, 9, &chain);
  EXPECT_EQ(s.code(), Code::not_found) << s.to_string();
  EXPECT_TRUE(mentions(s, "version 9 is not published")) << s.message();
  s = spool.chain(4, 3, &chain);
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
}

TEST_F(FrameSpoolTest, ChainThatSkipsTheStartIsNotFound) {
  FrameSpool spool(dir_);
  ASSERT_TRUE(spool.publish(0, 2, delta_frames(0, 2, 1)).is_ok());
  std::vector<VersionEntry> chain;
  const Status s = spool.chain(1, 2, &chain);
  EXPECT_EQ(s.code(), Code::not_found) << s.to_string();
  EXPECT_TRUE(mentions(s, "based on version 0")) << s.message();
}

TEST_F(FrameSpoolTest, FlippedByteInFrameFileIsCorruptNamingTheFile) {
  FrameSpool spool(dir_);
  ASSERT_TRUE(spool.publish(0, 1, delta_frames(0, 1, 3)).is_ok());
  const std::string path = dir_ + "/v1/w0-000001.frame";
  flip_byte(path, fs::file_size(path) / 2);
  std::vector<std::vector<uint8_t>> read;
  const Status s = spool.read_version(1, &read);
  EXPECT_EQ(s.code(), Code::corrupt) << s.to_string();
  EXPECT_TRUE(mentions(s, path)) << s.message();
}

TEST_F(FrameSpoolTest, ShortFrameFileIsCorruptNamingTheFile) {
  FrameSpool spool(dir_);
  ASSERT_TRUE(spool.publish(0, 1, delta_frames(0, 1, 2)).is_ok());
  const std::string path = dir_ + "/v1/w0-000000.frame";
  fs::resize_file(path, fs::file_size(path) - 1);
  std::vector<std::vector<uint8_t>> read;
  const Status s = spool.read_version(1, &read);
  EXPECT_EQ(s.code(), Code::corrupt) << s.to_string();
  EXPECT_TRUE(mentions(s, path)) << s.message();
}

TEST_F(FrameSpoolTest, TruncatedManifestIsCorruptNamingTheFile) {
  FrameSpool spool(dir_);
  ASSERT_TRUE(spool.publish(0, 1, delta_frames(0, 1, 3)).is_ok());
  const std::string path = dir_ + "/v1/MANIFEST";
  for (uintmax_t cut : {uintmax_t{1}, uintmax_t{30}}) {
    fs::resize_file(path, fs::file_size(path) - cut);
    std::vector<std::vector<uint8_t>> read;
    Status s = spool.read_version(1, &read);
    EXPECT_EQ(s.code(), Code::corrupt) << s.to_string();
    EXPECT_TRUE(mentions(s, path)) << s.message();
    VersionEntry entry;
    EXPECT_EQ(spool.version(1, &entry).code(), Code::corrupt);
    std::vector<VersionEntry> chain;
    EXPECT_EQ(spool.chain(0, 1, &chain).code(), Code::corrupt);
    EXPECT_FALSE(spool.complete(1));
  }
}

TEST_F(FrameSpoolTest, AlteredManifestIsCorrupt) {
  FrameSpool spool(dir_);
  ASSERT_TRUE(spool.publish(0, 1, delta_frames(0, 1, 1)).is_ok());
  const std::string path = dir_ + "/v1/MANIFEST";
  flip_byte(path, 20);
  VersionEntry entry;
  const Status s = spool.version(1, &entry);
  EXPECT_EQ(s.code(), Code::corrupt) << s.to_string();
  EXPECT_TRUE(mentions(s, path)) << s.message();
}

TEST_F(FrameSpoolTest, ForgedManifestWhoseBaseIsItsTargetIsCorrupt) {
  // A manifest rewritten to "base 1" for version 1, with its content hash recomputed: a chain walk
  // from it used to loop for ever.
  FrameSpool spool(dir_);
  ASSERT_TRUE(spool.publish(0, 1, delta_frames(0, 1, 1)).is_ok());
  const std::string path = dir_ + "/v1/MANIFEST";
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("\nbase 0\n"), 8, "\nbase 1\n");
  const size_t end = text.rfind("\nend ") + 1;
  std::istringstream last(text.substr(end));
  std::string word, count;
  last >> word >> count;
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(hash64(text.data(), end)));
  std::ofstream(path, std::ios::trunc) << text.substr(0, end) << "end " << count << " " << hash << "\n";
  VersionEntry entry;
  const Status s = spool.version(1, &entry);
  EXPECT_EQ(s.code(), Code::corrupt) << s.to_string();
  EXPECT_TRUE(mentions(s, "is not before target")) << s.message();
  std::vector<VersionEntry> chain;
  EXPECT_EQ(spool.chain(0, 1, &chain).code(), Code::corrupt);
}

TEST_F(FrameSpoolTest, PruneKeepsTheNewestVersions) {
  FrameSpool spool(dir_);
  for (uint64_t v : {1, 2, 4, 5}) ASSERT_TRUE(spool.publish(v - 1, v, delta_frames(v - 1, v, 1)).is_ok());
  FramePublisher abandoned, in_progress;
  ASSERT_TRUE(spool.begin(2, 3, 0, &abandoned).is_ok());
  ASSERT_TRUE(abandoned.add(delta_frames(2, 3, 1)[0]).is_ok());
  ASSERT_TRUE(spool.begin(5, 6, 0, &in_progress).is_ok());
  ASSERT_TRUE(in_progress.add(delta_frames(5, 6, 1)[0]).is_ok());

  EXPECT_EQ(spool.prune(0).code(), Code::invalid_argument);
  ASSERT_TRUE(spool.prune(2).is_ok());
  std::vector<VersionEntry> all;
  ASSERT_TRUE(spool.published(&all).is_ok());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].target, 4u);
  EXPECT_EQ(all[1].target, 5u);
  for (int v : {1, 2, 3}) EXPECT_FALSE(fs::exists(dir_ + "/v" + std::to_string(v))) << v;
  EXPECT_TRUE(fs::exists(dir_ + "/v6"));  // a publication in progress stays
  ASSERT_TRUE(in_progress.finish().is_ok());
  ASSERT_TRUE(spool.published(&all).is_ok());
  EXPECT_EQ(all.size(), 3u);
  std::vector<std::vector<uint8_t>> read;
  EXPECT_TRUE(spool.read_version(4, &read).is_ok());

  ASSERT_TRUE(spool.prune(10).is_ok());  // fewer than that: nothing goes
  ASSERT_TRUE(spool.published(&all).is_ok());
  EXPECT_EQ(all.size(), 3u);
}

}  // namespace
TEST_F(FrameSpoolTest, PruneBeforeCountsAVersionStillBeingPublished) {
  // Writer 0 has published v3, writer 1 not yet: pruning to two versions must still drop v1.
  FrameSpool spool(dir_, 2);
  auto publish_part = [&](uint64_t v, uint32_t writer) {
    ASSERT_TRUE(spool.publish(v - 1, v, writer, delta_frames(v - 1, v, 1, writer)).is_ok());
  };
  for (uint64_t v : {1, 2}) publish_part(v, 0), publish_part(v, 1);
  publish_part(3, 0);
  ASSERT_TRUE(spool.prune_before(2).is_ok());
  EXPECT_FALSE(fs::exists(dir_ + "/v1"));
  EXPECT_TRUE(spool.complete(2));
  EXPECT_TRUE(fs::exists(dir_ + "/v3/w0.MANIFEST"));
  publish_part(3, 1);
  std::vector<VersionEntry> chain;
  ASSERT_TRUE(spool.chain(1, 3, &chain).is_ok());
  EXPECT_EQ(chain.size(), 2u);
}

TEST_F(FrameSpoolTest, WithAKeyEveryManifestIsAuthenticated) {
  Key key;
  key.id = 4;
  key.bytes.fill(0x3c);
  auto keys = std::make_shared<Keyring>(Keyring::of({key}));
  FrameSpool keyed(dir_);
  keyed.set_keys(keys);
  ASSERT_TRUE(keyed.publish(0, 1, delta_frames(0, 1, 2)).is_ok());
  std::vector<std::vector<uint8_t>> read;
  EXPECT_TRUE(keyed.read_version(1, &read).is_ok());
  EXPECT_TRUE(FrameSpool(dir_).read_version(1, &read).is_ok());  // a reader without keys takes the mac line

  // An attacker with write access drops a frame line and re-hashes the end line (XXH3-64).
  const std::string path = dir_ + "/v1/MANIFEST";
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t frame = text.find("frame ");
  std::string body = text.substr(0, frame) + text.substr(text.find('\n', frame) + 1);
  body = body.substr(0, body.rfind("end "));
  char end[64];
  std::snprintf(end, sizeof end, "end 1 %016llx\n", static_cast<unsigned long long>(hash64(body.data(), body.size())));
  std::ofstream(path, std::ios::trunc) << body << end;
  FrameSpool fresh(dir_);  // a reader that has not validated it yet (a new job)
  fresh.set_keys(keys);
  const Status st = fresh.read_version(1, &read);
  EXPECT_EQ(st.code(), Code::corrupt);
  EXPECT_NE(st.message().find("tag does not match"), std::string::npos) << st.message();
  // The reader that validated the manifest before keeps that copy (a complete manifest never
  // changes) and takes both frames, each checked against it.
  ASSERT_TRUE(keyed.read_version(1, &read).is_ok());
  EXPECT_EQ(read.size(), 2u);

  FrameSpool plain(dir_);
  ASSERT_TRUE(plain.publish(1, 2, delta_frames(1, 2, 1)).is_ok());  // no mac line
  const Status unauthenticated = keyed.read_version(2, &read);
  EXPECT_NE(unauthenticated.message().find("not authenticated (no mac line)"), std::string::npos)
      << unauthenticated.message();
}

// A reader polling the store GETs each complete manifest once: listing 16 kept versions again
// costs LISTs, not 16 GETs; a removed version is forgotten.
TEST_F(FrameSpoolTest, AReaderGetsEachCompleteManifestOnce) {
  FrameSpool writer(dir_);
  for (uint64_t v = 1; v <= 16; ++v) ASSERT_TRUE(writer.publish(v - 1, v, delta_frames(v - 1, v, 1)).is_ok());
  auto counts = std::make_shared<StoreCounts>();
  FrameSpool reader(std::shared_ptr<ObjectStore>(counted_store(file_store(dir_, StoreAccess::read), counts)));
  std::vector<VersionEntry> chain;
  ASSERT_TRUE(reader.chain(0, 16, &chain).is_ok());
  EXPECT_EQ(chain.size(), 16u);
  const uint64_t first = counts->gets;
  EXPECT_GE(first, 16u);
  for (int poll = 0; poll < 5; ++poll) ASSERT_TRUE(reader.chain(0, 16, &chain).is_ok());
  EXPECT_EQ(counts->gets, first) << "every kept manifest read again";
  ASSERT_TRUE(writer.publish(16, 17, delta_frames(16, 17, 1)).is_ok());
  ASSERT_TRUE(reader.chain(0, 17, &chain).is_ok());
  EXPECT_EQ(counts->gets, first + 1);
  ASSERT_TRUE(writer.prune_before(10).is_ok());
  EXPECT_EQ(reader.chain(0, 17, &chain).code(), Code::not_found);
}

TEST_F(FrameSpoolTest, APublicationTakesOnlyItsOwnManifestsAndRecordsEachWritersState) {
  const std::string mine(32, 'a'), other(32, 'b');
  FrameSpool publisher(dir_);
  publisher.set_publication(mine);
  FramePublisher one;
  ASSERT_TRUE(publisher.begin(0, 1, 0, &one).is_ok());
  for (const auto& frame : delta_frames(0, 1, 2)) ASSERT_TRUE(one.add(frame).is_ok());
  one.set_state(0x1234abcd5678ef90ull);
  ASSERT_TRUE(one.finish().is_ok());

  VersionEntry entry;
  ASSERT_TRUE(publisher.version(1, &entry).is_ok());
  EXPECT_EQ(entry.states, std::vector<uint64_t>{0x1234abcd5678ef90ull});
  // A reader of another publication (a version copied between stores) refuses it by name...
  FrameSpool foreign(dir_);
  foreign.set_publication(other);
  const Status st = foreign.version(1, &entry);
  EXPECT_EQ(st.code(), Code::corrupt);
  EXPECT_TRUE(mentions(st, "belongs to publication " + mine)) << st.message();
  // ...and leaves it out of its listings rather than failing them.
  std::vector<VersionEntry> all;
  ASSERT_TRUE(foreign.published(&all).is_ok());
  EXPECT_TRUE(all.empty());
}

TEST_F(FrameSpoolTest, ADamagedOldVersionIsLeftOutOfListingsAndNamedWhereNeeded) {
  FrameSpool spool(dir_);
  ASSERT_TRUE(spool.publish(0, 1, delta_frames(0, 1, 1)).is_ok());
  ASSERT_TRUE(spool.publish(1, 2, delta_frames(1, 2, 1)).is_ok());
  ASSERT_TRUE(spool.publish(2, 3, delta_frames(2, 3, 1)).is_ok());
  std::ofstream(dir_ + "/v1/MANIFEST", std::ios::app) << "x";
  uint64_t newest = 0;
  bool found = false;
  ASSERT_TRUE(spool.newest(&newest, &found).is_ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(newest, 3u);
  std::vector<VersionEntry> chain;
  EXPECT_TRUE(spool.chain(1, 3, &chain).is_ok());  // a reader at v1 needs only v2 and v3
  const Status needed = spool.chain(0, 3, &chain);
  EXPECT_EQ(needed.code(), Code::corrupt);
  EXPECT_TRUE(mentions(needed, "v1/MANIFEST")) << needed.message();
}

}  // namespace dcr
