// File operations shared by the spool transport, the frame spool, the journal and the checkpoint
// writers: durable replacement ("<path>.tmp", fsync, rename, fsync the directory), whole-file reads
// and directory listings, each failure a Status that names the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr::files {

// Permissions of what dcr keeps for itself (journals, snapshots, the spool) and its directories:
// its owner's only.
constexpr unsigned kPrivateFile = 0600, kPrivateDir = 0700;

// One piece of a file to write; pieces are written in order.
struct Piece {
  const void* data;
  size_t bytes;
};

// Writes all of `piece` to `fd`, retrying short writes.
Status write_all(int fd, const Piece& piece, const std::string& path);

// Writes `pieces` to temp_path(path), fsyncs it and renames it over `path`, so a reader sees either
// no file or the whole file. With `sync_dir` the directory is fsynced too (the rename survives a
// crash). Removes the temporary file on failure.
// The file is created with permissions `mode` (before the umask): 0600 for state and spool files.
Status write_atomic(const std::string& path, const std::vector<Piece>& pieces, bool sync_dir, unsigned mode = 0644);

// The same for a file other code wrote whole to temp_path(path): fsyncs it, renames it over `path`
// and fsyncs the directory; removes it on failure.
std::string temp_path(const std::string& path);  // "<path>.tmp"
Status commit_file(const std::string& tmp, const std::string& path);

// io_error "No space left on device" naming `path` when its file system has fewer than `bytes` free.
Status check_free_space(const std::string& path, uint64_t bytes);

// fsyncs the directory `dir` (entries renamed into it survive a crash).
Status sync_directory(const std::string& dir);

// Checks that `path` is a regular file (after symlinks) of at most `max_bytes`, and gives its size.
// A FIFO, device, socket or directory is refused (invalid_argument: reading one would block or
// never end), a missing file or dangling symlink is not_found, a larger file is invalid_argument.
Status check_regular_file(const std::string& path, uint64_t max_bytes, uint64_t* size);

// Reads the whole of `path` into *out (a regular file only: see check_regular_file). Code::not_found when it does not exist (and *found, when
// given, is set false instead of failing).
Status read_whole(const std::string& path, std::vector<uint8_t>* out, bool* found = nullptr);

// Creates `dir` and its missing parents.
// With `mode` (e.g. 0700 for state and spool directories) the last directory of `dir` gets it.
Status make_dirs(const std::string& dir, unsigned mode = 0);

// Removes `path` and everything under it; a missing path is fine.
Status remove_tree(const std::string& path);

// Names in `dir` (no "." or ".."); an absent directory lists nothing.
Status list_dir(const std::string& dir, std::vector<std::string>* names);

// "<prefix><digits>" -> the number; false when `name` is not of that form.
bool parse_numbered(const std::string& name, const std::string& prefix, uint64_t* number);

// `value` in decimal, left-padded with zeros to `width` digits.
std::string zero_padded(uint64_t value, int width);

}  // namespace dcr::files
