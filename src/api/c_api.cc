// The C API (include/dcr/dcr.h) over the C++ endpoints: handles wrap the C++ objects, every entry
// point catches what it calls, and errors become a code and a per-thread message.
#include "dcr/dcr.h"

#include <mpi.h>

#include <memory>
#include <string>

#include "dcr/core/status.h"
#include "dcr/refit/endpoint.h"

struct dcr_spec {
  dcr::EndpointSpec spec;
};

struct dcr_comm {
  MPI_Comm control_comm = MPI_COMM_NULL;  // ours (a duplicate of the caller's), freed with the handle
  std::unique_ptr<dcr::Transport> transport;
  std::unique_ptr<dcr::Collective> control;
};

struct dcr_endpoint {
  std::unique_ptr<dcr::Trainer> trainer;
  std::unique_ptr<dcr::Relay> relay;
  std::unique_ptr<dcr::Rollout> rollout;
  std::vector<std::string> dtypes;  // buffer dtype names, kept for dcr_endpoint_buffer
};

namespace {

thread_local std::string last_error;

int fail(const dcr::Status& st) {
  if (st.is_ok()) return DCR_OK;
  last_error = st.to_string();
  return static_cast<int>(st.code());  // dcr::Code and the DCR_ codes share their values
}

int invalid(const std::string& message) { return fail(dcr::Status(dcr::Code::invalid_argument, message)); }

// Runs `body`, turning an escaping exception into DCR_INTERNAL.
template <typename Body>
int guarded(Body body) {
  try {
    last_error.clear();
    return body();
  } catch (const std::exception& e) {
    return fail(dcr::Status(dcr::Code::internal, e.what()));
  }
}

dcr::Status to_memory(const dcr_buffer* buffers, size_t count, std::vector<dcr::BufferMemory>* out) {
  DCR_REQUIRE(buffers != nullptr || count == 0, dcr::Code::invalid_argument, "no buffers given");
  for (size_t i = 0; i < count; ++i) {
    dcr::BufferMemory m;
    DCR_REQUIRE(buffers[i].dtype != nullptr, dcr::Code::invalid_argument, "buffer " + std::to_string(i) + " has no dtype");
    DCR_TRY(dcr::parse_dtype(buffers[i].dtype, &m.dtype).with_context("buffer " + std::to_string(i)));
    DCR_REQUIRE(buffers[i].space == DCR_HOST || buffers[i].space == DCR_DEVICE, dcr::Code::invalid_argument,
                "buffer " + std::to_string(i) + " has memory space " + std::to_string(buffers[i].space));
    m.data = buffers[i].data;
    m.bytes = buffers[i].bytes;
    m.space = buffers[i].space == DCR_HOST ? dcr::MemorySpace::host : dcr::MemorySpace::device;
    out->push_back(m);
  }
  return dcr::Status::ok();
}

const dcr::Holdings* holdings_of(const dcr_endpoint* e) {
  if (e->trainer) return &e->trainer->holdings();
  if (e->rollout) return &e->rollout->holdings();
  return nullptr;
}

template <typename Endpoint>
int make_endpoint(const dcr_spec* spec, dcr_comm* comm, dcr_endpoint** out,
                  std::unique_ptr<Endpoint> dcr_endpoint::*slot) {
  if (spec == nullptr || comm == nullptr || out == nullptr) return invalid("null spec, comm or out");
  auto e = std::make_unique<dcr_endpoint>();
  const int rc = fail(Endpoint::create(spec->spec, comm->transport.get(), comm->control.get(), &((*e).*slot)));
  if (rc != DCR_OK) return rc;
  if (const dcr::Holdings* h = holdings_of(e.get())) {
    for (dcr::DType d : h->buffer_dtypes) e->dtypes.push_back(dcr::dtype_name(d));
  }
  *out = e.release();
  return DCR_OK;
}

// A rollout's step that may find the job closed (receive, stage): DCR_CLOSED then.
int rollout_step(dcr_endpoint* rollout, uint64_t* version,
                 dcr::Status (dcr::Rollout::*step)(uint64_t* version, bool* closed)) {
  return guarded([&]() -> int {
    if (rollout == nullptr || !rollout->rollout || version == nullptr) return invalid("not a rollout endpoint");
    bool closed = false;
    const int rc = fail(((*rollout->rollout).*step)(version, &closed));
    return rc == DCR_OK && closed ? DCR_CLOSED : rc;
  });
}

}  // namespace

extern "C" {

const char* dcr_last_error(void) { return last_error.c_str(); }

int dcr_spec_new(dcr_spec** out) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("null out");
    *out = new dcr_spec();
    return DCR_OK;
  });
}

void dcr_spec_free(dcr_spec* spec) { delete spec; }

int dcr_spec_set(dcr_spec* spec, const char* option, const char* value) {
  return guarded([&]() -> int {
    if (spec == nullptr || option == nullptr || value == nullptr) return invalid("null spec, option or value");
    // The library's options table: the names, ranges and messages `dcr refit` uses.
    return fail(dcr::options::set_by_name(dcr::refit_option_table(), option, value, &spec->spec.options));
  });
}

