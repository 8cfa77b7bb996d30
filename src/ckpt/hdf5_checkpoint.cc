#include "dcr/ckpt/hdf5_checkpoint.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "dcr/ckpt/checkpoint.h"
#include "dcr/codec/byte_io.h"
#include "dcr/core/hash.h"
#include "src/core/files.h"
#include "src/core/mapped_file.h"
#include "src/ckpt/h5_util.h"
#include "src/ckpt/tensor_size.h"

namespace dcr {

namespace {

constexpr const char* kFormat = "dcr-checkpoint-1";
constexpr const char* kGroup = "tensors";

// HDF5 link name of a tensor: '/' (the HDF5 path separator) becomes '|'.
std::string link_name(const std::string& tensor) {
  std::string link = tensor;
  std::replace(link.begin(), link.end(), '/', '|');
  return link;
}

std::string tensor_name(const std::string& link) {
  std::string tensor = link;
  std::replace(tensor.begin(), tensor.end(), '|', '/');
  return tensor;
}

std::string where(const std::string& tensor) {
  return "tensor '" + tensor + "' (dataset '/" + std::string(kGroup) + "/" + link_name(tensor) + "')";
}

std::string hex(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

Status check_names(const Manifest& manifest) {
  for (const TensorDesc& t : manifest.tensors) {
    DCR_REQUIRE(t.name.find('|') == std::string::npos, Code::invalid_argument,
                "tensor '" + t.name + "' contains '|', which stands for '/' in HDF5 checkpoint names");
    DCR_REQUIRE(t.name != ".", Code::invalid_argument, "a tensor cannot be named '.' in an HDF5 checkpoint");
  }
  return Status::ok();
}

Status write_tensor(hid_t group, const TensorDesc& t, const std::vector<uint8_t>& bytes) {
  const std::vector<hsize_t> dims(t.shape.begin(), t.shape.end());
  H5Id space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
             H5Sclose);
  H5Id type = h5_type(t.dtype);
  H5Id set(space.valid() && type.valid()
               ? H5Dcreate2(group, link_name(t.name).c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
               : -1,
           H5Dclose);
  DCR_REQUIRE(set.valid(), Code::io_error, "cannot create the dataset");
  DCR_REQUIRE(H5Dwrite(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0, Code::io_error,
              "cannot write the data");
  const uint64_t hash = hash64(bytes.data(), bytes.size());
  const uint8_t is_buffer = t.is_buffer ? 1 : 0;
  DCR_TRY(write_string_attribute(set.get(), "dtype", dtype_name(t.dtype)));
  DCR_TRY(write_attribute(set.get(), "hash", H5T_STD_U64LE, H5T_NATIVE_UINT64, &hash));
  return write_attribute(set.get(), "is_buffer", H5T_STD_U8LE, H5T_NATIVE_UINT8, &is_buffer);
}

Status write_file_attributes(hid_t file, const Manifest& manifest, uint64_t version, uint64_t base) {
  const uint64_t manifest_hash = manifest.hash();
  DCR_TRY(write_string_attribute(file, "format", kFormat));
  DCR_TRY(write_attribute(file, "version", H5T_STD_U64LE, H5T_NATIVE_UINT64, &version));
  DCR_TRY(write_attribute(file, "base", H5T_STD_U64LE, H5T_NATIVE_UINT64, &base));
  return write_attribute(file, "manifest_hash", H5T_STD_U64LE, H5T_NATIVE_UINT64, &manifest_hash);
}

// The seal: HDF5's user block (bytes the library skips) holds "DCRSEAL1", the file's length and
// hash64 of everything after the block, so a damaged file is refused before libhdf5 parses it
// (flipped metadata bytes made libhdf5 read out of bounds).
constexpr size_t kSealBytes = 512;
constexpr char kSealMagic[8] = {'D', 'C', 'R', 'S', 'E', 'A', 'L', '1'};

// hash64 of the file's bytes after the seal, and its length, through a read-only mapping. A file
// changed while it is hashed (cut short, rewritten) is io_error naming it, not a hash that fails
// its seal: the file may be whole once the writer has finished.
Status hash_after_seal(int fd, const std::string& path, uint64_t* length, uint64_t* hash) {
  std::unique_ptr<MappedFile> file;
  DCR_TRY(MappedFile::map(fd, path, &file));
  DCR_REQUIRE(file->size() > kSealBytes, Code::corrupt, "'" + path + "' is too short to hold a sealed HDF5 checkpoint");
  *length = file->size();
  *hash = hash64(file->data() + kSealBytes, *length - kSealBytes);
  return file->check_unchanged();
}

Status write_seal(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  DCR_REQUIRE(fd >= 0, Code::io_error, "cannot reopen '" + path + "' to seal it: " + std::strerror(errno));
  uint64_t length = 0, hash = 0;
  Status s = hash_after_seal(fd, path, &length, &hash);
  uint8_t seal[kSealBytes] = {};
  std::memcpy(seal, kSealMagic, sizeof kSealMagic);
  store_le(seal + 8, length, 8);
  store_le(seal + 16, hash, 8);
  if (s.is_ok() && ::pwrite(fd, seal, kSealBytes, 0) != static_cast<ssize_t>(kSealBytes)) {
    s = Status(Code::io_error, "cannot seal '" + path + "': " + std::strerror(errno));
  }
  ::close(fd);
  return s;
}

// The file must carry a seal that matches it. A file without one (written by another tool, or by
// dcr before seals) is refused too: only its seal keeps damaged metadata away from libhdf5.
Status check_seal(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  DCR_REQUIRE(fd >= 0, Code::io_error, "cannot open '" + path + "': " + std::strerror(errno));
  uint8_t seal[kSealBytes] = {};
  const bool whole = ::pread(fd, seal, kSealBytes, 0) == static_cast<ssize_t>(kSealBytes);
  Status s(Code::corrupt, "the file has no dcr seal (it was not written by this dcr, or its first bytes were "
                          "damaged); write it again with `dcr convert` from its source");
  if (whole && std::memcmp(seal, kSealMagic, sizeof kSealMagic) == 0) {
    s = Status::ok();
    uint64_t length = 0, hash = 0;
    s = hash_after_seal(fd, path, &length, &hash);
    if (s.is_ok() && (length != get_le(seal + 8, 8) || hash != get_le(seal + 16, 8))) {
      s = Status(Code::corrupt, "the file does not match its seal (length " + std::to_string(length) + ", sealed " +
                                    std::to_string(get_le(seal + 8, 8)) + "): it was damaged after it was written");
    }
  }
  ::close(fd);
  return s;
}

Status write_file(const std::string& tmp, const Manifest& manifest, const CanonicalBits& bits, uint64_t version,
                  uint64_t base) {
  H5Id create(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  DCR_REQUIRE(create.valid() && H5Pset_userblock(create.get(), kSealBytes) >= 0, Code::internal,
              "cannot make the file creation properties");
  H5Id file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, create.get(), H5P_DEFAULT), H5Fclose);
  DCR_REQUIRE(file.valid(), Code::io_error, "cannot create '" + tmp + "'");
  DCR_TRY(write_file_attributes(file.get(), manifest, version, base));
  H5Id order(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  DCR_REQUIRE(order.valid() && H5Pset_link_creation_order(order.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) >= 0,
              Code::internal, "cannot make the group creation properties");
  H5Id group(H5Gcreate2(file.get(), kGroup, H5P_DEFAULT, order.get(), H5P_DEFAULT), H5Gclose);
  DCR_REQUIRE(group.valid(), Code::io_error, "cannot create group '/tensors'");
  for (size_t i = 0; i < manifest.tensors.size(); ++i) {
    DCR_TRY(write_tensor(group.get(), manifest.tensors[i], bits[i]).with_context(where(manifest.tensors[i].name)));
  }
  DCR_REQUIRE(group.close() && H5Fflush(file.get(), H5F_SCOPE_GLOBAL) >= 0 && file.close(), Code::io_error,
              "cannot flush and close '" + tmp + "'");
  return write_seal(tmp);
}

Status write_checked(const std::string& path, const Manifest& manifest, const CanonicalBits& bits, uint64_t version,
                     uint64_t base, unsigned mode) {
  DCR_TRY(check_checkpoint(manifest, bits));
  DCR_TRY(check_names(manifest));
  const QuietHdf5 quiet;
  const std::string tmp = files::temp_path(path);
  // HDF5 leaks its file state when creating a file fails for want of space: check first.
  uint64_t bytes = 1 << 20;
  for (const std::vector<uint8_t>& b : bits) bytes += b.size();
  DCR_TRY(files::check_free_space(tmp, bytes));
  Status s = write_file(tmp, manifest, bits, version, base);
  if (s.is_ok() && ::chmod(tmp.c_str(), static_cast<mode_t>(mode)) != 0) {
    s = Status(Code::io_error, "cannot set the permissions of '" + tmp + "'");
  }
  if (!s.is_ok()) std::remove(tmp.c_str());
  DCR_TRY(s);
  return files::commit_file(tmp, path);
}

// The shape of a dataset; Code::corrupt unless it is simple (or scalar) with positive dimensions.
Status read_shape(hid_t set, TensorDesc* t) {
  H5Id space(H5Dget_space(set), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  DCR_REQUIRE(rank >= 0, Code::corrupt, "cannot read the dataspace");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  DCR_REQUIRE(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) == rank, Code::corrupt,
              "cannot read the dimensions");
  t->shape.assign(dims.begin(), dims.end());
  uint64_t bytes = 0;
  return checked_nbytes(*t, &bytes);
}

Status read_tensor(hid_t group, const std::string& link, TensorDesc* t, std::vector<uint8_t>* bytes) {
  H5Id set(H5Dopen2(group, link.c_str(), H5P_DEFAULT), H5Dclose);
  DCR_REQUIRE(set.valid(), Code::corrupt, "cannot open the dataset");
  std::string dtype;
  uint64_t hash = 0;
  uint8_t is_buffer = 0;
  DCR_TRY(read_string_attribute(set.get(), "dtype", &dtype));
  DCR_TRY(read_integer_attribute(set.get(), "hash", H5T_NATIVE_UINT64, &hash));
  DCR_TRY(read_integer_attribute(set.get(), "is_buffer", H5T_NATIVE_UINT8, &is_buffer));
  const Status parsed = parse_dtype(dtype, &t->dtype);
  DCR_REQUIRE(parsed.is_ok(), Code::corrupt, "attribute 'dtype': " + parsed.message());
  t->name = tensor_name(link);
  t->is_buffer = is_buffer != 0;
  DCR_TRY(read_shape(set.get(), t));
  H5Id stored(H5Dget_type(set.get()), H5Tclose);
  H5Id type = h5_type(t->dtype);
  DCR_REQUIRE(stored.valid() && type.valid() && H5Tequal(stored.get(), type.get()) > 0, Code::corrupt,
              "the stored type is not the type of dtype " + dtype);
  DCR_REQUIRE(H5Dget_storage_size(set.get()) == t->nbytes(), Code::corrupt,
              "the dataset stores " + std::to_string(H5Dget_storage_size(set.get())) + " bytes but " + dtype + " " +
                  shape_text(t->shape) + " needs " + std::to_string(t->nbytes()));
  bytes->resize(t->nbytes());
  DCR_REQUIRE(H5Dread(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes->data()) >= 0, Code::corrupt,
              "cannot read the data");
  const uint64_t actual = hash64(bytes->data(), bytes->size());
  DCR_REQUIRE(actual == hash, Code::corrupt,
              "hash mismatch: the data hashes to " + hex(actual) + " but attribute 'hash' says " + hex(hash) +
                  " (the tensor's bytes were changed)");
  return Status::ok();
}

// The name of the index-th link of `group` in creation order.
Status link_at(hid_t group, hsize_t index, std::string* link) {
  const ssize_t length = H5Lget_name_by_idx(group, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, index, nullptr, 0, H5P_DEFAULT);
  DCR_REQUIRE(length >= 0, Code::corrupt,
              "cannot name link " + std::to_string(index) + " of '/tensors' in creation order (not written by dcr?)");
  std::vector<char> name(static_cast<size_t>(length) + 1, '\0');
  H5Lget_name_by_idx(group, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, index, name.data(), name.size(), H5P_DEFAULT);
  link->assign(name.data(), static_cast<size_t>(length));
  return Status::ok();
}

Status read_tensors(hid_t file, Manifest* manifest, CanonicalBits* bits) {
  H5Id group(H5Gopen2(file, kGroup, H5P_DEFAULT), H5Gclose);
  DCR_REQUIRE(group.valid(), Code::corrupt, "group '/tensors' is missing");
  H5G_info_t info;
  DCR_REQUIRE(H5Gget_info(group.get(), &info) >= 0, Code::corrupt, "cannot list group '/tensors'");
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    std::string link;
    DCR_TRY(link_at(group.get(), i, &link));
    manifest->tensors.emplace_back();
    bits->emplace_back();
    DCR_TRY(read_tensor(group.get(), link, &manifest->tensors.back(), &bits->back()).with_context(where(tensor_name(link))));
  }
  return Status::ok();
}

Status read_file(const std::string& path, Manifest* manifest, CanonicalBits* bits, uint64_t* version) {
  DCR_TRY(files::check_regular_file(path, UINT64_MAX, nullptr));
  DCR_TRY(check_seal(path));
  const QuietHdf5 quiet;
  H5Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  DCR_REQUIRE(file.valid(), Code::corrupt, "cannot open it as an HDF5 file");
  std::string format;
  uint64_t file_version = 0, manifest_hash = 0;
  DCR_TRY(read_string_attribute(file.get(), "format", &format));
  DCR_REQUIRE(format == kFormat, Code::corrupt, "format is '" + format + "', expected '" + kFormat + "'");
  DCR_TRY(read_integer_attribute(file.get(), "version", H5T_NATIVE_UINT64, &file_version));
  DCR_TRY(read_integer_attribute(file.get(), "manifest_hash", H5T_NATIVE_UINT64, &manifest_hash));
  Manifest m;
  CanonicalBits b;
  DCR_TRY(read_tensors(file.get(), &m, &b));
  DCR_TRY(m.validate());
  DCR_REQUIRE(m.hash() == manifest_hash, Code::corrupt,
              "the datasets' names, dtypes, shapes and order hash to " + hex(m.hash()) + " but attribute 'manifest_hash' says " +
                  hex(manifest_hash));
  *manifest = std::move(m);
  *bits = std::move(b);
  if (version) *version = file_version;
  return Status::ok();
}

}  // namespace

Status write_hdf5_checkpoint(const std::string& path, const Manifest& manifest, const CanonicalBits& bits,
                             uint64_t version, uint64_t base, unsigned mode) {
  return write_checked(path, manifest, bits, version, base, mode).with_context("HDF5 checkpoint '" + path + "'");
}

Status read_hdf5_checkpoint(const std::string& path, Manifest* manifest, CanonicalBits* bits, uint64_t* version) {
  return read_file(path, manifest, bits, version).with_context("HDF5 checkpoint '" + path + "'");
}

}  // namespace dcr
