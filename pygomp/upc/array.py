"""Shared arrays: UPC's layout over the threads of every rank, accessed through MPI RMA.

Each rank holds one host buffer with a part of `layout.capacity` elements for each of
its threads, exposed to the other ranks as an MPI window (passive target, locked for the
array's life).  A part whose device has memory of its own stays mapped there from
creation to `free` (`resident.Parts`); the buffer is its staging copy.  ``a[key]`` and
``a[key] = v`` read and write any elements: this rank's through the buffer (copying just
those elements from or to the device), another rank's with one MPI get or put per rank
(an indexed datatype covers the elements there), completed before the call returns.
Writes by other ranks are visible here after `barrier()`, as in UPC.

One-sided operations reach only the host buffer, so `barrier()` settles the devices
when there are several ranks: every rank brings to its buffer the parts that kernels
may have written, and the elements other ranks put since the last barrier (each origin
keeps what it put and hands it to the owner in one exchange) go to the owners' devices.
"""
from __future__ import annotations

import math

import numpy as np

from . import world as _world
from .layout import Layout
from .pointer import SharedPointer
from .resident import Parts, mapped_slots


class SharedArray:
    """A shared array (made by `shared_array`, collectively)."""

    def __init__(self, shape, dtype, blocksize):
        w = self.world = _world.get()
        self.dtype = np.dtype(dtype)
        if self.dtype.hasobject or self.dtype.fields is not None:
            raise TypeError(f"shared_array: {self.dtype} is not a numeric dtype")
        self.layout = Layout(shape, self.dtype.itemsize, blocksize, w.threads)
        self.shape, self.size, self.ndim = self.layout.shape, self.layout.size, \
            len(self.layout.shape)
        asked = (self.shape, self.dtype.str, blocksize)
        counts = [self.layout.count(t) for t in w.my_threads]
        resident = bool(mapped_slots(counts, w.devices))
        every = w.gather_objects("shared_array", (asked, resident))
        if any(x != asked for x, _ in every):
            got = "; ".join(f"rank {r}: shape {s}, dtype {np.dtype(d)}, blocksize {b}"
                            for r, ((s, d, b), _) in enumerate(every))
            raise _world.UPCError(f"shared_array: the ranks asked for different arrays "
                                  f"({got})")
        self._resident = [x for _, x in every]      # rank -> whether it has mapped parts
        self._sent = []         # (rank, displacements, values) put to those since barrier
        from mpi4py.util.dtlib import from_numpy_dtype
        MPI = w.MPI
        self._mpi_type = from_numpy_dtype(self.dtype)
        self._buffer = np.zeros(self.layout.capacity * len(w.my_threads), self.dtype)
        self.parts = Parts(self._buffer, self.layout.capacity, counts, w.devices)
        try:
            with w.timed():
                self._win = MPI.Win.Create(self._buffer, self.dtype.itemsize, comm=w.comm)
                self._win.Lock_all(MPI.MODE_NOCHECK)
        except BaseException:
            self.parts.unmap()
            raise
        self._indices, self._views = {}, {}
        w.arrays.append(self)

    def __repr__(self):
        b = self.layout.blocksize
        return (f"<shared array {self.shape} {self.dtype}, blocksize {b}, "
                f"THREADS {self.layout.threads}>")

    def __len__(self):
        return self.shape[0]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.free()

    def free(self):
        """Release the array on every rank (collective, like upc_all_free)."""
        self.world.agree("free")
        self._release()

    def _release(self):
        w = self.world
        if self._win is not None:
            try:
                self.parts.unmap()
            finally:
                with w.timed():
                    self._win.Unlock_all()
                    self._win.Free()
                self._win = None
                self._sent.clear()
                w.arrays.remove(self)

    def _live(self):
        """self, or a ValueError once it has been freed."""
        if self._win is None:
            raise ValueError(f"{self!r} has been freed")
        return self

    def _sync(self):
        """Make this rank's loads and stores and the window's RMA agree (MPI_Win_sync)."""
        with self.world.timed():
            self._win.Sync()

    # -- this rank's threads ------------------------------------------------------------
    def local(self, thread: int) -> np.ndarray:
        """A view of the elements with affinity to thread, one of this rank's.  Its
        device's copy comes to the host first, and the next kernel on the part (forall,
        all_reduce) takes the view's values to the device again; after that kernel,
        call local again to see or change the part."""
        self.parts.hand_out(self.world.slot(thread))
        return self._part(thread)

    def _part(self, thread: int) -> np.ndarray:
        """The host buffer's part of thread, as it is (what kernels are given: the
        device's copy is found present).  The same view each time, so that a kernel's
        repeated calls are recognized."""
        view = self._live()._views.get(thread)
        if view is None:
            start = self.world.slot(thread) * self.layout.capacity
            view = self._views[thread] = self._buffer[start:start + self.layout.count(thread)]
        return view

    def global_indices(self, thread: int) -> np.ndarray:
        """The flat (row-major) indices of `local(thread)`'s elements, as int64."""
        self.world.slot(thread)
        g = self._indices.get(thread)
        if g is None:
            g = self._indices[thread] = self.layout.indices(thread)
            g.setflags(write=False)
        return g

    def ptr(self, index=0) -> SharedPointer:
        """A pointer to shared to an element: a flat index or a tuple of indices."""
        if isinstance(index, tuple):
            index = int(np.ravel_multi_index(index, self.shape))
        return SharedPointer.to(self, int(index))

    # -- any element, through MPI --------------------------------------------------------
    def __getitem__(self, key):
        flat, shape, picked = _select(self.shape, key)
        if picked:                      # an index array may repeat elements: read each once
            flat, again = np.unique(flat, return_inverse=True)
            return self._transfer(flat, None)[again].reshape(shape)
        out = self._transfer(flat, None)
        return out.reshape(shape) if shape else out[0]

    def __setitem__(self, key, value):
        flat, shape, picked = _select(self.shape, key)
        values = np.broadcast_to(np.asarray(value).astype(self.dtype, copy=False),
                                 shape).ravel()
        if picked:                      # a repeated element gets its last value, as in numpy
            last = flat.size - 1 - np.unique(flat[::-1], return_index=True)[1]
            flat, values = flat[last], values[last]
        self._transfer(flat, values)

    def flat_get(self, i: int):
        """The element at flat index i."""
        return self._transfer(np.array([i], np.int64), None)[0]

    def flat_set(self, i: int, value):
        self._transfer(np.array([i], np.int64), np.array([value], self.dtype))

    def _transfer(self, flat, values):
        """Read (values None) or write the elements at flat indices; returns what it read."""
        w = self._live().world
        thread, addr = self.layout.place(flat)
        rank = w.rank_of[thread]
        disp = w.slot_of[thread] * self.layout.capacity + addr
        out = np.empty(flat.size, self.dtype) if values is None else None
        mine = rank == w.rank
        if mine.any():
            here = disp[mine]
            if values is None:
                self.parts.read(here)
                out[mine] = self._buffer[here]
            else:
                self.parts.write(here, lambda: self._buffer.__setitem__(here, values[mine]))
        remote = np.flatnonzero(~mine)
        if remote.size == 0:
            return out
        order = remote[np.lexsort((disp[remote], rank[remote]))]   # by rank, then place
        ranks, starts = np.unique(rank[order], return_index=True)
        pending = []
        with w.timed():
            for r, sel in zip(ranks.tolist(), np.split(order, starts[1:])):
                target, made = self._target(disp[sel])
                data = np.empty(sel.size, self.dtype) if values is None else \
                    np.ascontiguousarray(values[sel])
                if values is None:
                    self._win.Get(data, r, target)
                else:
                    self._win.Put(data, r, target)
                    if self._resident[r]:
                        self._sent.append((r, disp[sel], data))
                pending.append((r, sel, data, made))
            w.rma_ops += len(pending)
            for r, sel, data, made in pending:
                self._win.Flush(r)
                if made is not None:
                    made.Free()
                if values is None:
                    out[sel] = data
        return out

    def _settle(self, puts):
        """At a barrier: bring the parts kernels may have written to the host, then
        write the elements other ranks put here (``[(displacements, values)]``) and take
        them to the devices."""
        self.parts.fetch_all()
        for disp, values in puts:
            self.parts.write(disp, lambda: self._buffer.__setitem__(disp, values))

    def _target(self, disp):
        """The MPI target of sorted displacements: (start, count, type) and a datatype
        made for it (None when the elements are contiguous)."""
        base = self._mpi_type
        if disp[-1] - disp[0] + 1 == disp.size:
            return (int(disp[0]), disp.size, base), None
        cut = np.flatnonzero(np.diff(disp) != 1) + 1
        starts = np.concatenate(([0], cut))
        lengths = np.diff(np.concatenate((starts, [disp.size])))
        made = base.Create_indexed(lengths.tolist(), disp[starts].tolist()).Commit()
        return (0, 1, made), made


