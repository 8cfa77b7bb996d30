// The spool transport: the Transport interface over a shared directory (Lustre, GPFS, NFS), for
// ranks that share a file system but may not reach each other over the network.
//
// A message from rank s to rank r on channel c is the file
//   <job>/r<r>/c<c>/s<s>/<seq, 16 digits>.msg
// written as "<name>.tmp", fsynced and renamed (readers never see a partial file). Its content is a
// 40-byte header (magic "DCRS", format 1, sender, channel, sequence number, payload length, hash64
// of the payload; little-endian) followed by the payload. The receiver takes each (sender,
// channel) stream's files in sequence order and deletes each after reading it; a file that fails
// validation is a Code::corrupt error naming it (and stays in place). Sends complete at once.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "dcr/transport/transport.h"

namespace dcr {

// The environment variable that names the shared directory for make_transport("spool", ...).
constexpr const char* kSpoolDirVariable = "DCR_SPOOL_DIR";

// Collective over `comm`: rank 0 creates "<dir>/job-<random hex>" and broadcasts its name; every
// rank creates its inbox there. Destroying the transport is collective too: messages nobody took
// are dropped and rank 0 removes the job directory. Fails on every rank when any rank failed.
Status make_spool_transport(const std::string& dir, MPI_Comm comm, std::unique_ptr<Transport>* out);

// The same with `dir` from DCR_SPOOL_DIR (Code::invalid_argument naming the variable when unset).
Status make_spool_transport(MPI_Comm comm, std::unique_ptr<Transport>* out);

// Rank `rank` of `size` over an existing job directory, without MPI (tests, tools): creates its
// inbox; destroying it removes nothing. Each rank of the group opens its own endpoint.
Status open_spool_endpoint(const std::string& job_dir, int rank, int size, std::unique_ptr<Transport>* out);

}  // namespace dcr
