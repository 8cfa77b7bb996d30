// What the file-reader fuzz targets share: each input is a file's bytes, written to a per-process
// scratch file (the readers take paths) with the extension the reader expects.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace dcr::test {

inline std::string fuzz_file(const std::string& extension, const uint8_t* data, size_t size) {
  const std::string path = "/tmp/dcr-fuzz-" + std::to_string(::getpid()) + extension;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                static_cast<std::streamsize>(size));
  return path;
}

inline std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A seed: the selector byte, then the file's bytes.
inline std::vector<uint8_t> seed(uint8_t selector, const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> out(bytes.size() + 1, selector);
  std::copy(bytes.begin(), bytes.end(), out.begin() + 1);
  return out;
}

}  // namespace dcr::test