def _select(shape, key):
    """Flat indices (int64), the result shape, and whether an index array was used, for
    numpy-style indexing with ints, slices, Ellipsis and at most one 1-D integer array."""
    if not isinstance(key, tuple):
        key = (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if any(k is Ellipsis for k in key):
        at = [k is Ellipsis for k in key].index(True)
        key = key[:at] + (slice(None),) * (len(shape) - len(key) + 1) + key[at + 1:]
    if len(key) > len(shape):
        raise IndexError(f"too many indices: the shared array has {len(shape)} "
                         f"dimension(s), {len(key)} were given")
    key = key + (slice(None),) * (len(shape) - len(key))
    flat = np.zeros((), np.int64)
    out_shape = []
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]     # row-major
    arrays = 0
    for d, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, slice):
            r = np.arange(*k.indices(n), dtype=np.int64)
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {d} with size {n}")
            flat = flat + (k % n) * strides[d]
            continue
        else:
            r = np.asarray(k)
            if r.ndim != 1 or r.dtype.kind not in "iu":
                raise IndexError(f"shared arrays take ints, slices, '...' and 1-D integer "
                                 f"arrays as indices, not {k!r}")
            arrays += 1
            if arrays > 1:
                raise IndexError("shared arrays take at most one integer array in an index")
            if r.size and not (-n <= r.min() and r.max() < n):
                raise IndexError(f"an index of axis {d} is out of bounds for size {n}")
            r = r.astype(np.int64) % max(n, 1)
        flat = flat[..., None] + r * strides[d]
        out_shape.append(r.size)
    return flat.reshape(-1), tuple(out_shape), arrays > 0