int dcr_spec_add_tensor(dcr_spec* spec, const char* name, const char* dtype, int ndim, const int64_t* shape) {
  return guarded([&]() -> int {
    if (spec == nullptr || name == nullptr || dtype == nullptr || (ndim > 0 && shape == nullptr) || ndim < 0) {
      return invalid("dcr_spec_add_tensor: null argument or negative ndim");
    }
    dcr::TensorDesc t;
    t.name = name;
    const int rc = fail(dcr::parse_dtype(dtype, &t.dtype).with_context("tensor '" + t.name + "'"));
    if (rc != DCR_OK) return rc;
    t.shape.assign(shape, shape + ndim);
    spec->spec.manifest.tensors.push_back(t);
    return DCR_OK;
  });
}

int dcr_spec_set_model_config(dcr_spec* spec, const char* json) {
  return guarded([&]() -> int {
    if (spec == nullptr || json == nullptr) return invalid("null spec or json");
    nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) return invalid("the model config is not a JSON object");
    spec->spec.model_config = std::move(parsed);
    return DCR_OK;
  });
}

int dcr_comm_from_mpi(int64_t fortran_comm, const char* transport, dcr_comm** out) {
  return guarded([&]() -> int {
    if (transport == nullptr || out == nullptr) return invalid("null transport or out");
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) return fail(dcr::Status(dcr::Code::unavailable, "MPI is not initialized"));
    const MPI_Comm caller = MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_comm));
    auto c = std::make_unique<dcr_comm>();
    MPI_Comm_dup(caller, &c->control_comm);
    const int rc = fail(dcr::make_transport(transport, caller, &c->transport));
    if (rc != DCR_OK) {
      MPI_Comm_free(&c->control_comm);
      return rc;
    }
    c->control = dcr::mpi_collective(c->control_comm);
    *out = c.release();
    return DCR_OK;
  });
}

int dcr_comm_threads(int size, dcr_comm** out) {
  return guarded([&]() -> int {
    if (size < 1 || out == nullptr) return invalid("dcr_comm_threads: size must be >= 1 and out not null");
    auto transports = dcr::make_loopback_group(size);
    auto controls = dcr::thread_collective_group(size);
    for (int r = 0; r < size; ++r) {
      out[r] = new dcr_comm();
      out[r]->transport = std::move(transports[r]);
      out[r]->control = std::move(controls[r]);
    }
    return DCR_OK;
  });
}

void dcr_comm_free(dcr_comm* comm) {
  if (comm == nullptr) return;
  comm->control.reset();
  comm->transport.reset();
  if (comm->control_comm != MPI_COMM_NULL) MPI_Comm_free(&comm->control_comm);
  delete comm;
}

int dcr_trainer_new(const dcr_spec* spec, dcr_comm* comm, dcr_endpoint** out) {
  return guarded([&]() -> int { return make_endpoint(spec, comm, out, &dcr_endpoint::trainer); });
}

int dcr_relay_new(const dcr_spec* spec, dcr_comm* comm, dcr_endpoint** out) {
  return guarded([&]() -> int { return make_endpoint(spec, comm, out, &dcr_endpoint::relay); });
}

int dcr_rollout_new(const dcr_spec* spec, dcr_comm* comm, dcr_endpoint** out) {
  return guarded([&]() -> int { return make_endpoint(spec, comm, out, &dcr_endpoint::rollout); });
}

void dcr_endpoint_free(dcr_endpoint* endpoint) { delete endpoint; }

int dcr_endpoint_buffer_count(const dcr_endpoint* endpoint, size_t* count) {
  return guarded([&]() -> int {
    if (endpoint == nullptr || count == nullptr) return invalid("null endpoint or count");
    const dcr::Holdings* h = holdings_of(endpoint);
    *count = h ? h->buffer_names.size() : 0;
    return DCR_OK;
  });
}

int dcr_endpoint_buffer(const dcr_endpoint* endpoint, size_t index, const char** name, const char** dtype,
                        uint64_t* bytes, int* ndim, const int64_t** shape) {
  return guarded([&]() -> int {
    if (endpoint == nullptr) return invalid("null endpoint");
    const dcr::Holdings* h = holdings_of(endpoint);
    if (h == nullptr || index >= h->buffer_names.size()) {
      return invalid("buffer index " + std::to_string(index) + " out of range");
    }
    if (name) *name = h->buffer_names[index].c_str();
    if (dtype) *dtype = endpoint->dtypes[index].c_str();
    if (bytes) *bytes = h->buffer_elements[index] * dcr::dtype_width(h->buffer_dtypes[index]);
    const bool shaped = index < h->buffer_shapes.size() && !h->buffer_shapes[index].empty();
    if (ndim) *ndim = shaped ? static_cast<int>(h->buffer_shapes[index].size()) : 1;
    if (shape) *shape = shaped ? h->buffer_shapes[index].data() : reinterpret_cast<const int64_t*>(&h->buffer_elements[index]);
    return DCR_OK;
  });
}

