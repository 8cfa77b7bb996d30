// The journal keeps every whole record across reopen, and a record cut by a crash (or damaged)
// ends it: what came before stands, the tail is dropped, later appends follow the last good record.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "dcr/journal/journal.h"

namespace dcr {
namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("dcr-journal-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::filesystem::remove(path);
  return path.string();
}

TEST(Journal, RecordsSurviveReopen) {
  const std::string path = temp_path("a.journal");
  {
    Journal j;
    ASSERT_TRUE(j.open(path).is_ok());
    ASSERT_TRUE(j.append({JournalRecord::begin, 0, 1, 0}, false).is_ok());
    ASSERT_TRUE(j.append({JournalRecord::committed, 1, 0, 77}, true).is_ok());
    ASSERT_TRUE(j.append({JournalRecord::snapshot, 1, 0, 0}, true).is_ok());
  }
  Journal j;
  ASSERT_TRUE(j.open(path).is_ok());
  ASSERT_EQ(j.records().size(), 3u);
  uint64_t v = 0, base = 9, hash = 0;
  ASSERT_TRUE(j.last_committed(&v, &base, &hash));
  EXPECT_EQ(v, 1u);
  EXPECT_EQ(base, 0u);
  EXPECT_EQ(hash, 77u);
  ASSERT_TRUE(j.last_snapshot(&v));
  EXPECT_EQ(j.dropped_bytes(), 0u);
}

TEST(Journal, ARecordCutMidWayIsDroppedAndAppendsContinueAfterTheLastGoodOne) {
  const std::string path = temp_path("b.journal");
  {
    Journal j;
    ASSERT_TRUE(j.open(path).is_ok());
    for (uint64_t v = 1; v <= 3; ++v) ASSERT_TRUE(j.append({JournalRecord::committed, v, v - 1, 5}, true).is_ok());
  }
  std::filesystem::resize_file(path, 2 * 40 + 17);  // the third record cut by a crash
  {
    Journal j;
    ASSERT_TRUE(j.open(path).is_ok());
    EXPECT_EQ(j.records().size(), 2u);
    EXPECT_EQ(j.dropped_bytes(), 17u);
    ASSERT_TRUE(j.append({JournalRecord::committed, 3, 2, 5}, true).is_ok());
  }
  Journal j;
  ASSERT_TRUE(j.open(path).is_ok());
  ASSERT_EQ(j.records().size(), 3u);
  EXPECT_EQ(j.records()[2].a, 3u);
}

TEST(Journal, ADamagedRecordEndsTheJournal) {
  const std::string path = temp_path("c.journal");
  {
    Journal j;
    ASSERT_TRUE(j.open(path).is_ok());
    for (uint64_t v = 1; v <= 3; ++v) ASSERT_TRUE(j.append({JournalRecord::committed, v, v - 1, 5}, true).is_ok());
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40 + 9);
    f.put('\x7f');  // a bit rot in record 2
  }
  Journal j;
  ASSERT_TRUE(j.open(path).is_ok());
  EXPECT_EQ(j.records().size(), 1u);
  EXPECT_EQ(j.dropped_bytes(), 80u);
}

TEST(Journal, CompactionKeepsOnlyWhatItIsGiven) {
  const std::string path = temp_path("d.journal");
  Journal j;
  ASSERT_TRUE(j.open(path).is_ok());
  for (uint64_t v = 1; v <= 10; ++v) ASSERT_TRUE(j.append({JournalRecord::applied, v, v, 0}, false).is_ok());
  ASSERT_TRUE(j.compact({{JournalRecord::committed, 10, 9, 1}}).is_ok());
  ASSERT_TRUE(j.append({JournalRecord::snapshot, 10, 0, 0}, true).is_ok());
  Journal again;
  ASSERT_TRUE(again.open(path).is_ok());
  ASSERT_EQ(again.records().size(), 2u);
  EXPECT_EQ(again.records()[0].type, JournalRecord::committed);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(Journal, AnUnwritableLocationIsReportedWithItsPath) {
  Journal j;
  const Status s = j.open("/nonexistent-dir/x.journal");
  EXPECT_EQ(s.code(), Code::io_error);
  EXPECT_NE(s.message().find("/nonexistent-dir/x.journal"), std::string::npos);
}

TEST(Journal, ReadOnlyOpenLeavesADamagedTailAsItIs) {
  const std::string path = temp_path("ro.journal");
  {
    Journal j;
    ASSERT_TRUE(j.open(path).is_ok());
    ASSERT_TRUE(j.append({JournalRecord::committed, 1, 0, 7}, true).is_ok());
  }
  { std::ofstream(path, std::ios::app | std::ios::binary) << "torn"; }
  const auto size = std::filesystem::file_size(path);
  Journal j;
  ASSERT_TRUE(j.open_read_only(path).is_ok());
  EXPECT_EQ(j.records().size(), 1u);
  EXPECT_EQ(j.dropped_bytes(), 4u);
  EXPECT_EQ(std::filesystem::file_size(path), size);  // nothing cut
  EXPECT_EQ(j.append({JournalRecord::snapshot, 1, 0, 0}, true).code(), Code::invalid_argument);
  Journal absent;
  EXPECT_FALSE(absent.open_read_only(temp_path("absent.journal")).is_ok());
  EXPECT_FALSE(std::filesystem::exists(temp_path("absent.journal")));  // not created
}

TEST(Journal, OnlyRegularFilesAreJournals) {
  const std::string dir = temp_path("dir.journal");
  std::filesystem::create_directories(dir);
  const std::string fifo = temp_path("fifo.journal");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {dir, fifo}) {  // a FIFO must not block: refused at once
    Journal j;
    const Status s = j.open(path);
    EXPECT_NE(s.code(), Code::ok) << path;
    Journal r;
    EXPECT_NE(r.open_read_only(path).code(), Code::ok) << path;
  }
  std::filesystem::remove(fifo);
  std::filesystem::remove(dir);
}

}  // namespace
}  // namespace dcr
