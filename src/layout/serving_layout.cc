#include "dcr/layout/serving_layout.h"

#include <map>

#include "dcr/layout/tp_split.h"

namespace dcr {

namespace {

// Tensors served from one buffer: `buffer` holds the members' TP parts stacked by rows, in order.
struct FusedGroup {
  std::string buffer;
  std::vector<uint32_t> members;
};

// Members are named "<prefix><stem><member>" and fuse into buffer "<prefix><stem><fused>".
struct Fusion {
  std::string stem;
  std::vector<std::string> members;
  std::string fused;
};

std::vector<Fusion> enabled_fusions(const ServingLayout& layout) {
  std::vector<Fusion> fusions;
  if (layout.fuse_qkv) fusions.push_back({"attn.", {"q.weight", "k.weight", "v.weight"}, "qkv"});
  if (layout.fuse_gate_up) fusions.push_back({"mlp.", {"gate.weight", "up.weight"}, "gate_up"});
  return fusions;
}

// The fused groups of the manifest; a group forms only when all its members exist.
std::vector<FusedGroup> fused_groups(const Manifest& manifest, const ServingLayout& layout) {
  std::map<std::string, uint32_t> ids;
  for (uint32_t id = 0; id < manifest.tensors.size(); ++id) ids[manifest.tensors[id].name] = id;
  std::vector<FusedGroup> groups;
  for (const Fusion& f : enabled_fusions(layout)) {
    const std::string first = f.stem + f.members[0];
    for (const TensorDesc& t : manifest.tensors) {
      if (!has_component_suffix(t.name, first)) continue;
      const std::string prefix = t.name.substr(0, t.name.size() - first.size()) + f.stem;
      FusedGroup group{prefix + f.fused, {}};
      for (const std::string& member : f.members) {
        const auto it = ids.find(prefix + member);
        if (it != ids.end()) group.members.push_back(it->second);
      }
      if (group.members.size() == f.members.size()) groups.push_back(group);
    }
  }
  return groups;
}

// Adds one buffer holding the TP parts of `members` stacked by rows; they must share their width.
Status add_buffer(const Manifest& manifest, const std::string& name, const std::vector<uint32_t>& members,
                  int tp, int tp_rank, Holdings* holdings) {
  std::vector<Box> parts(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    DCR_TRY(tp_part(manifest, members[i], tp, tp_rank, &parts[i]));
    DCR_REQUIRE(parts[i].cols == parts[0].cols, Code::invalid_argument,
                "cannot fuse '" + manifest.tensors[members[i]].name + "' (" + std::to_string(parts[i].cols) +
                    " columns) with '" + manifest.tensors[members[0]].name + "' (" +
                    std::to_string(parts[0].cols) + " columns) into '" + name + "'");
  }
  const uint32_t buffer = static_cast<uint32_t>(holdings->buffer_names.size());
  uint64_t offset = 0;
  for (const Box& part : parts) {
    holdings->pieces.push_back(LocalPiece{part, buffer, offset, part.cols});
    offset += part.elements();
  }
  holdings->buffer_names.push_back(name);
  holdings->buffer_elements.push_back(offset);
  return Status::ok();
}

}  // namespace

Status serving_holdings(const Manifest& manifest, const ServingLayout& layout, int rollout_rank, Holdings* out) {
  DCR_REQUIRE(layout.tp >= 1, Code::invalid_argument,
              "serving layout: tp must be at least 1, got " + std::to_string(layout.tp));
  DCR_REQUIRE(rollout_rank >= 0, Code::invalid_argument,
              "rollout rank must not be negative, got " + std::to_string(rollout_rank));
  DCR_TRY(manifest.validate());
  const int tp_rank = rollout_rank % layout.tp;
  const std::vector<FusedGroup> groups = fused_groups(manifest, layout);
  std::vector<int> group_of(manifest.tensors.size(), -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (uint32_t id : groups[g].members) group_of[id] = static_cast<int>(g);
  }
  std::vector<bool> placed(groups.size(), false);
  Holdings holdings;
  for (uint32_t id = 0; id < manifest.tensors.size(); ++id) {
    const int g = group_of[id];
    if (g < 0) {
      DCR_TRY(add_buffer(manifest, manifest.tensors[id].name, {id}, layout.tp, tp_rank, &holdings));
    } else if (!placed[g]) {
      DCR_TRY(add_buffer(manifest, groups[g].buffer, groups[g].members, layout.tp, tp_rank, &holdings));
      placed[g] = true;
    }
  }
  *out = std::move(holdings);
  return Status::ok();
}

}  // namespace dcr
