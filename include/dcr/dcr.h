/* dcr's C API: the trainer, relay and rollout endpoints (dcr/refit/endpoint.h) for any language.
 * Opaque handles, integer status codes with a message per thread, and no C++ type crossing.
 * Link with -ldcr (libdcr.so); the Python binding (python/dcr) loads the same library.
 *
 *   dcr_spec      the job: its tensors and layout, alike on every rank
 *   dcr_comm      the ranks of the job: an MPI communicator (duplicated for dcr) or, for tests, one
 *                 rank of an in-process group
 *   dcr_endpoint  a trainer, relay or rollout on the caller's memory
 *
 * Every function returns DCR_OK (0) or an error code; dcr_last_error() then says what went wrong,
 * naming the rank, the tensor or the option. Calls marked collective are made by every rank of the
 * job, in the same order. */
#ifndef DCR_DCR_H
#define DCR_DCR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  DCR_OK = 0,
  DCR_INVALID_ARGUMENT = 1, /* a caller or a spec asked for something impossible */
  DCR_CORRUPT = 2,          /* bytes that fail validation */
  DCR_BASE_MISMATCH = 3,
  DCR_TARGET_MISMATCH = 4,
  DCR_IO_ERROR = 5,
  DCR_NOT_FOUND = 6,
  DCR_UNAVAILABLE = 7, /* a peer silent past the timeout, device memory without the kernels */
  DCR_ABORTED = 8,     /* the job did not commit the version (a rank refused or failed) */
  DCR_INTERNAL = 9,
  DCR_CLOSED = 100 /* dcr_rollout_receive: the trainers closed the job */
};

/* The message of the last failed call on this thread ("" if none). */
const char* dcr_last_error(void);

/* Memory spaces of dcr_buffer. */
enum { DCR_HOST = 0, DCR_DEVICE = 1 };

/* One caller buffer: dense (row-major, no padding), `bytes` long, of element type `dtype`
 * ("bf16", "f16", "f32", "f64", "f8_e4m3", "f8_e5m2", "i32", "i64", "u8"). */
typedef struct {
  void* data;
  uint64_t bytes;
  const char* dtype;
  int space;
} dcr_buffer;

typedef struct dcr_spec dcr_spec;
typedef struct dcr_comm dcr_comm;
typedef struct dcr_endpoint dcr_endpoint;

/* ---- The job */
int dcr_spec_new(dcr_spec** out);
void dcr_spec_free(dcr_spec* spec);
/* A layout option by the name `dcr refit` gives it: trainers, train-tp, train-ep, train-pp,
 * train-pp-layers, train-dp, check-replicas, relays, fanout,
 * rollout-tp, rollout-ep, fuse (true|false), model-family, frame-elements, window,
 * encode-threads, timeout (seconds), state-dir. */
int dcr_spec_set(dcr_spec* spec, const char* option, const char* value);
/* A canonical tensor (its checkpoint name), in checkpoint order. */
int dcr_spec_add_tensor(dcr_spec* spec, const char* name, const char* dtype, int ndim, const int64_t* shape);
/* The checkpoint's config.json text (heads, KV heads, vocabulary, tied embeddings, experts). */
int dcr_spec_set_model_config(dcr_spec* spec, const char* json);

/* ---- The ranks */
/* Over an MPI communicator given by its Fortran handle (MPI_Comm_c2f; mpi4py's comm.py2f()), with
 * the data plane `transport` ("ucx" or "mpi"). Collective over the communicator. */
int dcr_comm_from_mpi(int64_t fortran_comm, const char* transport, dcr_comm** out);
/* `size` ranks in this process (loopback data plane, thread collectives): out[i] is rank i, each
 * for one thread. */
int dcr_comm_threads(int size, dcr_comm** out);
/* Collective for an MPI-backed comm. */
void dcr_comm_free(dcr_comm* comm);

