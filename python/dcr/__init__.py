"""dcr's Python binding: the trainer, relay and rollout endpoints of libdcr.so through ctypes.

Buffers are numpy arrays or torch tensors, passed by address (never copied): they must be
contiguous and stay alive, in place, while dcr uses them. Communicators are mpi4py ones (dcr works
on a duplicate) or an in-process thread group for tests.

    spec = dcr.Spec(trainers=2, rollout_tp=2)          # dcr refit's option names, _ for -
    for name, t in state_dict.items(): spec.add_tensor(name, t.dtype, t.shape)
    comm = dcr.Comm.from_mpi(MPI.COMM_WORLD, "ucx")
    trainer = dcr.Trainer(spec, comm)                   # on ranks [0, trainers)
    trainer.publish(version, [shard[name] for name in trainer.buffer_names])

The library is found through $DCR_LIBRARY, else build/libdcr.so of this checkout.
"""
import ctypes
import os

__all__ = ["DcrError", "Spec", "Comm", "Trainer", "Relay", "Rollout", "NO_VERSION"]

NO_VERSION = (1 << 64) - 1
_CLOSED = 100
_HOST, _DEVICE = 0, 1


class DcrError(RuntimeError):
    """A dcr call failed; `code` is the DCR_ code of include/dcr/dcr.h."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class _Buffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("bytes", ctypes.c_uint64), ("dtype", ctypes.c_char_p),
                ("space", ctypes.c_int)]


def _load():
    path = os.environ.get("DCR_LIBRARY")
    if not path:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        path = os.path.join(root, "build", "libdcr.so")
    if not os.path.exists(path):
        raise DcrError(6, f"libdcr.so not found at '{path}': build dcr (scripts/build.sh) or set DCR_LIBRARY")
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    vp, p = ctypes.c_void_p, ctypes.POINTER
    sigs = {
        "dcr_last_error": ([], ctypes.c_char_p),
        "dcr_spec_new": ([p(vp)], ctypes.c_int),
        "dcr_spec_free": ([vp], None),
        "dcr_spec_set": ([vp, ctypes.c_char_p, ctypes.c_char_p], ctypes.c_int),
        "dcr_spec_add_tensor": ([vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, p(ctypes.c_int64)], ctypes.c_int),
        "dcr_spec_set_model_config": ([vp, ctypes.c_char_p], ctypes.c_int),
        "dcr_comm_from_mpi": ([ctypes.c_int64, ctypes.c_char_p, p(vp)], ctypes.c_int),
        "dcr_comm_threads": ([ctypes.c_int, p(vp)], ctypes.c_int),
        "dcr_comm_free": ([vp], None),
        "dcr_trainer_new": ([vp, vp, p(vp)], ctypes.c_int),
        "dcr_relay_new": ([vp, vp, p(vp)], ctypes.c_int),
        "dcr_rollout_new": ([vp, vp, p(vp)], ctypes.c_int),
        "dcr_endpoint_free": ([vp], None),
        "dcr_endpoint_buffer_count": ([vp, p(ctypes.c_size_t)], ctypes.c_int),
        "dcr_endpoint_buffer": ([vp, ctypes.c_size_t, p(ctypes.c_char_p), p(ctypes.c_char_p), p(ctypes.c_uint64),
                                 p(ctypes.c_int), p(p(ctypes.c_int64))], ctypes.c_int),
        "dcr_endpoint_piece_count": ([vp, p(ctypes.c_size_t)], ctypes.c_int),
        "dcr_endpoint_piece": ([vp, ctypes.c_size_t] + [p(ctypes.c_size_t)] * 2 + [p(ctypes.c_uint64)] * 6, ctypes.c_int),
        "dcr_endpoint_committed": ([vp], ctypes.c_uint64),
        "dcr_endpoint_last_step": ([vp, p(ctypes.c_uint64), p(ctypes.c_uint64), p(ctypes.c_uint64)], ctypes.c_int),
        "dcr_endpoint_last_pause": ([vp, p(ctypes.c_double), p(ctypes.c_double), p(ctypes.c_uint64)], ctypes.c_int),
        "dcr_trainer_publish": ([vp, ctypes.c_uint64, p(_Buffer), ctypes.c_size_t], ctypes.c_int),
        "dcr_trainer_close": ([vp], ctypes.c_int),
        "dcr_relay_serve": ([vp], ctypes.c_int),
        "dcr_rollout_attach": ([vp, p(_Buffer), ctypes.c_size_t], ctypes.c_int),
        "dcr_rollout_receive": ([vp, p(ctypes.c_uint64)], ctypes.c_int),
        "dcr_rollout_stage": ([vp, p(ctypes.c_uint64)], ctypes.c_int),
        "dcr_rollout_apply": ([vp, p(ctypes.c_uint64)], ctypes.c_int),
    }
    for name, (args, result) in sigs.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = args, result
    return lib


_lib = _load()


def _check(code):
    if code != 0:
        raise DcrError(code, _lib.dcr_last_error().decode())
    return code


# numpy and torch element types by dcr's names.
_NUMPY = {"float16": "f16", "float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "uint8": "u8"}
_TORCH = {"torch.bfloat16": "bf16", "torch.float16": "f16", "torch.float32": "f32", "torch.float64": "f64",
          "torch.int32": "i32", "torch.int64": "i64", "torch.uint8": "u8",
          "torch.float8_e4m3fn": "f8_e4m3", "torch.float8_e5m2": "f8_e5m2"}


def dtype_name(dtype):
    """dcr's name for a numpy or torch dtype (or a dcr name such as "bf16")."""
    text = str(dtype)
    if text in _TORCH:
        return _TORCH[text]
    if text in _NUMPY:
        return _NUMPY[text]
    if text in ("bf16", "f16", "f32", "f64", "f8_e4m3", "f8_e5m2", "i32", "i64", "u8"):
        return text
    raise DcrError(1, f"dtype {text} has no dcr equivalent")


