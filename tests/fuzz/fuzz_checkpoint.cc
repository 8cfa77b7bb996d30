// libFuzzer target for the checkpoint readers: the first byte picks safetensors (even) or dcr's
// HDF5 checkpoint (odd), the rest is the file. Every input must end in a Status, never a crash, an
// exception, a hang or a sanitizer report; an accepted file must hold a valid manifest.
#include <cstdint>
#include <vector>

#include "dcr/ckpt/hdf5_checkpoint.h"
#include "dcr/ckpt/safetensors.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool hdf5 = data[0] & 1;
  const std::string path = dcr::test::fuzz_file(hdf5 ? ".h5" : ".safetensors", data + 1, size - 1);
  dcr::Manifest manifest;
  dcr::CanonicalBits bits;
  const dcr::Status s = hdf5 ? dcr::read_hdf5_checkpoint(path, &manifest, &bits, nullptr)
                             : dcr::read_safetensors(path, &manifest, &bits);
  if (s.is_ok() && !manifest.validate().is_ok()) __builtin_trap();
  return 0;
}

// A small model with every dtype, as safetensors and as a sealed HDF5 checkpoint.
std::vector<std::vector<uint8_t>> dcr_fuzz_seeds() {
  dcr::Manifest m;
  dcr::CanonicalBits bits;
  const dcr::DType dtypes[] = {dcr::DType::bf16, dcr::DType::f32, dcr::DType::i64, dcr::DType::u8};
  for (size_t i = 0; i < 4; ++i) {
    m.tensors.push_back(dcr::TensorDesc{"layers.0.t" + std::to_string(i), dtypes[i], {2, 3}, i == 2});
    bits.emplace_back(m.tensors.back().nbytes(), static_cast<uint8_t>(i + 1));
  }
  const std::string st = "/tmp/dcr-fuzz-seed.safetensors", h5 = "/tmp/dcr-fuzz-seed.h5";
  if (!dcr::write_safetensors(st, m, bits).is_ok() || !dcr::write_hdf5_checkpoint(h5, m, bits, 1, 0).is_ok()) return {};
  return {dcr::test::seed(0, dcr::test::file_bytes(st)), dcr::test::seed(1, dcr::test::file_bytes(h5))};
}