/* ---- Endpoints (collective: every rank creates its own together) */
int dcr_trainer_new(const dcr_spec* spec, dcr_comm* comm, dcr_endpoint** out);
int dcr_relay_new(const dcr_spec* spec, dcr_comm* comm, dcr_endpoint** out);
int dcr_rollout_new(const dcr_spec* spec, dcr_comm* comm, dcr_endpoint** out);
void dcr_endpoint_free(dcr_endpoint* endpoint);

/* The buffers a trainer or rollout holds, in the order publish and attach want them: name (a
 * serving name such as "model.layers.0.self_attn.qkv_proj.weight" on rollouts), dtype, size in
 * bytes and shape (the serving runtime's parameter shape). Pointers stay valid with the endpoint. */
int dcr_endpoint_buffer_count(const dcr_endpoint* endpoint, size_t* count);
int dcr_endpoint_buffer(const dcr_endpoint* endpoint, size_t index, const char** name, const char** dtype,
                        uint64_t* bytes, int* ndim, const int64_t** shape);
/* Where the canonical tensors sit in those buffers, piece by piece (what a loader does): rows
 * [row0, row0 + rows) and columns [col0, col0 + cols) of tensor `tensor` (its index in the spec,
 * viewed as 2-D: the last dimension by all the others) sit in buffer `buffer`, element (row0, col0)
 * at element `offset`, consecutive rows `pitch` elements apart. */
int dcr_endpoint_piece_count(const dcr_endpoint* endpoint, size_t* count);
int dcr_endpoint_piece(const dcr_endpoint* endpoint, size_t index, size_t* buffer, size_t* tensor, uint64_t* row0,
                       uint64_t* col0, uint64_t* rows, uint64_t* cols, uint64_t* offset, uint64_t* pitch);
/* The committed version, or UINT64_MAX before the first commit. */
uint64_t dcr_endpoint_committed(const dcr_endpoint* endpoint);
/* The last step's frames and wire bytes as this rank saw them (trainers: sent; rollouts: applied). */
int dcr_endpoint_last_step(const dcr_endpoint* endpoint, uint64_t* frames, uint64_t* wire_bytes, uint64_t* changed);
/* The last step's seconds staging (apply=staged: until every rollout held it; 0 streamed) and
 * paused (staged: from the pause's start to the commit; streamed: the whole step), and the frame
 * bytes this rollout staged. */
int dcr_endpoint_last_pause(const dcr_endpoint* endpoint, double* staging_s, double* pause_s, uint64_t* staged_bytes);

/* Trainers: publish `version` from `count` buffers; returns once the job decided (DCR_OK:
 * committed). Collective. */
int dcr_trainer_publish(dcr_endpoint* trainer, uint64_t version, const dcr_buffer* buffers, size_t count);
/* Trainers: end the job (relays return from serve, rollouts get DCR_CLOSED). Collective. */
int dcr_trainer_close(dcr_endpoint* trainer);
/* Relays: forward until the trainers close the job. */
int dcr_relay_serve(dcr_endpoint* relay);
/* Rollouts: the buffers to apply into (kept alive and in place by the caller). */
int dcr_rollout_attach(dcr_endpoint* rollout, const dcr_buffer* buffers, size_t count);
/* Rollouts: apply the next version in place; DCR_OK with *version committed, DCR_CLOSED at the end. */
int dcr_rollout_receive(dcr_endpoint* rollout, uint64_t* version);
/* Rollouts of a job with apply=staged, for a serving engine: stage the next version without
 * touching the buffers (DCR_OK with *version once every rollout holds it, DCR_CLOSED at the end;
 * keep generating meanwhile), then pause generation and apply it (DCR_OK with *version committed).
 * The job's first version streams: stage returns with it committed and apply has nothing to do. */
int dcr_rollout_stage(dcr_endpoint* rollout, uint64_t* version);
int dcr_rollout_apply(dcr_endpoint* rollout, uint64_t* version);

#ifdef __cplusplus
}
#endif

#endif /* DCR_DCR_H */
