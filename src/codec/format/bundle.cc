#include "src/codec/format/bundle.h"

#include <string>

#include "dcr/codec/byte_io.h"

namespace dcr {

Status check_bundle_boxes(const std::vector<Box>& boxes, uint64_t elements) {
  DCR_REQUIRE(!boxes.empty() && boxes.size() <= kMaxBundleBoxes, Code::corrupt,
              "bundle lists " + std::to_string(boxes.size()) + " boxes (1 to " + std::to_string(kMaxBundleBoxes) +
                  " allowed)");
  uint64_t total = 0;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const Box& b = boxes[i];
    DCR_REQUIRE(b.tensor != kBundleTensor && b.rows <= kMaxFrameElements && b.cols <= kMaxFrameElements &&
                    b.rows * b.cols <= kMaxFrameElements && b.row0 <= UINT64_MAX - b.rows &&
                    b.col0 <= UINT64_MAX - b.cols,
                Code::corrupt, "bundle box " + std::to_string(i) + " (" + b.describe() + ") is out of range");
    total += b.elements();
    for (size_t j = 0; j < i; ++j) {
      const Box& o = boxes[j];
      const bool overlap = o.tensor == b.tensor && o.row0 < b.row0 + b.rows && b.row0 < o.row0 + o.rows &&
                           o.col0 < b.col0 + b.cols && b.col0 < o.col0 + o.cols;
      DCR_REQUIRE(!overlap, Code::corrupt, "bundle boxes " + std::to_string(j) + " (" + o.describe() + ") and " +
                                               std::to_string(i) + " (" + b.describe() + ") overlap");
    }
  }
  DCR_REQUIRE(total == elements, Code::corrupt,
              "bundle boxes hold " + std::to_string(total) + " elements, its header " + std::to_string(elements));
  return Status::ok();
}

void write_box_list(const std::vector<Box>& boxes, StreamCodec* codec, std::vector<uint8_t>* scratch,
                    std::vector<uint8_t>* out) {
  scratch->clear();
  put_varint(scratch, boxes.size());
  for (const Box& b : boxes) {
    for (uint64_t field : {uint64_t{b.tensor}, b.row0, b.rows, b.col0, b.cols}) put_varint(scratch, field);
  }
  StreamOptions options;
  options.try_zstd = true;
  codec->write(scratch->data(), scratch->size(), options, out);
}

Status read_box_list(const uint8_t* frame, FrameHeader* h, StreamCodec* codec, std::vector<Box>* boxes,
                     const uint8_t** payload) {
  ByteReader reader(frame + kFrameHeaderBytes, h->payload_bytes, "bundle box list");
  const uint8_t* bytes;
  size_t size;
  const std::string what = "frame " + h->describe();
  DCR_TRY(codec->read(&reader, 1 + 5 * 10 * kMaxBundleBoxes, 0, &bytes, &size).with_context(what));
  ByteReader list(bytes, size, "bundle box list");
  uint64_t n = 0;
  DCR_TRY(list.read_varint(&n).with_context(what));
  DCR_REQUIRE(n >= 1 && n <= kMaxBundleBoxes, Code::corrupt, what + ": bundle lists " + std::to_string(n) + " boxes");
  boxes->resize(n);
  for (Box& b : *boxes) {
    uint64_t tensor = 0;
    DCR_TRY(list.read_varint(&tensor).with_context(what));
    for (uint64_t* field : {&b.row0, &b.rows, &b.col0, &b.cols}) DCR_TRY(list.read_varint(field).with_context(what));
    DCR_REQUIRE(tensor < kBundleTensor, Code::corrupt, what + ": bundle box names tensor " + std::to_string(tensor));
    b.tensor = static_cast<uint32_t>(tensor);
  }
  DCR_REQUIRE(list.remaining() == 0, Code::corrupt, what + ": bundle box list has trailing bytes");
  DCR_TRY(check_bundle_boxes(*boxes, h->count()).with_context(what));
  *payload = frame + kFrameHeaderBytes + reader.position();
  h->payload_bytes -= reader.position();
  return Status::ok();
}

}  // namespace dcr
