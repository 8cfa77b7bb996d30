// `dcr refit`: the SPMD refit job (run under mpirun or srun).
#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "src/job/refit.h"
#include "src/cli/commands.h"
#include "src/cli/refit_options.h"

namespace dcr::cli {

namespace {
// An output file can be written: its directory exists and takes files (checked before the run).
Status writable_path(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const std::string where = dir.empty() ? "." : dir;
  DCR_REQUIRE(std::filesystem::is_directory(where) && ::access(where.c_str(), W_OK) == 0, Code::invalid_argument,
              "cannot write '" + path + "': directory '" + where + "' does not exist or is not writable");
  DCR_REQUIRE(!std::filesystem::is_directory(path), Code::invalid_argument, "cannot write '" + path + "': it is a directory");
  return Status::ok();
}

// The last word of a version's line: "verified" only where bytes were compared with the model.
const char* outcome(const StepRecord& r) {
  if (r.published) return "published";
  if (!r.committed) return "NOT COMMITTED";
  if (!compared_bytes(r)) return "committed (frame hashes checked; bytes not compared: --verify false)";
  return r.bitexact ? "verified" : "NOT VERIFIED";
}

// One version's lines of the job's output.
void print_step(const StepRecord& r) {
  const double ratio = r.full_bytes ? 100.0 * r.wire_bytes / r.full_bytes : 0;
  std::printf("v%-3llu %-5s changed %6.3f%%  wire %10.3f MB", static_cast<unsigned long long>(r.version),
              r.kind.c_str(), 100 * r.change_rate, r.wire_bytes / 1e6);
  if (r.full_bytes) std::printf(" (%5.2f%% of full)", ratio);
  std::printf("  %8.4f s", r.seconds);
  if (r.full_seconds > 0) std::printf("  full %8.4f s  speedup %6.2fx", r.full_seconds, speedup(r));
  if (r.bcast_seconds > 0) std::printf("  bcast %8.4f s", r.bcast_seconds);
  if (r.lag_s > 0) std::printf("  lag %8.3f s", r.lag_s);
  std::printf("  %s\n", outcome(r));
  std::string memory;
  const auto role = [&memory](const char* name, uint64_t anon, uint64_t shard, const char* held) {
    if (anon == 0) return;
    char text[96];
    std::snprintf(text, sizeof text, "%s%s %.1f", memory.empty() ? "" : ", ", name, anon / 1e6);
    memory += text;
    if (shard > 0) std::snprintf(text, sizeof text, " (%s %.1f)", held, shard / 1e6), memory += text;
  };
  role("trainers", r.trainer_anon, r.trainer_shard, "shard");
  role("relays", r.relay_anon, 0, "");
  role("rollouts", r.rollout_anon, r.rollout_shard, "serving");
  if (!memory.empty()) std::printf("      peak anonymous MB (largest rank): %s\n", memory.c_str());
  if (r.store_gets + r.store_lists + r.store_puts > 0) {
    std::printf("      store: %llu GETs, %llu LISTs, %llu PUTs (%.3f MB put)\n",
                static_cast<unsigned long long>(r.store_gets), static_cast<unsigned long long>(r.store_lists),
                static_cast<unsigned long long>(r.store_puts), r.store_put_bytes / 1e6);
  }
  if (r.scan_balance > 0) {
    std::printf("      trainers scanned %.3f MB, the busiest %.3f MB (max/mean %.3f)\n", r.scanned_bytes / 1e6,
                r.scanned_most / 1e6, r.scan_balance);
  }
  std::printf("      stages (slowest rank): encode %.4f s, send %.4f s, relay %.4f s, apply %.4f s, commit %.4f s\n",
              r.encode_s, r.send_s, r.forward_s, r.apply_s, r.commit_s);
  if (!r.published && r.apply == "staged") {
    std::printf("      staged: serving paused %.4f s (staging %.4f s while serving; per rollout %.3f MB received, "
                "%.3f MB held in memory, %.3f MB spilled)\n",
                r.pause_s, r.staging_s, r.received_bytes / 1e6, r.staged_memory / 1e6, r.staged_spilled / 1e6);
  } else if (!r.published) {
    std::printf("      streamed: serving paused %.4f s (the whole step: buffers mix two versions until the commit)\n",
                r.pause_s);
  }
  if (r.kind == "delta" && r.trainer_frames > 0) {
    const std::string mode = r.contexts.empty() ? "as published" : r.contexts;  // a follower encodes nothing
    std::printf("      contexts %s: %llu of %llu frames", mode.c_str(),
                static_cast<unsigned long long>(r.context_frames), static_cast<unsigned long long>(r.trainer_frames));
    if (r.contexts == "auto") {
      std::printf(", %llu kept faster (link not the bottleneck); link %.3g Gbit/s %s",
                  static_cast<unsigned long long>(r.declined_frames), r.link_gbps, r.link_source.c_str());
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

// A long version's progress: plain lines (a log), or with --progress-inline one line rewritten in
// place (a terminal: under mpirun a rank's output always goes through a pseudo-terminal, so dcr
// cannot tell a terminal from a log by itself); and a JSON object per line in --progress-json.
void print_progress(const ProgressEvent& e, bool terminal, std::FILE* json) {
  char eta[32] = "";
  if (e.eta_s >= 0 && !e.last) std::snprintf(eta, sizeof eta, ", ~%.0f s left", e.eta_s);
  std::printf("%s      v%llu %-10s frames %llu/%llu (%5.1f%%)  %.3f MB  %.3f MB/s  %.1f s%s%s", terminal ? "\r\033[K" : "",
              static_cast<unsigned long long>(e.version), e.phase.c_str(), static_cast<unsigned long long>(e.frames),
              static_cast<unsigned long long>(e.frames_total), e.percent, e.bytes / 1e6, e.rate_mb_s, e.seconds, eta,
              terminal && !e.last ? "" : "\n");
  std::fflush(stdout);
  if (json == nullptr) return;
  std::fprintf(json,
               "{\"version\": %llu, \"phase\": \"%s\", \"frames\": %llu, \"frames_total\": %llu, \"bytes\": %llu, "
               "\"seconds\": %.6f, \"rate_mb_s\": %.6f, \"eta_s\": %.3f, \"percent\": %.3f, \"last\": %s}\n",
               static_cast<unsigned long long>(e.version), e.phase.c_str(), static_cast<unsigned long long>(e.frames),
               static_cast<unsigned long long>(e.frames_total), static_cast<unsigned long long>(e.bytes), e.seconds,
               e.rate_mb_s, e.eta_s, e.percent, e.last ? "true" : "false");
  std::fflush(json);
}

}  // namespace

int run_refit_command(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  RefitConfig config;
  bool exit_now = false;
  Status s = parse_refit_config(argc, argv, &config, &exit_now);
  if (s.is_ok() && exit_now) {
    MPI_Finalize();
    return 0;
  }
  if (!s.is_ok()) {
    if (rank == 0) std::fprintf(stderr, "dcr refit: %s (see dcr refit --help)\n", s.to_string().c_str());
    MPI_Finalize();
    return 2;
  }
  for (const std::string& out : {config.json, config.csv, config.progress_json}) {
    if (s.is_ok() && !out.empty()) s = writable_path(out);
  }
  if (!s.is_ok()) {
    if (rank == 0) std::fprintf(stderr, "dcr refit: %s\n", s.to_string().c_str());
    MPI_Finalize();
    return 2;
  }
  RefitReport report;
  RefitObserver observer;
  observer.note = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  observer.step = print_step;
  std::FILE* progress_json = rank == 0 && !config.progress_json.empty() ? std::fopen(config.progress_json.c_str(), "w") : nullptr;
  const bool terminal = config.progress_inline;
  observer.progress = [terminal, progress_json](const ProgressEvent& e) { print_progress(e, terminal, progress_json); };
  {
    const MpiWorld mpi(config, MPI_COMM_WORLD);
    s = run_refit(config, mpi.world, &report, observer);
  }
  if (progress_json != nullptr) std::fclose(progress_json);
  if (rank == 0) {
    if (!s.is_ok()) std::fprintf(stderr, "dcr refit: %s\n", s.to_string().c_str());
    Status out;
    if (!config.json.empty()) out = write_refit_json(report, config.json);
    if (out.is_ok() && !config.csv.empty()) out = write_refit_csv(report, config.csv);
    if (!out.is_ok()) std::fprintf(stderr, "dcr refit: %s\n", out.to_string().c_str());
    if (s.is_ok() && !out.is_ok()) s = out;
  }
  int failed = s.is_ok() ? 0 : 1, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}

}  // namespace dcr::cli
