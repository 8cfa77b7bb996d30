#include "src/core/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace dcr {

namespace {

// The live mappings, as the SIGBUS handler sees them. A fixed table of lock-free atomics: the
// handler may run in the middle of any code (a mutex held by the interrupted thread would
// deadlock it) and must not allocate.
struct Slot {
  std::atomic<int> state{0};  // kFree, kChanging (claimed, not yet or no longer in use), kLive
  std::atomic<uintptr_t> begin{0}, end{0};
  std::atomic<int> faulted{0};
};
constexpr int kFree = 0, kChanging = 1, kLive = 2;
constexpr int kSlots = 4096;  // files mapped at once; a checkpoint of a 1T model has a few hundred
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<uintptr_t>::is_always_lock_free,
              "the SIGBUS handler reads the table without locks");
Slot g_slots[kSlots];

struct sigaction g_previous;  // SIGBUS's action before ours, set once, before ours can run
uintptr_t g_page = 4096;      // sysconf is not async-signal-safe: read once, before ours can run

// Replaces the mapping that holds `address`, from its page to its end, with anonymous zero pages:
// the read that faulted restarts and completes, and later reads of the vanished pages are cheap
// and signal-free (they are worthless anyway: the mapping is marked faulted). mmap is a plain
// system call on Linux, safe in a handler though POSIX does not list it.
bool zero_fill(uintptr_t address) {
  for (Slot& slot : g_slots) {
    if (slot.state.load() != kLive) continue;
    const uintptr_t begin = slot.begin.load(), end = slot.end.load();
    if (address < begin || address >= end) continue;
    const uintptr_t page = address & ~(g_page - 1);
    void* zeros = mmap(reinterpret_cast<void*>(page), end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zeros == MAP_FAILED) return false;
    slot.faulted.store(1);
    return true;
  }
  return false;
}

void on_sigbus(int signal, siginfo_t* info, void* context) {
  const int saved = errno;
  // si_code > 0: the kernel raised it for a fault at si_addr; <= 0: a process sent it.
  if (info->si_code > 0 && zero_fill(reinterpret_cast<uintptr_t>(info->si_addr))) {
    errno = saved;
    return;
  }
  // Not a read of our mappings: the previous action takes it when the access repeats on return
  // (by default the process dies of SIGBUS, as it would have without us), or, when a process sent
  // it, when it is delivered again (it stays blocked until this handler returns).
  sigaction(SIGBUS, &g_previous, nullptr);
  if (info->si_code <= 0) raise(SIGBUS);
  errno = saved;
}

void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, nullptr, &g_previous);  // read first: ours may run as soon as it is set
    sigaction(SIGBUS, &action, nullptr);
  });
}

int claim_slot(uintptr_t begin, uintptr_t end) {
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kChanging)) continue;
    g_slots[i].begin.store(begin);
    g_slots[i].end.store(end);
    g_slots[i].faulted.store(0);
    g_slots[i].state.store(kLive);
    return i;
  }
  return -1;
}

void release_slot(int i) {
  g_slots[i].state.store(kChanging);
  g_slots[i].begin.store(0);
  g_slots[i].end.store(0);
  g_slots[i].state.store(kFree);
}

}  // namespace

Status MappedFile::open(const std::string& path, std::unique_ptr<MappedFile>* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO is refused, not waited on
  DCR_REQUIRE(fd >= 0, errno == ENOENT ? Code::not_found : Code::io_error,
              "cannot open '" + path + "': " + std::strerror(errno));
  const Status st = map(fd, path, out);
  ::close(fd);
  return st;
}

Status MappedFile::map(int fd, const std::string& path, std::unique_ptr<MappedFile>* out) {
  struct stat st {};
  DCR_REQUIRE(fstat(fd, &st) == 0, Code::io_error, "cannot stat '" + path + "': " + std::strerror(errno));
  DCR_REQUIRE(S_ISREG(st.st_mode), Code::invalid_argument,
              "'" + path + "' is not a regular file (" +
                  (S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket") + ")");
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = static_cast<uint64_t>(st.st_size);
  f->opened_ = Identity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), f->size_,
                        st.st_mtim.tv_sec,  st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
  if (f->size_ > 0) {
    install_handler();  // before the first read of any mapping
    void* data = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    DCR_REQUIRE(data != MAP_FAILED, Code::io_error, "cannot map '" + path + "': " + std::strerror(errno));
    f->data_ = static_cast<uint8_t*>(data);
    const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
    f->slot_ = claim_slot(begin, begin + ((f->size_ + g_page - 1) & ~(g_page - 1)));
    if (f->slot_ < 0) {
      munmap(data, f->size_);
      f->data_ = nullptr;
      return Status(Code::io_error, "cannot map '" + path + "': more than " + std::to_string(kSlots) +
                                        " files are mapped at once");
    }
  }
  *out = std::move(f);
  return Status::ok();
}

MappedFile::~MappedFile() {
  if (slot_ >= 0) release_slot(slot_);  // before the range can be mapped again by anyone
  if (data_) munmap(data_, size_);
}

void MappedFile::advise_random() const {
  if (data_) madvise(data_, size_, MADV_RANDOM);
}

bool MappedFile::faulted() const { return slot_ >= 0 && g_slots[slot_].faulted.load() != 0; }

std::string MappedFile::differences(const Identity& now) const {
  std::string what;
  const auto add = [&what](const std::string& one) { what += (what.empty() ? "" : ", ") + one; };
  if (faulted()) add("pages vanished under the read: it was truncated");
  if (now.device != opened_.device || now.inode != opened_.inode) add("another file is in its place: it was replaced");
  if (now.size != opened_.size) add("its size went from " + std::to_string(opened_.size) + " to " + std::to_string(now.size));
  if (now.mtime_s != opened_.mtime_s || now.mtime_ns != opened_.mtime_ns) add("it was written to (mtime)");
  if (now.ctime_s != opened_.ctime_s || now.ctime_ns != opened_.ctime_ns) add("its inode changed (ctime)");
  return what;
}

Status MappedFile::check_unchanged() const {
  struct stat st {};
  std::string what;
  if (::stat(path_.c_str(), &st) != 0) {
    what = std::string("it is gone: ") + std::strerror(errno);
  } else {
    what = differences(Identity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                                static_cast<uint64_t>(st.st_size), st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                                st.st_ctim.tv_sec, st.st_ctim.tv_nsec});
  }
  // io_error, not corrupt: the bytes are not known to be bad (a reader of dcr's own files takes
  // corrupt for damage and repairs), the read was torn by a writer, and reading again once it has
  // finished succeeds.
  DCR_REQUIRE(what.empty(), Code::io_error, "'" + path_ + "' changed while it was being read (" + what + ")");
  return Status::ok();
}

}  // namespace dcr
