// The one interface that moves messages (frames, acknowledgements) between ranks. MPI carries
// control, this carries data. Backends: "ucx" (ucp tag matching), "mpi" (Isend / Mprobe), and an
// in-process "loopback" group for tests. Every backend passes the same suite (tests/mpi).
//
// Guarantees: messages from one sender to one receiver on one channel arrive in send order; a send
// never blocks (the transport keeps the buffer alive until the send completes); receive blocks,
// driving progress, until a matching message arrives or the timeout passes.
// A Transport is used by one thread. Creating and destroying an MPI-backed one is collective over its
// communicator: every rank creates it together and destroys it together.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

constexpr int kAnyPeer = -1;
constexpr uint32_t kAnyChannel = 0xffffffffu;  // reserved: not a channel one can send on

using SharedBytes = std::shared_ptr<const std::vector<uint8_t>>;

struct Message {
  int peer = -1;         // the sender
  uint32_t channel = 0;
  std::vector<uint8_t> bytes;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Posts `message` to `peer` on `channel` and returns at once.
  virtual Status send(int peer, uint32_t channel, SharedBytes message) = 0;
  // Posted sends not yet complete, and the peers they go to (sorted, each once).
  virtual size_t sends_in_flight() const = 0;
  virtual std::vector<int> peers_with_sends_in_flight() const = 0;
  // Advances posted operations without blocking; reports a failed send with its peer.
  virtual Status progress() = 0;
  // One non-blocking attempt: progresses, then takes a matching message if one has arrived.
  // `from` may be kAnyPeer and `channel` kAnyChannel.
  virtual Status try_receive(int from, uint32_t channel, Message* out, bool* received) = 0;

  // Blocks (driving progress) until every posted send completed; on timeout returns
  // Code::unavailable naming the peers still pending.
  virtual Status wait_sends(double timeout_s);
  // Blocks (driving progress) until a matching message arrives; on timeout returns
  // Code::unavailable "no message from rank X on channel Y within Ns".
  virtual Status receive(int from, uint32_t channel, Message* out, double timeout_s);

 protected:
  // Argument checks shared by the backends; messages name this rank and the peer.
  Status check_send(int peer, uint32_t channel, const SharedBytes& message) const;
  Status check_receive(int from, uint32_t channel) const;
};

// A transport over `comm` by backend name ("ucx" or "mpi"; "loopback" only for a one-rank comm).
// Collective over `comm`; the transport works on a duplicate, so `comm` stays free for control.
Status make_transport(const std::string& name, MPI_Comm comm, std::unique_ptr<Transport>* out);

// `size` in-process ranks joined by thread-safe queues: element i is rank i, for one thread each.
// Sends complete at once (the bytes are copied). Needs no MPI.
std::vector<std::unique_ptr<Transport>> make_loopback_group(int size);

}  // namespace dcr
