"""dcr's Python API in one file: rank 0 trains (here: changes a few values of numpy arrays), rank 1
relays, rank 2 serves into its own arrays, in place. Run: mpirun -np 3 python3 minimal.py"""
import sys

import numpy as np
from mpi4py import MPI

import dcr

spec = dcr.Spec(trainers=1, relays=1, rollout_tp=1)
spec.add_tensor("w", "f32", (256, 64))
spec.add_tensor("b", "f32", (64,))
comm = dcr.Comm.from_mpi(MPI.COMM_WORLD, "ucx")
rank = MPI.COMM_WORLD.Get_rank()
w, b = np.full((256, 64), 0.5, np.float32), np.zeros(64, np.float32)  # this rank's copy of the model

if rank == 0:
    endpoint = dcr.Trainer(spec, comm)
    for version in (1, 2, 3):
        w.reshape(-1)[::97] += 0.25  # a training step
        b[version] = 1.0
        endpoint.publish(version, [w, b])
        print(f"trainer: version {version} committed, {endpoint.last_step()[1]} wire bytes")
    endpoint.close()
elif rank == 1:
    endpoint = dcr.Relay(spec, comm)
    endpoint.serve()
else:
    endpoint = dcr.Rollout(spec, comm)
    endpoint.attach([w, b])
    while (version := endpoint.receive()) is not None:
        print(f"rollout: holds version {version}, b[{version}] = {b[version]}")
endpoint.free()
comm.free()  # collective: before MPI finalizes

theirs = MPI.COMM_WORLD.bcast(w if rank == 0 else None, root=0)
same = rank != 2 or np.array_equal(theirs.view(np.uint32), w.view(np.uint32))
if rank == 2:
    print(f"rollout: bit-exact with the trainer: {'yes' if same else 'NO'}")
sys.exit(0 if same else 1)