def _describe(array, dtype=None):
    """A _Buffer for a contiguous numpy array or torch tensor, by address (no copy)."""
    if hasattr(array, "data_ptr"):  # torch
        if not array.is_contiguous():
            raise DcrError(1, "a torch tensor given to dcr must be contiguous")
        return _Buffer(array.data_ptr(), array.numel() * array.element_size(),
                       (dtype or dtype_name(array.dtype)).encode(), _DEVICE if array.is_cuda else _HOST)
    if not array.flags["C_CONTIGUOUS"]:
        raise DcrError(1, "a numpy array given to dcr must be C-contiguous")
    return _Buffer(array.ctypes.data, array.nbytes, (dtype or dtype_name(array.dtype)).encode(), _HOST)


def _buffers(arrays, dtypes):
    """arrays: a list in the endpoint's buffer order. numpy has no bfloat16: give such buffers as
    uint16 arrays, and the endpoint's own dtypes are used for them."""
    if len(arrays) != len(dtypes):
        raise DcrError(1, f"{len(arrays)} buffers given, the endpoint has {len(dtypes)}")
    described = [_describe(a, d if str(getattr(a, "dtype", "")) == "uint16" else None) for a, d in zip(arrays, dtypes)]
    return (_Buffer * len(described))(*described), len(described)


