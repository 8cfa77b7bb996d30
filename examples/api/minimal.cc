// dcr's C++ API in one file: rank 0 trains (here: changes a few values), rank 1 relays, rank 2
// serves. Run: mpirun -np 3 minimal_cpp
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "dcr/refit/endpoint.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  dcr::EndpointSpec spec;
  spec.options.trainers = 1;
  spec.options.relays = 1;
  spec.options.rollout_tp = 1;
  spec.manifest.tensors = {{"w", dcr::DType::f32, {256, 64}, false}, {"b", dcr::DType::f32, {64}, false}};

  MPI_Comm control;
  MPI_Comm_dup(MPI_COMM_WORLD, &control);
  std::unique_ptr<dcr::Transport> transport;
  dcr::Status st = dcr::make_transport("ucx", MPI_COMM_WORLD, &transport);
  auto collective = dcr::mpi_collective(control);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<float> w(256 * 64, 0.5f), b(64, 0.0f);  // this rank's copy of the model

  if (rank == 0) {
    std::unique_ptr<dcr::Trainer> trainer;
    if (st.is_ok()) st = dcr::Trainer::create(spec, transport.get(), collective.get(), &trainer);
    for (uint64_t version = 1; st.is_ok() && version <= 3; ++version) {
      for (size_t i = 0; i < w.size(); i += 97) w[i] += 0.25f;  // a training step
      b[version] = 1.0f;
      st = trainer->publish(version, {{w.data(), w.size() * 4, dcr::DType::f32, dcr::MemorySpace::host},
                                      {b.data(), b.size() * 4, dcr::DType::f32, dcr::MemorySpace::host}});
      if (st.is_ok()) std::printf("trainer: version %llu committed\n", (unsigned long long)version);
    }
    if (st.is_ok()) st = trainer->close();
  } else if (rank == 1) {
    std::unique_ptr<dcr::Relay> relay;
    if (st.is_ok()) st = dcr::Relay::create(spec, transport.get(), collective.get(), &relay);
    if (st.is_ok()) st = relay->serve();
  } else {
    std::unique_ptr<dcr::Rollout> rollout;
    if (st.is_ok()) st = dcr::Rollout::create(spec, transport.get(), collective.get(), &rollout);
    if (st.is_ok()) st = rollout->attach({{w.data(), w.size() * 4, dcr::DType::f32, dcr::MemorySpace::host},
                                          {b.data(), b.size() * 4, dcr::DType::f32, dcr::MemorySpace::host}});
    bool closed = false;
    while (st.is_ok() && !closed) {
      uint64_t version = 0;
      st = rollout->receive(&version, &closed);
      if (st.is_ok() && !closed) std::printf("rollout: holds version %llu, b[%llu] = %g\n", (unsigned long long)version,
                                             (unsigned long long)version, b[version]);
    }
  }
  // The rollout's buffers now hold the trainer's bits: compare them across ranks 0 and 2.
  std::vector<float> theirs(w.size());
  if (rank == 0) MPI_Send(w.data(), static_cast<int>(w.size()), MPI_FLOAT, 2, 0, MPI_COMM_WORLD);
  if (rank == 2) MPI_Recv(theirs.data(), static_cast<int>(w.size()), MPI_FLOAT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  const bool same = rank != 2 || std::memcmp(theirs.data(), w.data(), w.size() * 4) == 0;
  if (!st.is_ok()) std::fprintf(stderr, "rank %d: %s\n", rank, st.to_string().c_str());
  if (rank == 2) std::printf("rollout: bit-exact with the trainer: %s\n", same ? "yes" : "NO");
  transport.reset();
  collective.reset();
  MPI_Comm_free(&control);
  MPI_Finalize();
  return st.is_ok() && same ? 0 : 1;
}
