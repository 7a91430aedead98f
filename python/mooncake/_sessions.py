"""MooncakeDistributedStore's session calls: Mooncake's layer-wise API (kvcache-ai/Mooncake PR 2881), as SGLang's
MooncakeDirectLinker and vLLM's layer-wise MooncakeStoreConnector call it, over libmmc's GVA flow.

A put session is an allocation (mmc_batch_malloc) written range by range (mmc_batch_copy) and published or dropped
at its end (mmc_batch_write_finish); a get session is a read lease (mmc_batch_add_lease) on the object's GVA
(mmc_batch_get_key_info), read range by range and released at its end (mmc_batch_remove_lease). Between start and
end no meta server round trip is made: the ranges go straight between the caller's buffers and the pool.

Sessions are the store's, as Mooncake's are: any thread may write, read or end them; one is open per key and
direction. A range names offsets inside the object its session started and is checked against its size. Ranges
run under the write or read lease (ock.mmc.meta.lease_ttl_ms, 10 s by default) and name their grant, key and
place (mmc_batch_copy_keys): past the lease they fail with LEASE_EXPIRED and move nothing, also once the space has
been granted again, to another key or to the same key elsewhere.
"""
import ctypes
import threading
from array import array
from itertools import chain

from mmc import _args as A
from mmc import _lib
from mmc._lib import lib, BATCH_MAX, LAYERS_MAX

from ._batch import in_chunks
from ._codes import INVALID_PARAMS, LEASE_EXPIRED, NO_AVAILABLE_HANDLE, OBJECT_NOT_FOUND, mooncake_code

_G2H, _H2G = 2, 3
_COPY_MAX = BATCH_MAX * LAYERS_MAX  # ranges one mmc_batch_copy_keys takes
_HBM, _DRAM, _SSD = 0, 1, 2  # enum mmc_media
_WRITE, _DROP = 0, 1  # mmc_batch_write_finish's write_results


def _code(rc):
    # a session's lease ran out: Mooncake's own code for it, which its engines read as "start again"
    return LEASE_EXPIRED if rc == _lib.MMC_LEASE_EXPIRED else mooncake_code(rc)


class SessionTable:
    """The open sessions of one store: key (bytes) -> (gva, size), one map per direction; and per get session the
    starts not ended yet (threads loading one page each start and end it: the lease goes with the last end, not
    under another thread's read). Thread-safe."""

    def __init__(self):
        self.lock = threading.Lock()
        self.puts = {}
        self.gets = {}
        self.get_opens = {}

    def clear(self):
        with self.lock:
            self.puts.clear()
            self.gets.clear()
            self.get_opens.clear()

    def end_get(self, k):
        """Under lock: forgets get session k (its key is gone, or its last start ended)."""
        self.gets.pop(k, None)
        self.get_opens.pop(k, None)


def _column(rows, name):
    """One argument's rows as one flat array('Q') and each row's length. Every value must be a non-negative 64-bit
    int (TypeError otherwise)."""
    # a row that is an iterator would be used up by the flattening before its length is taken
    rows = [r if isinstance(r, (list, tuple)) else A.seq(r, name) for r in A.seq(rows, name)]
    try:
        return array("Q", chain.from_iterable(rows)), list(map(len, rows))
    except (TypeError, OverflowError):  # a row that is not a list of ints: the argument rules say which
        return A.nested_u64s(rows, name)


def _columns(keys, all_ptrs, all_sizes, all_offsets):
    """(ptrs, sizes, offsets), each a flat array('Q') and its rows' lengths, or None when they do not line up with
    the keys."""
    cols = [_column(v, name) for v, name in ((all_ptrs, "all_buffer_ptrs"), (all_sizes, "all_sizes"),
                                             (all_offsets, "all_offsets"))]
    return cols if all(len(lens) == len(keys) for _, lens in cols) else None


