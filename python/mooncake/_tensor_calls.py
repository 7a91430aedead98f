"""MooncakeDistributedStore's tensor calls (store_py.cpp's put_tensor ... upsert_pub_tensor), over its byte calls.
Objects carry Mooncake's tensor header (_tensor.py); a tensor-parallel shard of key is stored under
"{key}_tp_{rank}". Puts answer 0 or a Mooncake code (INVALID_PARAMS for what is not a supported CPU tensor), gets a
torch tensor or None. The *_with_parallelism calls take what plain calls do (no parallelism or writer partition,
a target reading as stored) and refuse the rest with one log line.
"""
import logging

from mmc import _args as A

from . import _tensor as T
from ._codes import INVALID_PARAMS, OBJECT_NOT_FOUND

log = logging.getLogger("mooncake.store")


def tp_key(key, rank):
    return "%s_tp_%d" % (key, rank)


def _rows(tensor):
    """(header, data) of a whole tensor, or None (logged) when it cannot be stored."""
    try:
        return T.pack_parts(tensor)
    except (TypeError, ValueError, RuntimeError) as e:
        log.warning("mooncake.store: tensor refused: %s", e)
        return None


def _shard_rows(tensor, tp_size, split_dim):
    """[(header, data)] of tensor's tp_size shards along split_dim, or None (logged)."""
    try:
        T.pack_parts(tensor)  # the whole tensor's checks first
        if not 0 <= split_dim < tensor.dim():
            raise ValueError("split_dim %d of a %d-dimensional tensor" % (split_dim, tensor.dim()))
        return [T.pack_parts(T.shard(tensor, r, tp_size, split_dim), tensor, (r, tp_size, split_dim))
                for r in range(tp_size)]
    except (TypeError, ValueError, RuntimeError) as e:
        log.warning("mooncake.store: tensor refused for tensor parallelism: %s", e)
        return None


def _config_ok(config):
    """Mooncake's validate_replicate_config: preferred_segments, when given, one per replica."""
    segs = getattr(config, "preferred_segments", None) or []
    if segs and len(segs) != config.replica_num:
        log.warning("mooncake.store: %d preferred_segments for replica_num %d", len(segs), config.replica_num)
        return False
    return True


