// Internal to the codec: the encoder's stream building, positions or words into the raw streams of
// a section (each coding's streams as docs/frame-format.md lays them out).
#pragma once

#include <cstdint>

#include "dcr/codec/frame.h"
#include "src/codec/encode/section.h"

namespace dcr {

void build_positions(PosCoding coding, const uint32_t* positions, uint64_t changed, uint64_t count,
                     Section* section);
void build_values(ValuePacking packing, const uint64_t* words, uint64_t changed, unsigned width,
                  Section* section);
// The gaps-joint position section (joint bytes, the escapes' gap tokens, every gap's extra bits) and
// the joint value section (the escapes' word tokens, their extra bits) of the changes whose gaps and
// words are the token pairs `gaps` and `values` (as build_positions and build_values write them).
void build_joint(const Section& gaps, const Section& values, Section* positions, Section* joint_values);

}  // namespace dcr
