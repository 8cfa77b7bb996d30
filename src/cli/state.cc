// `dcr state DIR`: what a refit state directory says each rank has committed (operators check it
// after a failure; the fault tests check that no rank is left on a mixed or unknown version).
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "dcr/journal/journal.h"
#include "src/core/files.h"
#include "src/cli/commands.h"

namespace dcr::cli {

int run_state(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help") {
    std::printf("usage: dcr state DIR\n\nPrints each rank's last committed version and snapshot from the journals in DIR\n"
                "(a `dcr refit --state-dir`), and the version a rerun resumes at: the highest any journal proves\n"
                "committed. Only reads. Exits 1 when the ranks disagree or a journal is unreadable.\n");
    return argc == 2 ? 0 : 2;
  }
  const std::string dir = argv[1];
  std::error_code error;
  std::map<uint64_t, std::filesystem::path> journals;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    uint64_t rank = 0;
    if (entry.path().extension() == ".journal" && files::parse_numbered(entry.path().stem().string(), "rank-", &rank) &&
        rank < (1u << 30)) {
      journals[rank] = entry.path();
    } else if (entry.path().extension() == ".journal") {
      std::fprintf(stderr, "dcr state: ignoring '%s' (not rank-<N>.journal)\n", entry.path().string().c_str());
    }
  }
  if (error || journals.empty()) {
    std::fprintf(stderr, "dcr state: no journals in '%s'%s\n", dir.c_str(), error ? (": " + error.message()).c_str() : "");
    return 1;
  }
  std::set<uint64_t> versions;
  bool readable = true;
  for (const auto& [rank, path] : journals) {
    Journal journal;
    const Status s = journal.open_read_only(path.string());
    uint64_t version = 0, base = 0, manifest = 0, snapshot = 0;
    if (!s.is_ok()) {
      std::printf("rank %3llu  unreadable: %s\n", static_cast<unsigned long long>(rank), s.to_string().c_str());
      readable = false;
      continue;
    }
    const bool committed = journal.last_committed(&version, &base, &manifest);
    const bool snap = journal.last_snapshot(&snapshot);
    std::printf("rank %3llu  committed %s  snapshot %s  records %zu\n", static_cast<unsigned long long>(rank),
                committed ? ("v" + std::to_string(version) + " (base v" + std::to_string(base) + ")").c_str() : "none",
                snap ? ("v" + std::to_string(snapshot)).c_str() : "none", journal.records().size());
    versions.insert(committed ? version : UINT64_MAX);
  }
  const bool agree = readable && versions.size() == 1 && *versions.begin() != UINT64_MAX;
  versions.erase(UINT64_MAX);
  if (agree) {
    std::printf("all ranks on committed version %llu\n", static_cast<unsigned long long>(*versions.begin()));
  } else {
    std::printf("ranks DISAGREE or have no committed version; a rerun resumes at %s\n",
                versions.empty() ? "the start (nothing committed)"
                                 : ("v" + std::to_string(*versions.rbegin()) + ", the highest any journal proves").c_str());
  }
  return agree ? 0 : 1;
}

}  // namespace dcr::cli