class TensorCalls:
    """The tensor half of MooncakeDistributedStore (mixed in; it uses the byte calls of the class)."""

    # ---- writing
    def _put_rows(self, keys, rows, config):
        """Puts rows[i] = (header, data) or None under keys[i] in one batch: 0 or a code per key."""
        out = [INVALID_PARAMS] * len(keys)
        idx = [i for i, r in enumerate(rows) if r is not None]
        if not idx:
            return out
        bufs = [A.Buffer(part) for i in idx for part in rows[i]]
        try:
            ptrs = [[bufs[2 * j].addr, bufs[2 * j + 1].addr] for j in range(len(idx))]
            sizes = [[bufs[2 * j].len, bufs[2 * j + 1].len] for j in range(len(idx))]
            res = self.batch_put_from_multi_buffers([keys[i] for i in idx], ptrs, sizes, config)
        finally:
            for b in bufs:
                b.release()
        for i, r in zip(idx, res):
            out[i] = r
        return out

    def _put_tensors(self, keys, tensors, config=None):
        ks, ts = A.seq(keys, "keys"), A.seq(tensors, "tensors_list")
        if not self._ready() or not ks or len(ks) != len(ts):
            return [INVALID_PARAMS] * len(ks)
        return self._put_rows(ks, [_rows(t) for t in ts], config)

    def _put_tp(self, base_keys, tensors, config, tp_size, split_dim):
        """Every shard of every tensor; per base key 0 or its first shard's failure."""
        ks, ts = A.seq(base_keys, "base_keys"), A.seq(tensors, "tensors_list")
        if not self._ready() or not ks or len(ks) != len(ts) or tp_size < 1:
            return [INVALID_PARAMS] * len(ks)
        keys, rows, owner = [], [], []
        for i, (k, t) in enumerate(zip(ks, ts)):
            shards = _shard_rows(t, tp_size, split_dim)
            for r in range(tp_size):
                keys.append(tp_key(k, r))
                rows.append(shards[r] if shards else None)
                owner.append(i)
        out = [0] * len(ks)
        for i, r in zip(owner, self._put_rows(keys, rows, config)):
            out[i] = out[i] or r
        return out

    def put_tensor(self, key, tensor):
        return self._put_tensors([key], [tensor])[0]

    def batch_put_tensor(self, keys, tensors_list):
        return self._put_tensors(keys, tensors_list)

    def pub_tensor(self, key, tensor, config=None):
        return self.batch_pub_tensor([key], [tensor], config)[0]

    def batch_pub_tensor(self, keys, tensors_list, config=None):
        if config is not None and not _config_ok(config):
            return [INVALID_PARAMS] * len(A.seq(keys, "keys"))
        return self._put_tensors(keys, tensors_list, config)

    def put_tensor_with_tp(self, key, tensor, tp_rank=0, tp_size=1, split_dim=0):
        return self.pub_tensor_with_tp(key, tensor, None, tp_rank, tp_size, split_dim)

    def batch_put_tensor_with_tp(self, base_keys, tensors_list, tp_rank=0, tp_size=1, split_dim=0):
        return self.batch_pub_tensor_with_tp(base_keys, tensors_list, None, tp_rank, tp_size, split_dim)

    def pub_tensor_with_tp(self, key, tensor, config=None, tp_rank=0, tp_size=1, split_dim=0):
        return self.batch_pub_tensor_with_tp([key], [tensor], config, tp_rank, tp_size, split_dim)[0]

    def batch_pub_tensor_with_tp(self, base_keys, tensors_list, config=None, tp_rank=0, tp_size=1, split_dim=0):
        """tp_size <= 1: whole tensors under their keys; else every rank's shard under "{key}_tp_{rank}"."""
        if config is not None and not _config_ok(config):
            return [INVALID_PARAMS] * len(A.seq(base_keys, "base_keys"))
        if tp_size <= 1:
            return self._put_tensors(base_keys, tensors_list, config)
        return self._put_tp(base_keys, tensors_list, config, tp_size, split_dim)

    # ---- writing a [header][data] buffer as it is
    def put_tensor_from(self, key, buffer_ptr, size):
        return self.batch_put_tensor_from([key], [buffer_ptr], [size])[0]

    def batch_put_tensor_from(self, keys, buffer_ptrs, sizes):
        """Buffers laid out as get_tensor_into leaves them ([header][data]), stored as they are."""
        ks, ps, ns = A.seq(keys, "keys"), A.u64s(buffer_ptrs, "buffer_ptrs"), A.u64s(sizes, "sizes")
        if not self._ready() or len(ps) != len(ks) or len(ns) != len(ks):
            return [INVALID_PARAMS] * len(ks)
        good = [T.at_address(p, n) is not None for p, n in zip(ps, ns)]
        res = self.batch_put_from([k for k, g in zip(ks, good) if g], [p for p, g in zip(ps, good) if g],
                                  [n for n, g in zip(ns, good) if g])
        it = iter(res)
        return [next(it) if g else INVALID_PARAMS for g in good]

    def put_tensor_with_tp_from(self, key, buffer_ptr, size, tp_rank=0, tp_size=1, split_dim=0):
        return self.batch_put_tensor_with_tp_from([key], [buffer_ptr], [size], tp_rank, tp_size, split_dim)[0]

    def batch_put_tensor_with_tp_from(self, base_keys, buffer_ptrs, sizes, tp_rank=0, tp_size=1, split_dim=0):
        """The whole tensors in [header][data] buffers, split and stored as batch_put_tensor_with_tp does."""
        ps, ns = A.u64s(buffer_ptrs, "buffer_ptrs"), A.u64s(sizes, "sizes")
        return self.batch_put_tensor_with_tp(base_keys, [T.at_address(p, n) for p, n in zip(ps, ns)], tp_rank,
                                             tp_size, split_dim)

    # ---- reading
    def get_tensor(self, key):
        return self.batch_get_tensor([key])[0]

    def batch_get_tensor(self, keys):
        return [T.unpack(h) if h is not None else None for h in self.batch_get_buffer(keys)]

    def get_tensor_with_tp(self, key, tp_rank=0, tp_size=1, split_dim=0):
        return self.get_tensor(key if tp_size <= 1 else tp_key(key, tp_rank))

    def batch_get_tensor_with_tp(self, base_keys, tp_rank=0, tp_size=1):
        ks = A.seq(base_keys, "base_keys")
        return self.batch_get_tensor(ks if tp_size <= 1 else [tp_key(k, tp_rank) for k in ks])

    def get_tensor_into(self, key, buffer_ptr, size):
        """The tensor read into the buffer, sharing its memory (no copy), or None."""
        return self.batch_get_tensor_into([key], [buffer_ptr], [size])[0]

    def batch_get_tensor_into(self, keys, buffer_ptrs, sizes):
        ps = A.u64s(buffer_ptrs, "buffer_ptrs")
        ns = self.batch_get_into(keys, ps, sizes)
        if len(ns) != len(ps):
            return [None] * len(ns)
        return [T.at_address(p, n) if n > 0 else None for p, n in zip(ps, ns)]

    def get_tensor_with_tp_into(self, key, buffer_ptr, size, tp_rank=0, tp_size=1, split_dim=0):
        return self.get_tensor_into(key if tp_size <= 1 else tp_key(key, tp_rank), buffer_ptr, size)

    def batch_get_tensor_with_tp_into(self, base_keys, buffer_ptrs, sizes, tp_rank=0, tp_size=1, split_dim=0):
        ks = A.seq(base_keys, "base_keys")
        return self.batch_get_tensor_into(ks if tp_size <= 1 else [tp_key(k, tp_rank) for k in ks], buffer_ptrs,
                                          sizes)

    # ---- upserts: remove, then put; a key whose tensor would be refused keeps its value
    def _upsert_rows(self, keys, rows, config=None):
        """Removes and puts the keys whose rows (header, data) are good; the others answer INVALID_PARAMS."""
        ks = A.seq(keys, "keys")
        if not self._ready() or not ks or len(rows) != len(ks) or (config is not None and not _config_ok(config)):
            return [INVALID_PARAMS] * len(ks)
        return self._upsert_keys(ks, [r is not None for r in rows],
                                 lambda idx: self._put_rows([ks[i] for i in idx], [rows[i] for i in idx], config))

    def upsert_tensor(self, key, tensor):
        return self.batch_upsert_tensor([key], [tensor])[0]

    def batch_upsert_tensor(self, keys, tensors_list):
        return self._upsert_rows(keys, [_rows(t) for t in A.seq(tensors_list, "tensors_list")])

    def upsert_pub_tensor(self, key, tensor, config=None):
        return self.batch_upsert_pub_tensor([key], [tensor], config)[0]

    def batch_upsert_pub_tensor(self, keys, tensors_list, config=None):
        return self._upsert_rows(keys, [_rows(t) for t in A.seq(tensors_list, "tensors_list")], config)

    def upsert_tensor_from(self, key, buffer_ptr, size):
        return self.batch_upsert_tensor_from([key], [buffer_ptr], [size])[0]

    def batch_upsert_tensor_from(self, keys, buffer_ptrs, sizes):
        """[header][data] buffers stored as they are; one that holds no tensor keeps its key's value."""
        ks, ps, ns = A.seq(keys, "keys"), A.u64s(buffer_ptrs, "buffer_ptrs"), A.u64s(sizes, "sizes")
        if not self._ready() or not ks or len(ps) != len(ks) or len(ns) != len(ks):
            return [INVALID_PARAMS] * len(ks)
        return self._upsert_keys(ks, [T.at_address(p, n) is not None for p, n in zip(ps, ns)],
                                 lambda idx: self.batch_put_from([ks[i] for i in idx], [ps[i] for i in idx],
                                                                 [ns[i] for i in idx]))

    # ---- safetensors files
    def save_tensor_to_safetensor(self, key, file_name=None):
        """0; OBJECT_NOT_FOUND when key holds no tensor (Mooncake answers its FILE_NOT_FOUND); INVALID_PARAMS when
        the file cannot be written or the safetensors package is missing."""
        t = self.get_tensor(key)
        if t is None:
            return OBJECT_NOT_FOUND
        try:
            from safetensors.torch import save_file
            save_file({key: t}, key if file_name is None else file_name)
        except (ImportError, OSError, ValueError) as e:
            log.warning("mooncake.store: save_tensor_to_safetensor(%r): %s", key, e)
            return INVALID_PARAMS
        return 0

    def load_tensor_from_safetensor(self, key=None, file_name=None):
        """The tensor of file_name's entry key (else its first), stored under key (else file_name); None on failure."""
        if file_name is None:
            raise TypeError("load_tensor_from_safetensor() missing argument: 'file_name'")
        try:
            from safetensors.torch import load_file
            loaded = load_file(file_name)
        except (ImportError, OSError, ValueError) as e:
            log.warning("mooncake.store: load_tensor_from_safetensor(%r): %s", file_name, e)
            return None
        if not loaded:
            return None
        t = loaded[key] if key in loaded else next(iter(loaded.values()))
        return t if self.put_tensor(file_name if key is None else key, t) == 0 else None

    # ---- the parallelism calls: what the plain calls do, else refused
    def _plain(self, call, parallelism=None, writer_partition=None, target=None):
        mode = getattr(target, "mode", "as_stored") if target is not None else "as_stored"
        if parallelism is None and writer_partition is None and mode == "as_stored" \
                and getattr(target, "parallelism", None) is None:
            return True
        log.warning("mooncake.store: %s with a parallelism, writer partition or read target is not supported by "
                    "mmc: use the *_with_tp calls", call)
        return False

    def get_tensor_with_parallelism(self, key, target=None):
        return self.get_tensor(key) if self._plain("get_tensor_with_parallelism", target=target) else None

    def batch_get_tensor_with_parallelism(self, keys, targets=None):
        ks = A.seq(keys, "keys")
        ok = all(self._plain("batch_get_tensor_with_parallelism", target=t) for t in (targets or []))
        return self.batch_get_tensor(ks) if ok else [None] * len(ks)

    def get_tensor_with_parallelism_into(self, key, buffer_ptr, size, target=None):
        ok = self._plain("get_tensor_with_parallelism_into", target=target)
        return self.get_tensor_into(key, buffer_ptr, size) if ok else None

    def batch_get_tensor_with_parallelism_into(self, keys, buffer_ptrs, sizes, targets=None):
        ks = A.seq(keys, "keys")
        ok = all(self._plain("batch_get_tensor_with_parallelism_into", target=t) for t in (targets or []))
        return self.batch_get_tensor_into(ks, buffer_ptrs, sizes) if ok else [None] * len(ks)

    def put_tensor_with_parallelism(self, key, tensor, parallelism=None, config=None, writer_partition=None):
        ok = self._plain("put_tensor_with_parallelism", parallelism, writer_partition)
        return self.pub_tensor(key, tensor, config) if ok else INVALID_PARAMS

    def batch_put_tensor_with_parallelism(self, keys, tensors_list, parallelisms=None, config=None,
                                          writer_partitions=None):
        ok = self._plain("batch_put_tensor_with_parallelism", parallelisms or None, writer_partitions or None)
        return self.batch_pub_tensor(keys, tensors_list, config) if ok else [INVALID_PARAMS] * len(keys)

    def upsert_tensor_with_parallelism(self, key, tensor, parallelism=None, config=None, writer_partition=None):
        ok = self._plain("upsert_tensor_with_parallelism", parallelism, writer_partition)
        return self.upsert_pub_tensor(key, tensor, config) if ok else INVALID_PARAMS

    def batch_upsert_tensor_with_parallelism(self, keys, tensors_list, parallelisms=None, config=None,
                                             writer_partitions=None):
        ok = self._plain("batch_upsert_tensor_with_parallelism", parallelisms or None, writer_partitions or None)
        return self.batch_upsert_pub_tensor(keys, tensors_list, config) if ok else [INVALID_PARAMS] * len(keys)
