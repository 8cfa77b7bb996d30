// The UCX backend: one ucp context (tag matching) and one worker per process; worker addresses are
// exchanged over a private duplicate of the communicator and an endpoint is made to every rank.
// Tag = (channel << 32) | sender rank, so a receive can match any sender or any channel by mask.
// Receives probe for the message first and then take it into a buffer of the probed length.
// Shutdown is collective: finish sends, close every endpoint with a flush, and wait (progressing)
// until every rank has done the same before the worker goes away. Messages nobody received by then
// are dropped.
#include <cstdlib>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <list>
#include <string>
#include <vector>

#include "dcr/core/log.h"
#include "src/transport/backends.h"
#include "src/transport/describe.h"
#include "src/transport/shutdown.h"

namespace dcr {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kSendsTimeout = 10.0;  // at shutdown, for this rank's sends and endpoint flushes
constexpr double kRanksTimeout = 60.0;  // at shutdown, for the other ranks to get there
constexpr double kTakeTimeoutS = 120.0;  // for the data of a message already matched to arrive
constexpr ucp_tag_t kSenderBits = 0xffffffffull;
constexpr ucp_tag_t kChannelBits = kSenderBits << 32;

ucp_tag_t make_tag(uint32_t channel, int sender) {
  return (static_cast<ucp_tag_t>(channel) << 32) | static_cast<uint32_t>(sender);
}

bool past(Clock::time_point start, double seconds) {
  return std::chrono::duration<double>(Clock::now() - start).count() > seconds;
}

struct SendRecord {
  int peer = 0;
  SharedBytes message;
  void* request = nullptr;
  bool done = false;
  ucs_status_t status = UCS_OK;
};

void on_send_done(void* request, ucs_status_t status, void* user_data) {
  auto* record = static_cast<SendRecord*>(user_data);
  record->status = status;
  record->done = true;
  record->message.reset();
}

struct ReceiveState {
  bool done = false;
  ucs_status_t status = UCS_OK;
};

void on_receive_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                     void* user_data) {
  auto* state = static_cast<ReceiveState*>(user_data);
  state->status = status;
  state->done = true;
}