def _regular(cols):
    """Whether the call's rows can go to libmmc as they are: each key's three rows alike in length, no range empty
    (Mooncake skips those; libmmc refuses them) and no key with more ranges than one copy takes."""
    (_, pl), (ns, nl), (_, ol) = cols
    return pl == nl == ol and 0 not in ns and max(pl, default=0) <= _COPY_MAX


def _kept(cols):
    """cols as _regular wants them: each key's non-empty ranges, or none for a key whose rows differ in length or
    that has more than one copy takes (counts[i] None: INVALID_PARAMS)."""
    (ps, pl), (ns, _), (os_, _) = cols
    flat, counts, at = (array("Q"), array("Q"), array("Q")), [], [0, 0, 0]
    for lens in zip(*(c[1] for c in cols)):
        rows = [v[a:a + m] for v, a, m in zip((ps, ns, os_), at, lens)]
        at = [a + m for a, m in zip(at, lens)]
        keep = [j for j, n in enumerate(rows[1]) if n] if lens[0] == lens[1] == lens[2] else None
        if keep is None or len(keep) > _COPY_MAX:
            counts.append(None)
            continue
        for f, r in zip(flat, rows):
            f.extend(r[j] for j in keep)
        counts.append(len(keep))
    return flat, counts


def _parts(n, counts):
    """Runs [lo, hi) of the keys with at most BATCH_MAX keys and _COPY_MAX ranges: one mmc_batch_copy_keys each."""
    lo, ranges = 0, 0
    for i in range(n):
        if i - lo == BATCH_MAX or ranges + counts[i] > _COPY_MAX:
            yield lo, i
            lo, ranges = i, 0
        ranges += counts[i]
    if lo < n:
        yield lo, n


