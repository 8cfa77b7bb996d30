// Read-only mappings of files changed underneath: a file truncated while it is read through its
// mapping reads to the end without a crash and is reported naming it, as is one rewritten with the
// same bytes or replaced; an untouched one is not. A SIGBUS from any other mapping still kills.
#include "src/core/mapped_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

namespace dcr {
namespace {

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

// How a SIGBUS nobody handles ends a process: the action there was before ours takes it, so the
// process is killed by the signal, or, under ASan (whose handler was installed before ours), ASan
// reports it and exits with its exit code.
bool died_of_sigbus(int status) {
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGBUS;
  return kAsan && WIFEXITED(status) && WEXITSTATUS(status) != 0;
}

class MappedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcr_mapped_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "model-00001-of-00002.safetensors").string();
    bytes_.resize(64 * 4096 + 123);  // not a whole number of pages
    for (size_t i = 0; i < bytes_.size(); ++i) bytes_[i] = static_cast<uint8_t>(i * 13 + 1);
    write(path_, bytes_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void write(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);  // O_TRUNC, as a trainer saving again
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  // Every byte through the mapping, copied as the refit copies rows (memcpy).
  static std::vector<uint8_t> read_all(const MappedFile& f) {
    std::vector<uint8_t> copy(f.size());
    std::memcpy(copy.data(), f.data(), f.size());
    return copy;
  }
  // File timestamps move with the kernel's clock tick: wait one out so a rewrite shows in mtime.
  static void next_tick() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }
  void expect_changed(const MappedFile& f, const std::string& why) {
    const Status st = f.check_unchanged();
    EXPECT_EQ(st.code(), Code::io_error) << st.to_string();
    EXPECT_NE(st.message().find("'" + path_ + "' changed while it was being read"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
  }

  fs::path dir_;
  std::string path_;
  std::vector<uint8_t> bytes_;
};

TEST_F(MappedFileTest, UntouchedFileReadsWholeAndIsUnchanged) {
  std::unique_ptr<MappedFile> f;
  ASSERT_TRUE(MappedFile::open(path_, &f).is_ok());
  f->advise_random();
  EXPECT_EQ(f->path(), path_);
  EXPECT_EQ(read_all(*f), bytes_);
  EXPECT_FALSE(f->faulted());
  EXPECT_TRUE(f->check_unchanged().is_ok()) << f->check_unchanged().to_string();
}

TEST_F(MappedFileTest, TruncatedUnderTheReadReadsToTheEndAndIsReported) {
  std::unique_ptr<MappedFile> f;
  ASSERT_TRUE(MappedFile::open(path_, &f).is_ok());
  EXPECT_EQ(f->data()[5], bytes_[5]);  // the first page is read before the cut
  ASSERT_EQ(::truncate(path_.c_str(), 4096), 0);
  const std::vector<uint8_t> copy = read_all(*f);  // pages past the cut are gone: SIGBUS without the handler
  EXPECT_TRUE(f->faulted());
  EXPECT_EQ(copy[f->size() - 1], 0);  // zero pages stand in for the vanished ones
  expect_changed(*f, "pages vanished under the read");
  expect_changed(*f, "its size went from " + std::to_string(bytes_.size()) + " to 4096");
}

TEST_F(MappedFileTest, TruncatedToNothingThenWrittenAgainIsReported) {
  std::unique_ptr<MappedFile> f;
  ASSERT_TRUE(MappedFile::open(path_, &f).is_ok());
  ASSERT_EQ(::truncate(path_.c_str(), 0), 0);
  const std::vector<uint8_t> copy = read_all(*f);
  next_tick();
  write(path_, bytes_);  // the same bytes again: the size matches, what was read does not
  EXPECT_NE(copy, bytes_);
  expect_changed(*f, "pages vanished under the read");
}

TEST_F(MappedFileTest, RewrittenWithTheSameBytesIsReported) {
  std::unique_ptr<MappedFile> f;
  ASSERT_TRUE(MappedFile::open(path_, &f).is_ok());
  next_tick();
  write(path_, bytes_);
  EXPECT_EQ(read_all(*f), bytes_);
  EXPECT_FALSE(f->faulted());
  expect_changed(*f, "it was written to (mtime)");
}

TEST_F(MappedFileTest, ReplacedOrRemovedIsReported) {
  std::unique_ptr<MappedFile> f;
  ASSERT_TRUE(MappedFile::open(path_, &f).is_ok());
  write(path_ + ".tmp", bytes_);
  fs::rename(path_ + ".tmp", path_);
  EXPECT_EQ(read_all(*f), bytes_);  // the old file, still mapped
  expect_changed(*f, "it was replaced");
  fs::remove(path_);
  expect_changed(*f, "it is gone");
}

TEST_F(MappedFileTest, RefusesWhatIsNotARegularFile) {
  std::unique_ptr<MappedFile> f;
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Status st = MappedFile::open(fifo, &f);  // refused, not waited on
  EXPECT_EQ(st.code(), Code::invalid_argument) << st.to_string();
  EXPECT_NE(st.message().find("a FIFO"), std::string::npos) << st.message();
  st = MappedFile::open(dir_.string(), &f);
  EXPECT_EQ(st.code(), Code::invalid_argument) << st.to_string();
  st = MappedFile::open((dir_ / "missing").string(), &f);
  EXPECT_EQ(st.code(), Code::not_found) << st.to_string();
  EXPECT_NE(st.message().find("missing"), std::string::npos) << st.message();
}

TEST_F(MappedFileTest, EmptyFileMapsToNoBytes) {
  write(path_, {});
  std::unique_ptr<MappedFile> f;
  ASSERT_TRUE(MappedFile::open(path_, &f).is_ok());
  EXPECT_EQ(f->size(), 0u);
  EXPECT_TRUE(f->check_unchanged().is_ok());
}

TEST_F(MappedFileTest, MappingsAreReleased) {  // the handler's table does not fill up
  for (int i = 0; i < 10000; ++i) {
    std::unique_ptr<MappedFile> f;
    ASSERT_TRUE(MappedFile::open(path_, &f).is_ok()) << i;
  }
}

TEST_F(MappedFileTest, ManyOpenAtOnceFaultIndependently) {
  std::vector<std::unique_ptr<MappedFile>> files(3);
  std::vector<std::string> paths;
  for (size_t i = 0; i < files.size(); ++i) {
    paths.push_back((dir_ / ("shard-" + std::to_string(i))).string());
    write(paths[i], bytes_);
    ASSERT_TRUE(MappedFile::open(paths[i], &files[i]).is_ok());
  }
  ASSERT_EQ(::truncate(paths[1].c_str(), 100), 0);
  for (const auto& f : files) read_all(*f);
  EXPECT_FALSE(files[0]->faulted());
  EXPECT_TRUE(files[1]->faulted());
  EXPECT_FALSE(files[2]->faulted());
  EXPECT_TRUE(files[0]->check_unchanged().is_ok());
  EXPECT_FALSE(files[1]->check_unchanged().is_ok());
}

// A mapping the handler does not know of: a read past its file's end must still kill with SIGBUS.
void read_past_end_of_an_unregistered_mapping(const std::string& known, const std::string& other) {
  std::unique_ptr<MappedFile> f;
  if (!MappedFile::open(known, &f).is_ok()) _exit(3);  // installs the handler
  const int fd = ::open(other.c_str(), O_RDONLY);
  void* data = mmap(nullptr, 8 * 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  if (fd < 0 || data == MAP_FAILED || ::truncate(other.c_str(), 0) != 0) _exit(4);
  volatile uint8_t sink = static_cast<const volatile uint8_t*>(data)[5 * 4096];
  (void)sink;
  _exit(0);
}

TEST_F(MappedFileTest, SigbusOutsideItsMappingsStillKills) {
  const std::string other = (dir_ / "other").string();
  write(other, bytes_);
  EXPECT_EXIT(read_past_end_of_an_unregistered_mapping(path_, other), died_of_sigbus, "");
}

TEST_F(MappedFileTest, SigbusSentByAProcessStillKills) {
  EXPECT_EXIT(
      {
        std::unique_ptr<MappedFile> f;
        if (!MappedFile::open(path_, &f).is_ok()) _exit(3);
        ::kill(::getpid(), SIGBUS);
        _exit(0);
      },
      died_of_sigbus, "");
}

}  // namespace
}  // namespace dcr
