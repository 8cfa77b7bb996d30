// libFuzzer target for the durable state readers: the first byte picks a rank journal (even) or a
// frame-spool manifest (odd), the rest is the file. Every input must end in records or a Status,
// never a crash or a hang; a journal read must not change the file.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "dcr/journal/journal.h"
#include "fuzz/fuzz_support.h"
#include "src/spool/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 1) {
    dcr::spool::Manifest manifest;
    dcr::spool::parse_manifest(std::string(reinterpret_cast<const char*>(data + 1), size - 1), "MANIFEST", &manifest);
    return 0;
  }
  const std::string path = dcr::test::fuzz_file(".journal", data + 1, size - 1);
  dcr::Journal journal;
  uint64_t version = 0, base = 0, hash = 0;
  if (journal.open_read_only(path).is_ok()) {
    journal.last_committed(&version, &base, &hash);
    journal.last_snapshot(&version);
  }
  if (dcr::test::file_bytes(path).size() != size - 1) __builtin_trap();  // read-only means read-only
  return 0;
}

// A journal with every record type and a manifest listing two frames.
std::vector<std::vector<uint8_t>> dcr_fuzz_seeds() {
  const std::string path = "/tmp/dcr-fuzz-seed.journal";
  std::remove(path.c_str());
  {
    dcr::Journal j;
    if (!j.open(path).is_ok()) return {};
    j.append({dcr::JournalRecord::begin, 0, 1, 0}, false);
    j.append({dcr::JournalRecord::applied, 1, 3, 0}, false);
    j.append({dcr::JournalRecord::voted, 1, 0, 0}, false);
    j.append({dcr::JournalRecord::committed, 1, 0, 0x1234}, true);
    j.append({dcr::JournalRecord::snapshot, 1, 0, 0}, true);
  }
  dcr::spool::Manifest m;
  m.base = 1;
  m.target = 2;
  m.writers = 2;
  m.frames = {{"frame-0", 100, 0xabcdef}, {"frame-1", 7, 42}};
  const std::string text = dcr::spool::format_manifest(m);
  return {dcr::test::seed(0, dcr::test::file_bytes(path)),
          dcr::test::seed(1, std::vector<uint8_t>(text.begin(), text.end()))};
}