class Sessions:
    """The session calls of MooncakeDistributedStore (store.py): self._d, self._ready(), self.counters and
    self._sessions (a SessionTable) are the store's."""

    # ---- put sessions
    def batch_put_session_start(self, keys, sizes, config=None):
        """Allocates each key's object (sizes[i] bytes) for range writes: per key 0, NO_AVAILABLE_HANDLE (no
        room, or the key is being written with another size) or a code. A key this store is writing already goes
        on with its allocation (0); a key already stored answers 0: its ranges are skipped and its end succeeds.
        The config's replica_num must be 1 (one allocation per key); its placement hints are not followed."""
        ks, ns = A.keys(keys), A.seq(sizes, "sizes")
        if not self._ready() or len(ns) != len(ks):
            return [INVALID_PARAMS] * len(ks)
        if config is not None and not hasattr(config, "_to_mmc"):
            raise TypeError("config: expected ReplicateConfig, got %s" % type(config).__name__)
        if config is not None and (config._to_mmc("batch_put_session_start") is None or config.replica_num != 1):
            self.last_error = "batch_put_session_start: one replica per put session"
            return [INVALID_PARAMS] * len(ks)
        ns = A.u64s(ns, "sizes")
        if len(ks) > BATCH_MAX:
            return in_chunks(lambda k, n: self.batch_put_session_start(k, n, config), len(ks), ks, ns)
        first = {}  # a key named twice is started once, with its first size, and answers as its first entry
        for i, k in enumerate(ks):
            if ns[i]:
                first.setdefault(k, i)
        out = [INVALID_PARAMS] * len(ks)
        idx = list(first.values())
        if idx:
            self._allocate(ks, idx, A.u64s([ns[i] for i in idx], "sizes"), out)
        return [out[first[k]] if ns[i] and k in first else out[i] for i, k in enumerate(ks)]

    def _allocate(self, ks, idx, wanted, out):
        gvas = A.zeros_u64(len(idx))
        rc = lib.mmc_batch_malloc(self._d._s, A.key_array([ks[i] for i in idx]), A.addr(wanted), len(idx), _DRAM, 0,
                                  A.addr(gvas))
        with self._sessions.lock:
            for j, i in enumerate(idx):
                if rc:
                    out[i] = _code(rc)
                elif not gvas[j]:
                    out[i] = NO_AVAILABLE_HANDLE
                else:
                    self._sessions.puts[ks[i]] = (gvas[j], wanted[j])
                    out[i] = 0

    def batch_put_from_multi_buffer_ranges(self, keys, all_buffer_ptrs, all_sizes, all_dst_offsets):
        """Writes each key's ranges: all_buffer_ptrs[i][j] (all_sizes[i][j] bytes) to offset all_dst_offsets[i][j]
        of key i's object. Per key the bytes written (the sum of its sizes), OBJECT_NOT_FOUND (no put session),
        INVALID_PARAMS (a range past the object, a NULL buffer) or a code (LEASE_EXPIRED: the write lease ran
        out)."""
        return self._ranges(keys, all_buffer_ptrs, all_sizes, all_dst_offsets, self._sessions.puts, _H2G)

    def batch_put_session_end(self, keys):
        """Publishes each key's object: per key 0, OBJECT_NOT_FOUND (no put session, or its allocation was
        reclaimed after its write lease) or a code. A key whose end could not reach the meta server keeps its
        session, to be ended or revoked again."""
        return self._finish(keys, _WRITE)

    def batch_put_session_revoke(self, keys):
        """Drops each key's unfinished object: per key 0, OBJECT_NOT_FOUND (no put session) or a code."""
        return self._finish(keys, _DROP)

    def _finish(self, keys, how):
        ks = A.keys(keys)
        if not self._ready():
            return [INVALID_PARAMS] * len(ks)
        if len(ks) > BATCH_MAX:
            return in_chunks(lambda k: self._finish(k, how), len(ks), ks)
        out = [OBJECT_NOT_FOUND] * len(ks)
        with self._sessions.lock:
            idx = [i for i, k in enumerate(ks) if k in self._sessions.puts]
        if not idx:
            return out
        sent = [ks[i] for i in idx]
        res, hows = A.results(len(idx)), A.i32s([how] * len(idx), "how")  # held: libmmc reads their memory
        lib.mmc_batch_write_finish(self._d._s, A.key_array(sent), A.addr(hows), len(idx), A.addr(res))
        done = 0
        with self._sessions.lock:
            for j, i in enumerate(idx):
                r = res[j]
                if how == _DROP and r == _lib.MMC_UNMATCHED_KEY:
                    r = 0  # reclaimed already: dropped is what was asked
                out[i] = _code(r)
                if r not in (_lib.MMC_TIMEOUT, _lib.MMC_NOT_CONNECTED_META):
                    s = self._sessions.puts.pop(ks[i], None)
                    if how == _WRITE and r == 0 and s:
                        done += s[1]
        if how == _WRITE:
            ok = sum(1 for r in res if r == 0)
            self.counters.add("put", len(idx), len(idx) - ok, done)
        return out

    # ---- get sessions
    def batch_get_session_start(self, keys):
        """Leases each key's object for range reads: per key 0, OBJECT_NOT_FOUND or a code. An object only on the
        SSD tier is brought to DRAM first (ranges move memory to memory). Starting a key whose get session is open
        extends its lease."""
        return self.batch_get_session_start_with_sources(keys)[0]

    def batch_get_session_start_with_sources(self, keys):
        """batch_get_session_start(), and per key where its bytes came from: "memory", "local_disk" (the SSD tier,
        brought back to DRAM by this start) or None (not started), as SGLang's direct linker reads them. A key
        started n times (by threads loading the same page) stays open until its n-th end."""
        return self._get_start(keys, True)

    def _get_start(self, keys, counted):
        """A get sessions' start; counted: it is one more the keys' ends must match (a refresh is not)."""
        ks = A.keys(keys)
        if not self._ready():
            return [INVALID_PARAMS] * len(ks), [None] * len(ks)
        if not ks:
            return [], []
        if len(ks) > BATCH_MAX:
            both = in_chunks(lambda k: list(zip(*self._get_start(k, counted))), len(ks), ks)
            return [r for r, _ in both], [src for _, src in both]
        out = [INVALID_PARAMS] * len(ks)
        taken = set()
        on_ssd = self._lease(ks, range(len(ks)), out, taken)
        if on_ssd:
            rc = lib.mmc_prefetch_keys(self._d._s, A.key_array([ks[i] for i in on_ssd]), len(on_ssd), _SSD, _DRAM, 0)
            for i in on_ssd:
                out[i] = _code(rc)
            if not rc:  # leased again: the lease's ranges are now the DRAM copy's
                for i in self._lease(ks, on_ssd, out, taken):
                    out[i] = OBJECT_NOT_FOUND  # back on SSD already: as good as gone for ranges
        self._drop_unused_leases(ks, out, taken)
        if counted:
            with self._sessions.lock:
                for k in dict.fromkeys(k for i, k in enumerate(ks) if not out[i] and k in self._sessions.gets):
                    self._sessions.get_opens[k] = self._sessions.get_opens.get(k, 0) + 1
        self.counters.add("get", len(ks), sum(1 for r in out if r), 0)
        disk = set(on_ssd)
        return out, [None if r else "local_disk" if i in disk else "memory" for i, r in enumerate(out)]

    def _drop_unused_leases(self, ks, out, taken):
        """Ends the leases a start took and did not open a session on (the key failed after its lease: no key info,
        no blob, still on SSD): held, they kept the object from eviction until their TTL."""
        with self._sessions.lock:
            unused = [k for i, k in enumerate(ks) if out[i] and i in taken and k not in self._sessions.gets]
        if unused:
            lib.mmc_batch_remove_lease(self._d._s, A.key_array(unused), len(unused))

    def _lease(self, ks, idx, out, taken):
        """Leases ks[i] for i in idx (noting each i leased in taken) and records each one's memory copy (out[i] 0)
        or its code; answers the i whose object is only on SSD."""
        names = [ks[i] for i in idx]
        res = A.results(len(names))
        rc = lib.mmc_batch_add_lease(self._d._s, A.key_array(names), len(names), 0, A.addr(res))
        leased = [(i, names[j]) for j, i in enumerate(idx) if not rc and res[j] == 0]
        taken.update(i for i, _ in leased)
        with self._sessions.lock:
            for j, i in enumerate(idx):
                out[i] = _code(rc or res[j])
                if out[i]:  # an open session of a key gone since ends here
                    self._sessions.end_get(names[j])
        if not leased:
            return []
        infos = (_lib.mmc_key_info * len(leased))()
        rc = lib.mmc_batch_get_key_info(self._d._s, A.key_array([k for _, k in leased]), len(leased), 0, infos)
        on_ssd = []
        with self._sessions.lock:
            for (i, k), info in zip(leased, infos):
                mem = [j for j in range(min(info.blob_num, _lib.REPLICA_MAX)) if info.type[j] in (_HBM, _DRAM)]
                if rc or not info.blob_num:
                    out[i] = _code(rc) if rc else OBJECT_NOT_FOUND
                    self._sessions.end_get(k)
                elif not mem:
                    on_ssd.append(i)
                else:
                    self._sessions.gets[k] = (info.gva[mem[0]], info.size)
        return on_ssd

    def batch_get_into_multi_buffer_ranges(self, keys, all_buffer_ptrs, all_sizes, all_src_offsets):
        """Reads each key's ranges: all_sizes[i][j] bytes at offset all_src_offsets[i][j] of key i's object into
        all_buffer_ptrs[i][j]. Per key the bytes read (the sum of its sizes), OBJECT_NOT_FOUND (no get session),
        INVALID_PARAMS (a range past the object, a NULL buffer) or a code (LEASE_EXPIRED: the read lease ran
        out)."""
        out = self._ranges(keys, all_buffer_ptrs, all_sizes, all_src_offsets, self._sessions.gets, _G2H)
        self.counters.add("get", 0, 0, sum(n for n in out if n > 0))
        return out

    def batch_get_session_end(self, keys):
        """Ends the keys' get sessions (keys with none are skipped) and releases their leases: 0, or a code when
        the meta server could not be told (the leases then run out by themselves). A key started by several
        threads ends at its last end: before, one thread's end let the object go under another's range reads."""
        ks = A.keys(keys)
        if not self._ready():
            return INVALID_PARAMS
        open_ = []
        with self._sessions.lock:
            for k in dict.fromkeys(ks):
                if k not in self._sessions.gets:
                    continue
                left = self._sessions.get_opens.get(k, 1) - 1
                if left > 0:
                    self._sessions.get_opens[k] = left
                else:
                    self._sessions.end_get(k)
                    open_.append(k)
        rc = 0
        for at in range(0, len(open_), BATCH_MAX):
            part = open_[at:at + BATCH_MAX]
            r = lib.mmc_batch_remove_lease(self._d._s, A.key_array(part), len(part))
            if r and r != _lib.MMC_LEASE_EXPIRED and not rc:
                rc = _code(r)
        return rc

    def batch_get_session_refresh(self, keys):
        """Leases each key's open get session again, from where its object is now (as a start): per key 0,
        OBJECT_NOT_FOUND (no get session, or its key is gone: the session ends) or a code."""
        ks = A.keys(keys)
        if not self._ready():
            return [INVALID_PARAMS] * len(ks)
        with self._sessions.lock:
            idx = [i for i, k in enumerate(ks) if k in self._sessions.gets]
        out = [OBJECT_NOT_FOUND] * len(ks)
        for i, r in zip(idx, self._get_start([ks[i] for i in idx], False)[0] if idx else []):
            out[i] = r
        return out

    # ---- ranges, both directions
    def _ranges(self, keys, all_ptrs, all_sizes, all_offsets, table, direct):
        ks = A.keys(keys)
        if not self._ready():
            return [INVALID_PARAMS] * len(ks)
        cols = _columns(ks, all_ptrs, all_sizes, all_offsets)
        if cols is None:
            return [INVALID_PARAMS] * len(ks)
        if _regular(cols):
            (ps, counts), (ns, _), (os_, _) = cols
        else:
            (ps, ns, os_), counts = _kept(cols)
        with self._sessions.lock:
            grants = [table.get(k) for k in ks]
        # a key with no session, or whose rows are refused (count None), names no GVA: libmmc moves none of its
        # ranges and answers INVALID_PARAM for it
        gvas = array("Q", [0 if g is None or c is None else g[0] for g, c in zip(grants, counts)])
        res = _copy_keys(self._d._s, ks, gvas, array("I", [c or 0 for c in counts]), (os_, ps, ns), direct)
        out, at = [], 0
        for g, c, r in zip(grants, counts, res):
            out.append(OBJECT_NOT_FOUND if g is None else INVALID_PARAMS if c is None else
                       sum(ns[at:at + c]) if r == 0 else _code(r))
            at += c or 0
        return out


def _copy_keys(s, ks, gvas, counts, ranges, direct):
    """mmc_batch_copy_keys of ks, in parts it takes: each key's result."""
    names, res, first = A.key_array(ks), A.results(len(ks)), 0
    os_, ps, ns = ranges
    for lo, hi in _parts(len(ks), counts):
        rc = lib.mmc_batch_copy_keys(s, ctypes.addressof(names) + lo * ctypes.sizeof(ctypes.c_char_p),
                                     A.addr(gvas) + 8 * lo, A.addr(counts) + 4 * lo, A.addr(os_) + 8 * first,
                                     A.addr(ps) + 8 * first, A.addr(ns) + 8 * first, hi - lo, direct, 0,
                                     A.addr(res) + 4 * lo)
        for i in range(lo, hi) if rc else ():
            res[i] = rc
        first += sum(counts[lo:hi])
    return res
