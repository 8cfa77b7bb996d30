// The MPI backend: MPI_Isend with the channel as tag on a private duplicate of the communicator;
// receives by MPI_Improbe + MPI_Mrecv (the probed size sizes the buffer); progress by MPI_Testsome.
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "src/transport/backends.h"
#include "src/transport/describe.h"
#include "src/transport/shutdown.h"

namespace dcr {
namespace {

constexpr double kSendsTimeout = 10.0;  // at shutdown, for this rank's sends to complete
constexpr double kRanksTimeout = 60.0;  // at shutdown, for the other ranks to get there

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

class MpiTransport : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm) {
    MPI_Comm_dup(comm, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    int* tag_ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_ub, &found);
    max_channel_ = found ? static_cast<uint32_t>(*tag_ub) : 32767u;
  }

  // Collective (see shutdown.h). Sends still pending after the timeout leak their buffers, which
  // MPI may still read.
  ~MpiTransport() override {
    if (!settle_for_shutdown(*this, comm_, kSendsTimeout, kRanksTimeout))
      new std::vector<SharedBytes>(std::move(buffers_));
    MPI_Comm_free(&comm_);
  }

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  size_t sends_in_flight() const override { return requests_.size(); }

  std::vector<int> peers_with_sends_in_flight() const override {
    std::vector<int> peers = peers_;
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    return peers;
  }

  Status send(int peer, uint32_t channel, SharedBytes message) override {
    DCR_TRY(check_send(peer, channel, message));
    DCR_REQUIRE(channel <= max_channel_, Code::invalid_argument,
                where(peer) + ": channel " + std::to_string(channel) + " exceeds MPI_TAG_UB " +
                    std::to_string(max_channel_));
    DCR_REQUIRE(message->size() <= static_cast<size_t>(INT_MAX), Code::invalid_argument,
                where(peer) + ": message of " + std::to_string(message->size()) +
                    " bytes exceeds the MPI count limit");
    MPI_Request request;
    const int rc = MPI_Isend(message->data(), static_cast<int>(message->size()), MPI_BYTE, peer,
                             static_cast<int>(channel), comm_, &request);
    DCR_REQUIRE(rc == MPI_SUCCESS, Code::io_error, where(peer) + ": MPI_Isend failed: " + mpi_error_text(rc));
    requests_.push_back(request);
    peers_.push_back(peer);
    buffers_.push_back(std::move(message));
    return Status::ok();
  }

  Status progress() override {
    if (requests_.empty()) return Status::ok();
    int done = 0;
    indices_.resize(requests_.size());
    statuses_.resize(requests_.size());
    const int rc = MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &done,
                                indices_.data(), statuses_.data());
    if (rc != MPI_SUCCESS) return failed_send(rc, done);
    if (done == MPI_UNDEFINED || done == 0) return Status::ok();
    drop_completed();
    return Status::ok();
  }

  Status try_receive(int from, uint32_t channel, Message* out, bool* received) override {
    DCR_TRY(check_receive(from, channel));
    *received = false;
    DCR_TRY(progress());
    const int source = from == kAnyPeer ? MPI_ANY_SOURCE : from;
    if (channel != kAnyChannel && channel > max_channel_) return Status::ok();  // nothing can match
    const int tag = channel == kAnyChannel ? MPI_ANY_TAG : static_cast<int>(channel);
    int flag = 0;
    MPI_Message handle;
    MPI_Status status;
    int rc = MPI_Improbe(source, tag, comm_, &flag, &handle, &status);
    DCR_REQUIRE(rc == MPI_SUCCESS, Code::io_error,
                where(from) + ": MPI_Improbe failed: " + mpi_error_text(rc));
    if (!flag) return Status::ok();
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    out->peer = status.MPI_SOURCE;
    out->channel = static_cast<uint32_t>(status.MPI_TAG);
    out->bytes.resize(static_cast<size_t>(count));
    rc = MPI_Mrecv(out->bytes.data(), count, MPI_BYTE, &handle, MPI_STATUS_IGNORE);
    DCR_REQUIRE(rc == MPI_SUCCESS, Code::io_error,
                where(out->peer) + ": MPI_Mrecv of " + std::to_string(count) + " bytes on " +
                    describe_channel(out->channel) + " failed: " + mpi_error_text(rc));
    *received = true;
    return Status::ok();
  }

 private:
  std::string where(int peer) const { return "rank " + std::to_string(rank_) + ", " + describe_peer(peer); }

  // Removes the entries MPI_Testsome set to MPI_REQUEST_NULL, keeping the others in order.
  void drop_completed() {
    size_t kept = 0;
    for (size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i] == MPI_REQUEST_NULL) continue;
      requests_[kept] = requests_[i];
      peers_[kept] = peers_[i];
      buffers_[kept] = std::move(buffers_[i]);
      ++kept;
    }
    requests_.resize(kept);
    peers_.resize(kept);
    buffers_.resize(kept);
  }

  // MPI_Testsome returned MPI_ERR_IN_STATUS (or worse): name the first failed send's peer.
  Status failed_send(int rc, int done) {
    for (int i = 0; rc == MPI_ERR_IN_STATUS && i < done; ++i) {
      const int error = statuses_[i].MPI_ERROR;
      if (error == MPI_SUCCESS) continue;
      const int peer = peers_[indices_[i]];
      return Status(Code::io_error, where(peer) + ": send failed: " + mpi_error_text(error));
    }
    return Status(Code::io_error, "rank " + std::to_string(rank_) + ": MPI_Testsome over sends to " +
                                      describe_ranks(peers_with_sends_in_flight()) +
                                      " failed: " + mpi_error_text(rc));
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  uint32_t max_channel_ = 0;
  std::vector<MPI_Request> requests_;  // in-flight sends; peers_ and buffers_ run parallel
  std::vector<int> peers_;
  std::vector<SharedBytes> buffers_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
};

}  // namespace

Status make_mpi_transport(MPI_Comm comm, std::unique_ptr<Transport>* out) {
  *out = std::make_unique<MpiTransport>(comm);
  return Status::ok();
}

}  // namespace dcr
