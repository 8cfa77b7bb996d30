// `dcr state DIR`: what a refit state directory says each rank has committed (operators check it
// after a failure; the fault tests check that no rank is left on a mixed or unknown version).
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "dcr/journal/journal.h"
#include "src/cli/commands.h"

namespace dcr::cli {

int run_state(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help") {
    std::printf("usage: dcr state DIR\n\nPrints each rank's last committed version and snapshot from the journals in DIR\n"
                "(a `dcr refit --state-dir`). Exits 1 when the ranks disagree or a journal is unreadable.\n");
    return argc == 2 ? 0 : 2;
  }
  const std::string dir = argv[1];
  std::error_code error;
  std::map<int, std::filesystem::path> journals;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rank-", 0) == 0 && entry.path().extension() == ".journal") {
      journals[std::stoi(name.substr(5))] = entry.path();
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
    const Status s = journal.open(path.string());
    uint64_t version = 0, base = 0, manifest = 0, snapshot = 0;
    if (!s.is_ok()) {
      std::printf("rank %3d  unreadable: %s\n", rank, s.to_string().c_str());
      readable = false;
      continue;
    }
    const bool committed = journal.last_committed(&version, &base, &manifest);
    const bool snap = journal.last_snapshot(&snapshot);
    std::printf("rank %3d  committed %s  snapshot %s  records %zu\n", rank,
                committed ? ("v" + std::to_string(version) + " (base v" + std::to_string(base) + ")").c_str() : "none",
                snap ? ("v" + std::to_string(snapshot)).c_str() : "none", journal.records().size());
    versions.insert(committed ? version : UINT64_MAX);
  }
  const bool agree = readable && versions.size() == 1 && *versions.begin() != UINT64_MAX;
  std::printf("%s\n", agree ? ("all ranks on committed version " + std::to_string(*versions.begin())).c_str()
                            : "ranks DISAGREE or have no committed version");
  return agree ? 0 : 1;
}

}  // namespace dcr::cli