class Spec:
    """The job: its tensors (checkpoint names, dtypes, shapes) and layout, alike on every rank."""

    def __init__(self, **options):
        handle = ctypes.c_void_p()
        _check(_lib.dcr_spec_new(ctypes.byref(handle)))
        self._handle = handle
        for key, value in options.items():
            self.set(key.replace("_", "-"), value)

    def set(self, option, value):
        if isinstance(value, bool):
            value = "true" if value else "false"
        _check(_lib.dcr_spec_set(self._handle, option.encode(), str(value).encode()))

    def add_tensor(self, name, dtype, shape):
        dims = (ctypes.c_int64 * len(shape))(*shape)
        _check(_lib.dcr_spec_add_tensor(self._handle, name.encode(), dtype_name(dtype).encode(), len(shape), dims))

    def set_model_config(self, config_json):
        _check(_lib.dcr_spec_set_model_config(self._handle, config_json.encode()))

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.dcr_spec_free(self._handle)
            self._handle = None


class Comm:
    """The job's ranks: an mpi4py communicator, or one rank of an in-process thread group."""

    def __init__(self, handle):
        self._handle = handle

    @classmethod
    def from_mpi(cls, comm, transport="ucx"):
        handle = ctypes.c_void_p()
        _check(_lib.dcr_comm_from_mpi(comm.py2f(), transport.encode(), ctypes.byref(handle)))
        return cls(handle)

    @classmethod
    def threads(cls, size):
        handles = (ctypes.c_void_p * size)()
        _check(_lib.dcr_comm_threads(size, handles))
        return [cls(ctypes.c_void_p(h)) for h in handles]

    def free(self):
        """Collective for an MPI comm: every rank frees its own together."""
        if self._handle:
            _lib.dcr_comm_free(self._handle)
            self._handle = None


class _Endpoint:
    _new = None

    def __init__(self, spec, comm):
        handle = ctypes.c_void_p()
        _check(getattr(_lib, self._new)(spec._handle, comm._handle, ctypes.byref(handle)))
        self._handle = handle
        self._spec, self._comm = spec, comm  # kept alive with the endpoint
        self.buffers = self._read_buffers()
        self.pieces = self._read_pieces()

    def _read_buffers(self):
        count = ctypes.c_size_t()
        _check(_lib.dcr_endpoint_buffer_count(self._handle, ctypes.byref(count)))
        out = []
        for i in range(count.value):
            name, dtype, nbytes = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_uint64()
            ndim, shape = ctypes.c_int(), ctypes.POINTER(ctypes.c_int64)()
            _check(_lib.dcr_endpoint_buffer(self._handle, i, ctypes.byref(name), ctypes.byref(dtype),
                                            ctypes.byref(nbytes), ctypes.byref(ndim), ctypes.byref(shape)))
            out.append({"name": name.value.decode(), "dtype": dtype.value.decode(), "bytes": nbytes.value,
                        "shape": tuple(shape[d] for d in range(ndim.value))})
        return out

    def _read_pieces(self):
        count = ctypes.c_size_t()
        _check(_lib.dcr_endpoint_piece_count(self._handle, ctypes.byref(count)))
        out = []
        for i in range(count.value):
            sizes = [ctypes.c_size_t() for _ in range(2)]
            words = [ctypes.c_uint64() for _ in range(6)]
            _check(_lib.dcr_endpoint_piece(self._handle, i, *(ctypes.byref(v) for v in sizes + words)))
            keys = ("buffer", "tensor", "row0", "col0", "rows", "cols", "offset", "pitch")
            out.append(dict(zip(keys, (v.value for v in sizes + words))))
        return out

    def lay_out(self, tensors, make_buffer):
        """The endpoint's buffers filled from whole canonical tensors (2-D views, in spec order), as a
        loader places them: make_buffer(entry of self.buffers) gives an empty flat buffer."""
        flats = [make_buffer(b) for b in self.buffers]
        for p in self.pieces:
            whole = tensors[p["tensor"]]
            box = whole.reshape(-1, whole.shape[-1])[p["row0"]:p["row0"] + p["rows"], p["col0"]:p["col0"] + p["cols"]]
            flat, start, n = flats[p["buffer"]], p["offset"], p["cols"]
            if p["pitch"] == n:
                flat[start:start + p["rows"] * n] = box.reshape(-1)
                continue
            for r in range(p["rows"]):
                flat[start + r * p["pitch"]:start + r * p["pitch"] + n] = box[r]
        return flats

    @property
    def committed(self):
        """The committed version, or None before the first commit."""
        v = _lib.dcr_endpoint_committed(self._handle)
        return None if v == NO_VERSION else v

    def last_step(self):
        """(frames, wire bytes, changed elements) of the last step on this rank."""
        f, w, c = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
        _check(_lib.dcr_endpoint_last_step(self._handle, ctypes.byref(f), ctypes.byref(w), ctypes.byref(c)))
        return f.value, w.value, c.value

    def last_pause(self):
        """(staging seconds, pause seconds, staged frame bytes) of the last step on this rank: under
        apply=staged the time until every rollout held the version and from the pause's start to
        the commit; streamed, 0 and the whole step."""
        st, ps, b = ctypes.c_double(), ctypes.c_double(), ctypes.c_uint64()
        _check(_lib.dcr_endpoint_last_pause(self._handle, ctypes.byref(st), ctypes.byref(ps), ctypes.byref(b)))
        return st.value, ps.value, b.value

    def free(self):
        if self._handle:
            _lib.dcr_endpoint_free(self._handle)
            self._handle = None


