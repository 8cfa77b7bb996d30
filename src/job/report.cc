// The JSON and CSV records of `dcr refit`.
#include <fstream>

#include <nlohmann/json.hpp>

#include "src/job/refit.h"

namespace dcr {

double speedup(const StepRecord& r) { return r.seconds > 0 && r.full_seconds > 0 ? r.full_seconds / r.seconds : 0; }

bool compared_bytes(const StepRecord& r) { return r.checked == kCheckedModelBytes; }

namespace {

// true / false where the bytes were compared; null where they were not (a record never claims a
// check that was not made).
nlohmann::json bitexact_json(const StepRecord& r) {
  return compared_bytes(r) ? nlohmann::json(r.bitexact) : nlohmann::json(nullptr);
}

}  // namespace

Status write_refit_json(const RefitReport& report, const std::string& path) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepRecord& r : report.steps) {
    steps.push_back({{"version", r.version}, {"base", r.base}, {"kind", r.kind}, {"change_rate", r.change_rate},
                     {"frames", r.frames}, {"trainer_frames", r.trainer_frames}, {"wire_bytes", r.wire_bytes},
                     {"full_bytes", r.full_bytes},
                     {"seconds", r.seconds}, {"full_seconds", r.full_seconds}, {"bcast_seconds", r.bcast_seconds},
                     {"speedup", speedup(r)}, {"lag_seconds", r.lag_s}, {"published", r.published}, {"committed", r.committed}, {"bitexact", bitexact_json(r)}, {"checked", r.checked},
                     {"stage_seconds",
                      {{"encode", r.encode_s}, {"send", r.send_s}, {"relay", r.forward_s}, {"apply", r.apply_s},
                       {"commit", r.commit_s}}},
                     {"apply", r.apply}, {"staging_seconds", r.staging_s}, {"pause_seconds", r.pause_s},
                     {"rollout_bytes",
                      {{"received", r.received_bytes}, {"staged_memory", r.staged_memory}, {"staged_spilled", r.staged_spilled}}},
                     {"memory",
                      {{"trainer", {{"peak_anon", r.trainer_anon}, {"shard", r.trainer_shard}}},
                       {"relay", {{"peak_anon", r.relay_anon}}},
                       {"rollout", {{"peak_anon", r.rollout_anon}, {"shard", r.rollout_shard}}}}},
                     {"scanned", {{"bytes", r.scanned_bytes}, {"most_per_trainer", r.scanned_most}, {"balance", r.scan_balance}}},
                     {"store", {{"gets", r.store_gets}, {"lists", r.store_lists}, {"puts", r.store_puts}, {"put_bytes", r.store_put_bytes}}},
                     {"contexts",
                      {{"mode", r.contexts}, {"frames", r.context_frames}, {"declined", r.declined_frames},
                       {"link_gbps", r.link_gbps}, {"link", r.link_source}}}});
  }
  const nlohmann::json doc = {{"job", report.summary}, {"manifest_hash", report.manifest_hash},
                              {"model_bytes", report.model_bytes}, {"steps", steps}};
  std::ofstream out(path);
  DCR_REQUIRE(out.good(), Code::io_error, "cannot write refit records to '" + path + "'");
  out << doc.dump(2) << "\n";
  return out.good() ? Status::ok() : Status(Code::io_error, "writing '" + path + "' failed");
}

Status write_refit_csv(const RefitReport& report, const std::string& path) {
  std::ofstream out(path);
  DCR_REQUIRE(out.good(), Code::io_error, "cannot write refit records to '" + path + "'");
  out << "version,kind,change_rate,frames,wire_bytes,full_bytes,seconds,full_seconds,bcast_seconds,speedup,"
         "committed,bitexact,checked,encode_s,send_s,relay_s,apply_s,commit_s,contexts,context_frames,declined_frames,"
         "link_gbps,link,lag_s,apply,staging_seconds,pause_seconds,received_bytes,staged_memory,staged_spilled,store_gets,store_lists,store_puts,store_put_bytes,"
         "trainer_anon,trainer_shard,relay_anon,rollout_anon,rollout_shard,scanned_bytes,scanned_most\n";
  for (const StepRecord& r : report.steps) {
    out << r.version << ',' << r.kind << ',' << r.change_rate << ',' << r.frames << ',' << r.wire_bytes << ','
        << r.full_bytes << ',' << r.seconds << ',' << r.full_seconds << ',' << r.bcast_seconds << ',' << speedup(r)
        << ',' << r.committed << ',' << (compared_bytes(r) ? (r.bitexact ? "1" : "0") : "") << ',' << r.checked << ','
        << r.encode_s << ',' << r.send_s << ',' << r.forward_s << ','
        << r.apply_s << ',' << r.commit_s << ',' << r.contexts << ',' << r.context_frames << ','
        << r.declined_frames << ',' << r.link_gbps << ',' << r.link_source << ',' << r.lag_s << ',' << r.apply << ','
        << r.staging_s << ',' << r.pause_s << ',' << r.received_bytes << ',' << r.staged_memory << ','
        << r.staged_spilled << ',' << r.store_gets << ',' << r.store_lists << ',' << r.store_puts << ','
        << r.store_put_bytes << ',' << r.trainer_anon << ',' << r.trainer_shard << ',' << r.relay_anon << ','
        << r.rollout_anon << ',' << r.rollout_shard << ',' << r.scanned_bytes << ',' << r.scanned_most << '\n';
  }
  return out.good() ? Status::ok() : Status(Code::io_error, "writing '" + path + "' failed");
}

}  // namespace dcr
