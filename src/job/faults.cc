#include "src/job/faults.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <sstream>
#include <vector>

#include "dcr/core/log.h"

namespace dcr {

namespace {

bool parse_number(const std::string& text, uint64_t* out) {
  // Digits only: stoull would take "-1" as 2^64 - 1.
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  try {
    size_t used = 0;
    *out = std::stoull(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, separator)) parts.push_back(part);
  return parts;
}

}  // namespace

Status parse_frame_fault(const std::string& text, FrameFault* fault) {
  *fault = FrameFault{};
  if (text.empty()) return Status::ok();
  const std::vector<std::string> parts = split(text, '@');
  const char* names[] = {"wrong-base", "corrupt", "forge", "unsealed"};
  const FrameFault::Kind kinds[] = {FrameFault::wrong_base, FrameFault::corrupt, FrameFault::forge, FrameFault::unsealed};
  bool known = false;
  for (int i = 0; i < 4; ++i) {
    if (parts.size() == 2 && parts[0] == names[i]) fault->kind = kinds[i], known = true;
  }
  DCR_REQUIRE(known && parse_number(parts[1], &fault->version), Code::invalid_argument,
              "--fault '" + text + "' is not wrong-base@VERSION, corrupt@VERSION, forge@VERSION or unsealed@VERSION");
  return Status::ok();
}

std::string frame_fault_text(const FrameFault& fault) {
  const char* names[] = {"", "wrong-base", "corrupt", "forge", "unsealed"};
  return fault.kind == FrameFault::none ? "" : names[fault.kind] + std::string("@") + std::to_string(fault.version);
}

Status parse_kill_point(const std::string& text, KillPoint* point) {
  *point = KillPoint{};
  point->text = text;
  if (text.empty()) return Status::ok();
  if (text.find(',') != std::string::npos) {
    const std::vector<std::string> points = split(text, ',');
    for (size_t i = 0; i < points.size(); ++i) {
      KillPoint one;
      DCR_TRY(parse_kill_point(points[i], i == 0 ? point : &one));
      if (i > 0) point->more.push_back(one);
    }
    point->text = text;
    return Status::ok();
  }
  const std::vector<std::string> p = split(text, ':');
  const Status bad(Code::invalid_argument, "--fail-at '" + text +
                                               "' is not ROLE:INDEX:PHASE:VERSION[:stop] (trainer|relay|rollout, "
                                               "encode|stream|stage|apply|commit|resume)");
  uint64_t index = 0;
  if (p.size() != 4 && !(p.size() == 5 && p[4] == "stop")) return bad;
  if (!parse_number(p[1], &index) || !parse_number(p[3], &point->version)) return bad;
  point->stop = p.size() == 5;
  const Role roles[] = {Role::trainer, Role::relay, Role::rollout};
  const Phase phases[] = {Phase::encode, Phase::stream, Phase::stage, Phase::apply, Phase::commit};
  bool role_ok = false, phase_ok = p[2] == "resume";
  point->at_resume = phase_ok;
  for (Role r : roles) role_ok |= p[0] == role_name(r) && ((point->role = r), true);
  for (Phase ph : phases) phase_ok |= p[2] == phase_name(ph) && ((point->phase = ph), true);
  if (!role_ok || !phase_ok) return bad;
  point->index = static_cast<int>(index);
  point->armed = true;
  return Status::ok();
}

void arm_kill_points(const std::string& state_dir, KillPoint* point) {
  for (KillPoint& other : point->more) arm_kill_points(state_dir, &other);
  if (!point->armed || state_dir.empty()) return;
  point->marker = state_dir + "/fail-at-" + role_name(point->role) + "-" + std::to_string(point->index) + "-" +
                  (point->at_resume ? "resume" : phase_name(point->phase)) + "-" + std::to_string(point->version) +
                  ".fired";
}

namespace {

bool names(const KillPoint& point, const Topology& t, bool at_resume, Phase phase, uint64_t version) {
  return point.armed && point.role == t.role && point.index == t.index && point.version == version &&
         point.at_resume == at_resume && (at_resume || point.phase == phase);
}

// Kills (or stops) this process at `point` unless a marker says it fired in an earlier run.
void fire(const KillPoint& point, const Topology& t, const char* where, uint64_t version) {
  if (!point.marker.empty()) {
    if (::access(point.marker.c_str(), F_OK) == 0) return;  // fired in an earlier run
    const int fd = ::open(point.marker.c_str(), O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  DCR_LOG(error, "refit", "%s: injected %s in phase %s of version %llu", t.describe().c_str(),
          point.stop ? "stop (SIGSTOP)" : "kill -9", where, static_cast<unsigned long long>(version));
  std::fflush(stderr);
  std::raise(point.stop ? SIGSTOP : SIGKILL);  // only a stop returns, after SIGCONT
}

}  // namespace

void kill_point(const KillPoint& point, const Topology& topology, Phase phase, uint64_t version) {
  for (const KillPoint& other : point.more) kill_point(other, topology, phase, version);
  if (names(point, topology, false, phase, version)) fire(point, topology, phase_name(phase), version);
}

void kill_point_at_resume(const KillPoint& point, const Topology& topology, uint64_t version) {
  for (const KillPoint& other : point.more) kill_point_at_resume(other, topology, version);
  if (names(point, topology, true, Phase::encode, version)) fire(point, topology, "resume", version);
}

StepHooks kill_hooks(const KillPoint& point) {
  StepHooks hooks;
  if (!point.armed) return hooks;
  hooks.at = [&point](const Topology& rank, Phase phase, uint64_t target) {
    kill_point(point, rank, phase, target);
    return Status::ok();
  };
  return hooks;
}

}  // namespace dcr