class Trainer(_Endpoint):
    _new = "dcr_trainer_new"

    def publish(self, version, arrays):
        """Streams `version` from `arrays` (one per entry of self.buffers, in order); returns once it
        is committed, raises DcrError (code 8, aborted) when the job did not commit it."""
        try:
            buffers, n = _buffers(arrays, [b["dtype"] for b in self.buffers])
        except DcrError:
            # Still take part in the step (which every rank then refuses), so no rank waits for this one.
            _lib.dcr_trainer_publish(self._handle, version, None, 0)
            raise
        _check(_lib.dcr_trainer_publish(self._handle, version, buffers, n))

    def close(self):
        _check(_lib.dcr_trainer_close(self._handle))


class Relay(_Endpoint):
    _new = "dcr_relay_new"

    def serve(self):
        _check(_lib.dcr_relay_serve(self._handle))


class Rollout(_Endpoint):
    _new = "dcr_rollout_new"

    def attach(self, arrays):
        """The caller's buffers, one per entry of self.buffers, in order; kept alive and in place.
        dcr writes into them, so a read-only numpy array is refused."""
        for a, b in zip(arrays, self.buffers):
            flags = getattr(a, "flags", None)
            if flags is not None and not flags["WRITEABLE"]:
                raise DcrError(1, f"buffer '{b['name']}' is a read-only array (writeable=False): a rollout writes "
                                  "every version into its buffers in place")
        self._attached = list(arrays)
        buffers, n = _buffers(self._attached, [b["dtype"] for b in self.buffers])
        _check(_lib.dcr_rollout_attach(self._handle, buffers, n))

    def receive(self):
        """Applies the next version in place; returns it once committed, or None when the trainers
        closed the job. Raises DcrError when the job did not commit (a retry completes it)."""
        return self._step(_lib.dcr_rollout_receive)

    def stage(self):
        """apply=staged: receives and checks the next version without touching the buffers (keep
        generating meanwhile); returns it once every rollout holds it, or None when the trainers
        closed the job. Raises DcrError when the step failed (nothing was applied anywhere)."""
        return self._step(_lib.dcr_rollout_stage)

    def _step(self, call):
        """A step that may find the job closed: its version, or None when closed."""
        version = ctypes.c_uint64()
        code = call(self._handle, ctypes.byref(version))
        if code == _CLOSED:
            return None
        _check(code)
        return version.value

    def apply(self):
        """apply=staged: the pause. Applies the staged version into the buffers and returns it
        once the job committed it (pause generation around this call)."""
        version = ctypes.c_uint64()
        _check(_lib.dcr_rollout_apply(self._handle, ctypes.byref(version)))
        return version.value