class UcxTransport : public Transport {
 public:
  explicit UcxTransport(MPI_Comm comm) {
    MPI_Comm_dup(comm, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    endpoints_.assign(static_cast<size_t>(size_), nullptr);
  }

  ~UcxTransport() override {
    if (connected_) shut_down();
    if (worker_) ucp_worker_destroy(worker_);  // also destroys endpoints left open
    if (context_) ucp_cleanup(context_);
    MPI_Comm_free(&comm_);
  }

  // Collective: every rank returns an error if any rank failed (the failing rank says why).
  Status start() {
    DCR_TRY(agree(open_worker()));
    DCR_TRY(agree(connect()));
    connected_ = true;
    return Status::ok();
  }

  std::string name() const override { return "ucx"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  size_t sends_in_flight() const override { return sends_.size(); }

  std::vector<int> peers_with_sends_in_flight() const override {
    std::vector<int> peers;
    for (const SendRecord& r : sends_) peers.push_back(r.peer);
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    return peers;
  }

  Status send(int peer, uint32_t channel, SharedBytes message) override {
    DCR_TRY(check_send(peer, channel, message));
    static const uint8_t kEmpty = 0;
    const void* data = message->empty() ? &kEmpty : message->data();
    const size_t length = message->size();
    sends_.push_back(SendRecord{peer, std::move(message)});
    SendRecord& record = sends_.back();
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = on_send_done;
    param.user_data = &record;
    ucs_status_ptr_t request =
        ucp_tag_send_nbx(endpoints_[peer], data, length, make_tag(channel, rank_), &param);
    if (UCS_PTR_IS_PTR(request)) {
      record.request = request;
      return Status::ok();
    }
    sends_.pop_back();  // completed at once, or failed
    const ucs_status_t status = UCS_PTR_STATUS(request);
    DCR_REQUIRE(status == UCS_OK, Code::io_error,
                where(peer) + ": ucp_tag_send_nbx of " + std::to_string(length) + " bytes on " +
                    describe_channel(channel) + " failed: " + ucs_status_string(status));
    return Status::ok();
  }

  Status progress() override {
    while (ucp_worker_progress(worker_) != 0) {
    }
    return sweep_sends();
  }

  Status try_receive(int from, uint32_t channel, Message* out, bool* received) override {
    DCR_TRY(check_receive(from, channel));
    *received = false;
    DCR_TRY(progress());
    const ucp_tag_t tag = make_tag(channel == kAnyChannel ? 0 : channel, from == kAnyPeer ? 0 : from);
    const ucp_tag_t mask = (channel == kAnyChannel ? 0 : kChannelBits) | (from == kAnyPeer ? 0 : kSenderBits);
    ucp_tag_recv_info_t info{};
    ucp_tag_message_h handle = ucp_tag_probe_nb(worker_, tag, mask, 1, &info);
    if (handle == nullptr) return Status::ok();
    out->peer = static_cast<int>(info.sender_tag & kSenderBits);
    out->channel = static_cast<uint32_t>(info.sender_tag >> 32);
    out->bytes.resize(info.length);
    DCR_TRY(take(handle, out));
    *received = true;
    return Status::ok();
  }

 private:
  std::string where(int peer) const { return "rank " + std::to_string(rank_) + ", " + describe_peer(peer); }

  Status ucx_failed(const char* what, ucs_status_t status) const {
    return Status(Code::unavailable, "rank " + std::to_string(rank_) + ": " + what + " failed: " +
                                         ucs_status_string(status));
  }

  // All ranks learn whether every rank's `local` step succeeded.
  Status agree(Status local) {
    const int mine = local.is_ok() ? -1 : rank_;
    int failed = -1;
    MPI_Allreduce(&mine, &failed, 1, MPI_INT, MPI_MAX, comm_);
    if (!local.is_ok() || failed < 0) return local;
    return Status(Code::unavailable, "rank " + std::to_string(rank_) + ": UCX transport setup failed on rank " +
                                         std::to_string(failed) + " (see its message)");
  }

  // UCX's TCP transport moves a message in segments of 8 KiB by default: a multi-MB frame then
  // costs thousands of small socket calls, and on a shaped 0.5 Gbit/s link a full refit took 1.9x
  // the link's limit (perf/bench_cluster.sh); with 256 KiB segments it takes 1.1x. (1 MiB segments
  // stalled sends on the shaped link.) Set in the environment before UCX reads it, where the user
  // has not set them: a UCX_TCP_*_SEG_SIZE of theirs wins. (ucp_config_modify took only part of it.)
  static void set_tcp_segments() {
    setenv("UCX_TCP_TX_SEG_SIZE", "256k", 0);
    setenv("UCX_TCP_RX_SEG_SIZE", "256k", 0);
  }

  Status open_worker() {
    set_tcp_segments();
    ucp_config_t* config = nullptr;
    ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
    if (status != UCS_OK) return ucx_failed("ucp_config_read", status);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_TAG;
    params.estimated_num_eps = static_cast<size_t>(size_);
    status = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (status != UCS_OK) return ucx_failed("ucp_init", status);
    ucp_worker_params_t worker_params{};
    worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(context_, &worker_params, &worker_);
    if (status != UCS_OK) return ucx_failed("ucp_worker_create", status);
    return Status::ok();
  }

  // Gathers every worker's address and makes an endpoint to each rank (this one included).
  Status connect() {
    ucp_address_t* address = nullptr;
    size_t length = 0;
    const ucs_status_t status = ucp_worker_get_address(worker_, &address, &length);
    const int mine = status == UCS_OK ? static_cast<int>(length) : 0;
    std::vector<int> lengths(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
    MPI_Allgather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_);
    for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
    std::vector<uint8_t> all(static_cast<size_t>(offsets.back() + lengths.back()));
    MPI_Allgatherv(address, mine, MPI_BYTE, all.data(), lengths.data(), offsets.data(), MPI_BYTE, comm_);
    if (status != UCS_OK) return ucx_failed("ucp_worker_get_address", status);
    ucp_worker_release_address(worker_, address);
    for (int r = 0; r < size_; ++r) {
      DCR_REQUIRE(lengths[r] > 0, Code::unavailable,
                  where(r) + ": that rank published no UCX worker address");
      DCR_TRY(create_endpoint(r, all.data() + offsets[r]));
    }
    return Status::ok();
  }

  Status create_endpoint(int peer, const uint8_t* address) {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = reinterpret_cast<const ucp_address_t*>(address);
    const ucs_status_t status = ucp_ep_create(worker_, &params, &endpoints_[peer]);
    DCR_REQUIRE(status == UCS_OK, Code::unavailable,
                where(peer) + ": ucp_ep_create failed: " + ucs_status_string(status));
    return Status::ok();
  }

  // Receives the probed message `handle` into out->bytes, progressing until the data is in or
  // kTakeTimeoutS pass.
  Status take(ucp_tag_message_h handle, Message* out) {
    static uint8_t empty = 0;
    void* buffer = out->bytes.empty() ? &empty : out->bytes.data();
    ReceiveState state;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv = on_receive_done;
    param.user_data = &state;
    ucs_status_ptr_t request = ucp_tag_msg_recv_nbx(worker_, buffer, out->bytes.size(), handle, &param);
    if (UCS_PTR_IS_PTR(request)) {
      // The message is matched, but its data may still be in flight (rendezvous): a sender that died
      // midway must not hold this rank for ever.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kTakeTimeoutS);
      while (!state.done && std::chrono::steady_clock::now() < deadline) ucp_worker_progress(worker_);
      if (!state.done) {
        ucp_request_cancel(worker_, request);
        while (!state.done) ucp_worker_progress(worker_);  // the cancellation completes the request
        state.status = UCS_ERR_TIMED_OUT;
      }
      ucp_request_free(request);
    } else {
      state.status = UCS_PTR_STATUS(request);
    }
    DCR_REQUIRE(state.status == UCS_OK, Code::io_error,
                where(out->peer) + ": receiving " + std::to_string(out->bytes.size()) + " bytes on " +
                    describe_channel(out->channel) + " failed: " + ucs_status_string(state.status));
    return Status::ok();
  }

  // Forgets completed sends; reports the first failed one.
  Status sweep_sends() {
    Status result;
    for (auto it = sends_.begin(); it != sends_.end();) {
      if (!it->done) {
        ++it;
        continue;
      }
      ucp_request_free(it->request);
      if (it->status != UCS_OK && result.is_ok())
        result = Status(Code::io_error, where(it->peer) + ": send failed: " + ucs_status_string(it->status));
      it = sends_.erase(it);
    }
    return result;
  }

  // Collective (see shutdown.h): every rank finishes its sends, closes its endpoints with a flush,
  // and keeps its worker progressing until all ranks have, so no flush waits on a destroyed worker.
  void shut_down() {
    const bool sent = settle_for_shutdown(*this, comm_, kSendsTimeout, kRanksTimeout);
    if (sent) close_endpoints();  // else the worker's destruction drops them unflushed
    size_t dropped = 0;
    if (!barrier_dropping(*this, comm_, kRanksTimeout, &dropped))
      DCR_LOG(error, "transport", "rank %d: ucx shutdown: other ranks did not close within %.0f s", rank_,
              kRanksTimeout);
    abandon_sends();
  }

  // Closes every endpoint with a flush and waits (at most kSendsTimeout) for the closes.
  void close_endpoints() {
    std::vector<std::pair<int, void*>> closing;
    for (int peer = 0; peer < size_; ++peer) {
      ucp_request_param_t param{};
      ucs_status_ptr_t request = ucp_ep_close_nbx(endpoints_[peer], &param);
      endpoints_[peer] = nullptr;
      if (UCS_PTR_IS_PTR(request)) closing.emplace_back(peer, request);
      else if (UCS_PTR_STATUS(request) != UCS_OK)
        DCR_LOG(warn, "transport", "rank %d: closing the endpoint to rank %d failed: %s", rank_, peer,
                ucs_status_string(UCS_PTR_STATUS(request)));
    }
    const Clock::time_point start = Clock::now();
    while (!closing.empty()) {
      ucp_worker_progress(worker_);
      const bool late = past(start, kSendsTimeout);
      for (size_t i = 0; i < closing.size();) {
        const ucs_status_t status = ucp_request_check_status(closing[i].second);
        if (status == UCS_INPROGRESS && !late) {
          ++i;
          continue;
        }
        if (status != UCS_OK)
          DCR_LOG(warn, "transport", "rank %d: closing the endpoint to rank %d: %s", rank_, closing[i].first,
                  late ? "still flushing after the shutdown timeout" : ucs_status_string(status));
        ucp_request_free(closing[i].second);
        closing[i] = closing.back();
        closing.pop_back();
      }
    }
  }

  // Sends still pending after the shutdown timeout: UCX no longer calls back, and may still read
  // the buffers, which are therefore leaked.
  void abandon_sends() {
    for (SendRecord& r : sends_) {
      if (r.request) ucp_request_free(r.request);
      if (r.message) new SharedBytes(std::move(r.message));
    }
    sends_.clear();
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<ucp_ep_h> endpoints_;
  bool connected_ = false;
  std::list<SendRecord> sends_;  // stable addresses: each is the user_data of its callback
};

}  // namespace

Status make_ucx_transport(MPI_Comm comm, std::unique_ptr<Transport>* out) {
  auto transport = std::make_unique<UcxTransport>(comm);
  DCR_TRY(transport->start());
  *out = std::move(transport);
  return Status::ok();
}

}  // namespace dcr