int dcr_endpoint_piece_count(const dcr_endpoint* endpoint, size_t* count) {
  return guarded([&]() -> int {
    if (endpoint == nullptr || count == nullptr) return invalid("null endpoint or count");
    const dcr::Holdings* h = holdings_of(endpoint);
    *count = h ? h->pieces.size() : 0;
    return DCR_OK;
  });
}

int dcr_endpoint_piece(const dcr_endpoint* endpoint, size_t index, size_t* buffer, size_t* tensor, uint64_t* row0,
                       uint64_t* col0, uint64_t* rows, uint64_t* cols, uint64_t* offset, uint64_t* pitch) {
  return guarded([&]() -> int {
    if (endpoint == nullptr || buffer == nullptr || tensor == nullptr || row0 == nullptr || col0 == nullptr ||
        rows == nullptr || cols == nullptr || offset == nullptr || pitch == nullptr) {
      return invalid("dcr_endpoint_piece: null argument");
    }
    const dcr::Holdings* h = holdings_of(endpoint);
    if (h == nullptr || index >= h->pieces.size()) return invalid("piece index " + std::to_string(index) + " out of range");
    const dcr::LocalPiece& p = h->pieces[index];
    *buffer = p.buffer;
    *tensor = p.box.tensor;
    *row0 = p.box.row0;
    *col0 = p.box.col0;
    *rows = p.box.rows;
    *cols = p.box.cols;
    *offset = p.offset;
    *pitch = p.pitch;
    return DCR_OK;
  });
}

uint64_t dcr_endpoint_committed(const dcr_endpoint* e) {
  if (e == nullptr) return dcr::kNoVersion;
  if (e->trainer) return e->trainer->committed();
  if (e->rollout) return e->rollout->committed();
  return dcr::kNoVersion;
}

int dcr_endpoint_last_step(const dcr_endpoint* e, uint64_t* frames, uint64_t* wire_bytes, uint64_t* changed) {
  return guarded([&]() -> int {
    if (e == nullptr || (!e->trainer && !e->rollout)) return invalid("not a trainer or rollout endpoint");
    const dcr::StepStats& s = e->trainer ? e->trainer->last_step() : e->rollout->last_step();
    if (frames) *frames = s.frames;
    if (wire_bytes) *wire_bytes = s.wire_bytes;
    if (changed) *changed = s.changed;
    return DCR_OK;
  });
}

int dcr_endpoint_last_pause(const dcr_endpoint* e, double* staging_s, double* pause_s, uint64_t* staged_bytes) {
  return guarded([&]() -> int {
    if (e == nullptr || (!e->trainer && !e->rollout)) return invalid("not a trainer or rollout endpoint");
    const dcr::StepStats& s = e->trainer ? e->trainer->last_step() : e->rollout->last_step();
    if (staging_s) *staging_s = s.stage_s;
    if (pause_s) *pause_s = s.pause_s;
    if (staged_bytes) *staged_bytes = s.staged_memory + s.staged_spilled;
    return DCR_OK;
  });
}

int dcr_trainer_publish(dcr_endpoint* trainer, uint64_t version, const dcr_buffer* buffers, size_t count) {
  return guarded([&]() -> int {
    if (trainer == nullptr || !trainer->trainer) return invalid("not a trainer endpoint");
    std::vector<dcr::BufferMemory> memory;
    const int rc = fail(to_memory(buffers, count, &memory));
    // A bad description still takes part in the step (the shard check refuses it on every rank).
    const std::string why = last_error;
    const int published = fail(trainer->trainer->publish(version, rc == DCR_OK ? memory : std::vector<dcr::BufferMemory>{}));
    if (rc == DCR_OK) return published;
    last_error = why;
    return rc;
  });
}

int dcr_trainer_close(dcr_endpoint* trainer) {
  return guarded([&]() -> int {
    if (trainer == nullptr || !trainer->trainer) return invalid("not a trainer endpoint");
    return fail(trainer->trainer->close());
  });
}

int dcr_relay_serve(dcr_endpoint* relay) {
  return guarded([&]() -> int {
    if (relay == nullptr || !relay->relay) return invalid("not a relay endpoint");
    return fail(relay->relay->serve());
  });
}

int dcr_rollout_attach(dcr_endpoint* rollout, const dcr_buffer* buffers, size_t count) {
  return guarded([&]() -> int {
    if (rollout == nullptr || !rollout->rollout) return invalid("not a rollout endpoint");
    std::vector<dcr::BufferMemory> memory;
    const int rc = fail(to_memory(buffers, count, &memory));
    return rc != DCR_OK ? rc : fail(rollout->rollout->attach(memory));
  });
}

int dcr_rollout_receive(dcr_endpoint* rollout, uint64_t* version) {
  return rollout_step(rollout, version, &dcr::Rollout::receive);
}

int dcr_rollout_stage(dcr_endpoint* rollout, uint64_t* version) {
  return rollout_step(rollout, version, &dcr::Rollout::stage);
}

int dcr_rollout_apply(dcr_endpoint* rollout, uint64_t* version) {
  return guarded([&]() -> int {
    if (rollout == nullptr || !rollout->rollout || version == nullptr) return invalid("not a rollout endpoint");
    return fail(rollout->rollout->apply(version));
  });
}

}  // extern "C"
