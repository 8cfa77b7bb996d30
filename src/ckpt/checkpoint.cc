#include "dcr/ckpt/checkpoint.h"

#include <filesystem>

#include "dcr/ckpt/hdf5_checkpoint.h"
#include "dcr/ckpt/safetensors.h"
#include "src/ckpt/tensor_size.h"

namespace dcr {

namespace {

enum class Format { safetensors, hdf5 };

Status format_of(const std::string& path, Format* format) {
  const std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".safetensors") {
    *format = Format::safetensors;
  } else if (extension == ".h5" || extension == ".hdf5") {
    *format = Format::hdf5;
  } else {
    return Status(Code::invalid_argument, "checkpoint '" + path + "': unknown extension '" + extension +
                                              "' (expected .safetensors, .h5 or .hdf5)");
  }
  return Status::ok();
}

}  // namespace

Status check_checkpoint(const Manifest& manifest, const CanonicalBits& bits) {
  DCR_TRY(manifest.validate());
  DCR_REQUIRE(bits.size() == manifest.tensors.size(), Code::invalid_argument,
              "the manifest has " + std::to_string(manifest.tensors.size()) + " tensors but there are " +
                  std::to_string(bits.size()) + " byte arrays");
  for (size_t i = 0; i < bits.size(); ++i) {
    const TensorDesc& t = manifest.tensors[i];
    DCR_REQUIRE(bits[i].size() == t.nbytes(), Code::invalid_argument,
                "tensor '" + t.name + "' (" + dtype_name(t.dtype) + " " + shape_text(t.shape) + ") needs " +
                    std::to_string(t.nbytes()) + " bytes but has " + std::to_string(bits[i].size()));
  }
  return Status::ok();
}

Status load_checkpoint(const std::string& path, Manifest* manifest, CanonicalBits* bits) {
  Format format;
  DCR_TRY(format_of(path, &format));
  if (format == Format::safetensors) return read_safetensors(path, manifest, bits);
  return read_hdf5_checkpoint(path, manifest, bits, nullptr);
}

Status save_checkpoint(const std::string& path, const Manifest& manifest, const CanonicalBits& bits,
                       uint64_t version) {
  Format format;
  DCR_TRY(format_of(path, &format));
  if (format == Format::safetensors) return write_safetensors(path, manifest, bits);
  return write_hdf5_checkpoint(path, manifest, bits, version, 0);
}

Status convert_checkpoint(const std::string& in, const std::string& out, uint64_t version) {
  Format format;
  DCR_TRY(format_of(out, &format));  // before reading a large input
  Manifest manifest;
  CanonicalBits bits;
  DCR_TRY(load_checkpoint(in, &manifest, &bits));
  return save_checkpoint(out, manifest, bits, version);
}

}  // namespace dcr
