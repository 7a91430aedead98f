"""mooncake.store on mmc: MooncakeDistributedStore and ReplicateConfig with Mooncake's signatures and return
conventions (store_py.cpp), over mmc.DistributedObjectStore.

- Codes are Mooncake's ErrorCode values (0 ok, negative errors); get calls return byte counts.
- setup() maps master_server_addr "host:port" to mmc-metaserver's tcp://host:port and global_segment_size to the
  DRAM this process lends; metadata_server, local_hostname, local_buffer_size and rdma_devices are accepted and
  not needed (mmc has no transfer-engine metadata service and picks its NICs itself).
- What mmc lacks is refused with INVALID_PARAMS, never claimed: hard pin, DFS replicas, tenants other than
  "default", SSD offload through setup, a client HTTP server. Soft pin and preferred segments are placement hints
  mmc does not follow; the object is stored and evictable like any other (docs/python.md says so).
"""
import ctypes
import json
import os

import mmc
from mmc import _args as A
from mmc import _lib
from mmc._lib import lib, BATCH_MAX

# Mooncake's ErrorCode values (mooncake-store/include/types.h)
OK = 0
INTERNAL_ERROR = -1
BUFFER_OVERFLOW = -10
NO_AVAILABLE_HANDLE = -200
INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
OBJECT_HAS_LEASE = -706
TRANSFER_FAIL = -800
RPC_FAIL = -900

_CODES = {
    _lib.MMC_INVALID_PARAM: INVALID_PARAMS,
    _lib.MMC_OBJECT_NOT_EXISTS: OBJECT_NOT_FOUND,
    _lib.MMC_UNMATCHED_KEY: OBJECT_NOT_FOUND,
    -3016: NO_AVAILABLE_HANDLE,  # MMC_NOT_ENOUGH_MEMORY
    -3004: RPC_FAIL,  # MMC_TIMEOUT
    -3017: RPC_FAIL,  # MMC_NOT_CONNECTED_META
    -3104: OBJECT_HAS_LEASE,  # MMC_LEASE_NOT_EXPIRED
    -3106: TRANSFER_FAIL,  # MMC_LEASE_EXPIRED
    -3109: TRANSFER_FAIL,  # MMC_CHECKSUM_MISMATCH
    _lib.MMC_ERROR: TRANSFER_FAIL,
}

_PROTOCOLS = {"tcp": "host_tcp", "rdma": "host_rdma", "shm": "host_shm"}
_G2H, _H2G = 2, 3


def mooncake_code(rc):
    """The Mooncake ErrorCode for an mmc code (0 stays 0; an unknown error is INTERNAL_ERROR)."""
    if rc >= 0:
        return rc
    return _CODES.get(rc, INTERNAL_ERROR)


def _size(v, name):
    if isinstance(v, str):
        try:
            return mmc.parse_size(v)
        except ValueError:
            raise ValueError("%s: bad size %r" % (name, v)) from None
    return A.uint(v, name)


def _meta_url(addr):
    if not isinstance(addr, str):
        raise TypeError("master_server_addr: expected str, got %s" % type(addr).__name__)
    if "://" in addr:
        return addr
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError("master_server_addr %r is not host:port" % addr)
    return "tcp://" + addr


def load_config(path=None):
    """The JSON of $MOONCAKE_CONFIG_PATH (or path) as a dict for setup(dict); the file as Mooncake's docs show it."""
    path = path or os.environ.get("MOONCAKE_CONFIG_PATH") or os.environ.get("SGLANG_HICACHE_MOONCAKE_CONFIG_PATH")
    if not path:
        raise ValueError("no config: pass a path or set MOONCAKE_CONFIG_PATH")
    with open(path) as f:
        return json.load(f)


_libc = ctypes.CDLL(None)
_libc.posix_memalign.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t]
_libc.free.argtypes = [ctypes.c_void_p]


class MooncakeHostMemAllocator:
    """Mooncake's host allocator (SGLang's standalone-storage pool): page-aligned host memory from posix_memalign;
    alloc -> address (0 on failure), free -> 0, or -1 for an address it did not hand out."""

    def __init__(self):
        self._live = set()

    def alloc(self, size):
        n = A.uint(size, "size")
        p = ctypes.c_void_p()
        if n == 0 or _libc.posix_memalign(ctypes.byref(p), 4096, n) != 0:
            return 0
        self._live.add(p.value)
        return p.value

    def free(self, ptr):
        if ptr not in self._live:
            return -1
        self._live.discard(ptr)
        _libc.free(ptr)
        return 0


class ReplicateConfig:
    """Mooncake's ReplicateConfig. mmc honours replica_num (1..8); see the module docstring for the rest."""
    __slots__ = ("replica_num", "with_soft_pin", "with_hard_pin", "preferred_segments", "preferred_segment",
                 "prefer_alloc_in_same_node", "nof_replica_num", "dfs_replica_num", "soft_pin_action")

    def __init__(self):
        self.replica_num = 1
        self.with_soft_pin = False
        self.with_hard_pin = False
        self.preferred_segments = []
        self.preferred_segment = ""
        self.prefer_alloc_in_same_node = False
        self.nof_replica_num = 0
        self.dfs_replica_num = 0
        self.soft_pin_action = 0
        # no group_ids: mmc has no object groups, and SGLang falls back to plain batch_put_from without it

    def _to_mmc(self):
        """mmc.ReplicateConfig, or None for what mmc cannot do (hard pin, DFS replicas, replica_num out of range)."""
        if self.with_hard_pin or self.dfs_replica_num or self.nof_replica_num:
            return None
        n = A.uint(self.replica_num, "replica_num", 0xFFFF)
        if n < 1 or n > _lib.REPLICA_MAX:
            return None
        rc = mmc.ReplicateConfig()
        rc.replicaNum = n
        return rc

    def __str__(self):
        return "ReplicateConfig: { replica_num: %d, with_soft_pin: %s, with_hard_pin: %s, preferred_segment: %s }" % (
            self.replica_num, self.with_soft_pin, self.with_hard_pin, self.preferred_segment)

    __repr__ = __str__


_DEFAULT_RC = mmc.ReplicateConfig()


def _rc(config):
    if config is None:
        return _DEFAULT_RC
    if not isinstance(config, ReplicateConfig):
        raise TypeError("config: expected ReplicateConfig, got %s" % type(config).__name__)
    return config._to_mmc()


class MooncakeDistributedStore:
    """mooncake.store.MooncakeDistributedStore over one mmc store."""

    def __init__(self):
        self._d = None  # mmc.DistributedObjectStore after a good setup()
        self._regs = {}  # registered buffer start -> size: Mooncake unregisters by address, libmmc by (address, size)
        self.last_error = ""

    def _fail(self, msg, code=INVALID_PARAMS):
        self.last_error = msg
        return code

    # ---- life cycle
    def setup(self, local_hostname, metadata_server=None, global_segment_size=16 << 20,
              local_buffer_size=16 << 20, protocol="tcp", rdma_devices="", master_server_addr="127.0.0.1:50051",
              engine=None, enable_ssd_offload=False, ssd_offload_path="", tenant_id="default",
              enable_client_http_server=False, client_http_port=9300):
        """0, or INVALID_PARAMS (bad or unsupported argument) / the mmc setup failure as a Mooncake code."""
        if isinstance(local_hostname, dict):
            return self._setup_dict(local_hostname)
        if metadata_server is None:
            raise TypeError("setup() missing argument: 'metadata_server'")
        for name, v in (("local_hostname", local_hostname), ("metadata_server", metadata_server),
                        ("protocol", protocol), ("rdma_devices", rdma_devices), ("tenant_id", tenant_id)):
            if not isinstance(v, str):
                raise TypeError("%s: expected str, got %s" % (name, type(v).__name__))
        if self._d is not None:
            return self._fail("setup: already set up; close() first")
        try:
            lend = _size(global_segment_size, "global_segment_size")
            _size(local_buffer_size, "local_buffer_size")
            url = _meta_url(master_server_addr)
        except ValueError as e:
            return self._fail(str(e))
        proto = _PROTOCOLS.get(protocol.lower(), protocol)
        if not proto.startswith("host_") and proto != "auto":
            return self._fail("protocol %r: mmc speaks tcp, rdma, shm (or host_tcp / host_rdma / host_shm)" % protocol)
        if enable_ssd_offload:
            return self._fail("enable_ssd_offload: configure mmc's SSD tier (ock.mmc.local_service.ssd.*) instead")
        if tenant_id != "default":
            return self._fail("tenant_id %r: mmc has no tenants (only \"default\")" % tenant_id)
        if enable_client_http_server:
            return self._fail("enable_client_http_server: mmc has no client HTTP server")
        # engine: a Mooncake TransferEngine; mmc moves bytes with its own fabric, so it is not used
        cfg = mmc.LocalConfig()
        cfg.meta_service_url = url
        cfg.protocol = proto
        cfg.dram_size = lend
        d = mmc.DistributedObjectStore()
        rc = d.setup(cfg)
        if rc == 0:
            rc = d.init(0, lend > 0)
        if rc:
            d.close()
            return self._fail("setup: mmc answered %d (%s)" % (rc, _lib.strerror(rc)), mooncake_code(rc))
        self._d = d
        self.last_error = ""
        return 0

    def _setup_dict(self, c):
        """setup(dict): the keys of Mooncake's setup and of its JSON config (master_server_address, device_name)."""
        known = {"local_hostname", "metadata_server", "global_segment_size", "local_buffer_size", "protocol",
                 "rdma_devices", "device_name", "master_server_addr", "master_server_address", "enable_ssd_offload",
                 "ssd_offload_path", "tenant_id", "enable_client_http_server", "client_http_port"}
        kw = {k: v for k, v in c.items() if k in known}
        if "master_server_address" in kw:
            kw["master_server_addr"] = kw.pop("master_server_address")
        if "device_name" in kw:
            kw.setdefault("rdma_devices", kw.pop("device_name"))
            kw.pop("device_name", None)
        kw.setdefault("local_hostname", "localhost")
        kw.setdefault("metadata_server", "P2PHANDSHAKE")
        return self.setup(**kw)

    def setup_dummy(self, mem_pool_size, local_buffer_size, server_address):
        """Mooncake's standalone mode (a separate mooncake_client owns the pool): not supported; every mmc client
        talks to mmc-metaserver itself. Use setup() with global_segment_size 0 for a client that lends nothing."""
        return self._fail("setup_dummy: mmc has no standalone client process; use setup(..., global_segment_size=0)")

    def init_all(self, protocol, device_name, mount_segment_size=16 << 20):
        """Mooncake's legacy init: not supported (it needs the addresses setup() takes)."""
        return self._fail("init_all: use setup()")

    def close(self):
        d, self._d = self._d, None
        self._regs = {}
        if d is not None:
            d.close()
        return 0

    def _ready(self):
        if self._d is None:
            self.last_error = "not set up"
            return False
        return True

    def get_hostname(self):
        return os.uname().nodename

    # ---- buffers
    def register_buffer(self, buffer_ptr, size):
        if not self._ready():
            return INVALID_PARAMS
        rc = self._d.register_buffer(buffer_ptr, size)
        if rc == 0:
            self._regs[buffer_ptr] = size
        return mooncake_code(rc)

    def unregister_buffer(self, buffer_ptr):
        if not self._ready():
            return INVALID_PARAMS
        size = self._regs.get(A.uint(buffer_ptr, "buffer_ptr"))
        if size is None:
            return self._fail("unregister_buffer: %#x is not a registered buffer" % buffer_ptr)
        rc = self._d.unregister_buffer(buffer_ptr, size)
        if rc == 0:
            del self._regs[buffer_ptr]
        return mooncake_code(rc)

    # ---- bytes objects
    def put(self, key, value, config=None):
        if not self._ready():
            return INVALID_PARAMS
        k = A.key(key)
        rc = _rc(config)
        if rc is None:
            return self._fail("put: ReplicateConfig asks for what mmc cannot do")
        with A.Buffer(value, "value") as b:
            return mooncake_code(lib.mmc_put_from(self._d._s, k, b.addr, b.len, _H2G, ctypes.byref(rc.to_c())))

    def put_batch(self, keys, values, config=None):
        if not self._ready():
            return INVALID_PARAMS
        ks, vs = A.seq(keys, "keys"), A.seq(values, "values")
        if len(ks) != len(vs):
            return INVALID_PARAMS
        if not ks:
            return 0
        rc = _rc(config)
        if rc is None:
            return self._fail("put_batch: ReplicateConfig asks for what mmc cannot do")
        return mooncake_code(self._d.put_batch(ks, vs, rc))

    def get(self, key):
        if not self._ready():
            return b""
        return self._d.get(key)

    def get_batch(self, keys):
        if not self._ready():
            return [b""] * len(A.seq(keys, "keys"))
        return self._d.get_batch(keys)

    def get_buffer(self, key):
        """Mooncake returns a BufferHandle; here a memoryview of the bytes, or None when absent."""
        b = self.get(key)
        return memoryview(b) if b else None

    # ---- zero copy
    def put_from(self, key, buffer_ptr, size, config=None):
        if not self._ready():
            return INVALID_PARAMS
        rc = _rc(config)
        if rc is None:
            return self._fail("put_from: ReplicateConfig asks for what mmc cannot do")
        return mooncake_code(self._d.put_from(key, buffer_ptr, size, _H2G, rc))

    def get_into(self, key, buffer_ptr, size):
        """Bytes read, or a negative code."""
        return self.batch_get_into([key], [buffer_ptr], [size])[0]

    def _batch_put_start(self, call, keys, config):
        """A batch put's keys and replica config, or the per-key answer when it is refused before any call."""
        ks = A.seq(keys, "keys")
        if not self._ready():
            return ks, None, [INVALID_PARAMS] * len(ks)
        if not ks:
            return ks, None, []
        rc = _rc(config)
        if rc is None:
            self.last_error = "%s: ReplicateConfig asks for what mmc cannot do" % call
            return ks, None, [INVALID_PARAMS] * len(ks)
        return ks, rc, None

    def batch_put_from(self, keys, buffer_ptrs, sizes, config=None):
        ks, rc, refused = self._batch_put_start("batch_put_from", keys, config)
        if refused is not None:
            return refused
        ps, ns = A.seq(buffer_ptrs, "buffer_ptrs"), A.seq(sizes, "sizes")
        if len(ks) > BATCH_MAX or len(ps) != len(ks) or len(ns) != len(ks):
            return [INVALID_PARAMS] * len(ks)
        return [mooncake_code(r) for r in self._d.batch_put_from(ks, ps, ns, _H2G, rc)]

    def batch_get_into(self, keys, buffer_ptrs, sizes):
        """Per key the bytes read, or a negative code. A buffer larger than the object is read into in part, as
        Mooncake does (mmc wants the exact size: those keys are retried with the object's size)."""
        ks = A.keys(keys)
        if not self._ready():
            return [INVALID_PARAMS] * len(ks)
        if not ks:
            return []
        ps, ns = A.u64s(buffer_ptrs, "buffer_ptrs"), A.u64s(sizes, "sizes")
        if len(ps) != len(ks) or len(ns) != len(ks) or len(ks) > BATCH_MAX:
            return [INVALID_PARAMS] * len(ks)
        res = A.results(len(ks))
        lib.mmc_batch_get_into(self._d._s, A.key_array(ks), A.addr(ps), A.addr(ns), len(ks), _G2H, A.addr(res))
        out = [ns[i] if r == 0 else mooncake_code(r) for i, r in enumerate(res)]
        retry = [i for i, r in enumerate(res) if r == _lib.MMC_INVALID_PARAM]
        if retry:
            self._short_reads(ks, ps, ns, retry, out)
        return out

    def _short_reads(self, ks, ps, ns, idx, out):
        infos = (_lib.mmc_key_info * len(idx))()
        if lib.mmc_batch_get_key_info(self._d._s, A.key_array([ks[i] for i in idx]), len(idx), 0, infos):
            return
        for j, i in enumerate(idx):
            n = infos[j].size
            if not n:
                out[i] = OBJECT_NOT_FOUND
            elif n > ns[i]:
                out[i] = BUFFER_OVERFLOW
            elif ps[i]:
                r = lib.mmc_get_into(self._d._s, ks[i], ps[i], n, _G2H)
                out[i] = n if r == 0 else mooncake_code(r)

    def batch_put_from_multi_buffers(self, keys, all_buffer_ptrs, all_sizes, config=None):
        """One object per key gathered from several buffers (mmc's layer calls): 0 or a code per key."""
        ks, rc, refused = self._batch_put_start("batch_put_from_multi_buffers", keys, config)
        if refused is not None:
            return refused
        res = self._d.batch_put_from_layers(ks, all_buffer_ptrs, all_sizes, _H2G, rc)
        if len(res) != len(ks):
            return [INVALID_PARAMS] * len(ks)
        return [mooncake_code(r) for r in res]

    def batch_get_into_multi_buffers(self, keys, all_buffer_ptrs, all_sizes, prefer_alloc_in_same_node=False):
        """Per key the bytes read (the sum of its buffer sizes), or a negative code."""
        ks = A.seq(keys, "keys")
        if not self._ready():
            return [INVALID_PARAMS] * len(ks)
        if not ks:
            return []
        res = self._d.batch_get_into_layers(ks, all_buffer_ptrs, all_sizes, _G2H)
        if len(res) != len(ks):
            return [INVALID_PARAMS] * len(ks)
        sizes = A.seq(all_sizes, "all_sizes")
        return [sum(A.u64s(sizes[i], "all_sizes")) if r == 0 else mooncake_code(r) for i, r in enumerate(res)]

    # ---- queries and removal
    def is_exist(self, key):
        """1 / 0 / -1."""
        if not self._ready():
            return -1
        r = self._d.is_exist(key)
        return r if r in (0, 1) else -1

    def batch_is_exist(self, keys):
        ks = A.seq(keys, "keys")
        if not self._ready():
            return [-1] * len(ks)
        if not ks:
            return []
        if len(ks) > BATCH_MAX:
            return [-1] * len(ks)
        return [r if r in (0, 1) else -1 for r in self._d.batch_is_exist(ks)]

    def get_size(self, key):
        """The object's size in bytes, or a negative code (OBJECT_NOT_FOUND)."""
        if not self._ready():
            return INVALID_PARAMS
        k = A.key(key)
        info = _lib.mmc_key_info()
        rc = lib.mmc_get_key_info(self._d._s, k, 0, ctypes.byref(info))
        if rc:
            return mooncake_code(rc)
        return info.size if info.size else OBJECT_NOT_FOUND

    def remove(self, key):
        if not self._ready():
            return INVALID_PARAMS
        return mooncake_code(self._d.remove(key))

    def batch_remove(self, keys, force=False):
        """0 or a code per key. force: mmc has no pins to override; a leased object still answers OBJECT_HAS_LEASE."""
        A.boolean(force, "force")
        ks = A.seq(keys, "keys")
        if not self._ready():
            return [INVALID_PARAMS] * len(ks)
        if not ks:
            return []
        if len(ks) > BATCH_MAX:
            return [INVALID_PARAMS] * len(ks)
        return [mooncake_code(r) for r in self._d.remove_batch(ks)]

    def remove_by_regex(self, regex_pattern):
        """How many objects were removed, or a negative code (INVALID_PARAMS for a bad pattern; INTERNAL_ERROR with
        a libmmc that lacks mmc_remove_by_regex)."""
        if not isinstance(regex_pattern, str):
            raise TypeError("regex_pattern: expected str, got %s" % type(regex_pattern).__name__)
        if not self._ready():
            return INVALID_PARAMS
        if not _lib.has("mmc_remove_by_regex"):
            return self._fail("remove_by_regex: this libmmc has no mmc_remove_by_regex", INTERNAL_ERROR)
        return mooncake_code(self._d.remove_by_regex_count(regex_pattern))

    def remove_all(self):
        """How many objects were removed, or a negative code (INTERNAL_ERROR without mmc_remove_all)."""
        if not self._ready():
            return INVALID_PARAMS
        if not _lib.has("mmc_remove_all"):
            return self._fail("remove_all: this libmmc has no mmc_remove_all", INTERNAL_ERROR)
        return mooncake_code(self._d.remove_all_count())

    # ---- tensors (torch CPU tensors; stored as Mooncake's TensorMetadata header + the bytes)
    def put_tensor(self, key, tensor):
        from . import _tensor
        try:
            blob = _tensor.pack(tensor)
        except (TypeError, ValueError) as e:
            return self._fail("put_tensor: %s" % e)
        return self.put(key, blob)

    def get_tensor(self, key):
        from . import _tensor
        b = self.get(key)
        return _tensor.unpack(b) if b else None

    def batch_put_tensor(self, keys, tensors_list):
        return [self.put_tensor(k, t) for k, t in zip(A.seq(keys, "keys"), A.seq(tensors_list, "tensors_list"))]

    def batch_get_tensor(self, keys):
        return [self.get_tensor(k) for k in A.seq(keys, "keys")]

    def pub_tensor(self, key, tensor, config=None):
        from . import _tensor
        try:
            blob = _tensor.pack(tensor)
        except (TypeError, ValueError) as e:
            return self._fail("pub_tensor: %s" % e)
        return self.put(key, blob, config)

    def get_tensor_into(self, key, buffer_ptr, size):
        from . import _tensor
        n = self.get_into(key, buffer_ptr, size)
        return _tensor.from_address(buffer_ptr, n) if n > 0 else None

    def batch_get_tensor_into(self, keys, buffer_ptrs, sizes):
        from . import _tensor
        ns = self.batch_get_into(keys, buffer_ptrs, sizes)
        ps = A.seq(buffer_ptrs, "buffer_ptrs")
        return [_tensor.from_address(p, n) if n > 0 else None for p, n in zip(ps, ns)]

    # tensor parallelism: shard i of a tensor lives under "{key}_tp_{i}" (Mooncake's key names)
    def put_tensor_with_tp(self, key, tensor, tp_rank=0, tp_size=1, split_dim=0):
        if tp_size <= 1:
            return self.put_tensor(key, tensor)
        for i, part in enumerate(tensor.chunk(tp_size, split_dim)):
            rc = self.put_tensor("%s_tp_%d" % (key, i), part.contiguous())
            if rc:
                return rc
        return 0

    def get_tensor_with_tp(self, key, tp_rank=0, tp_size=1, split_dim=0):
        return self.get_tensor(key if tp_size <= 1 else "%s_tp_%d" % (key, tp_rank))

    def batch_put_tensor_with_tp(self, base_keys, tensors_list, tp_rank=0, tp_size=1, split_dim=0):
        return [self.put_tensor_with_tp(k, t, tp_rank, tp_size, split_dim)
                for k, t in zip(A.seq(base_keys, "base_keys"), A.seq(tensors_list, "tensors_list"))]

    def batch_get_tensor_with_tp(self, base_keys, tp_rank=0, tp_size=1):
        return [self.get_tensor_with_tp(k, tp_rank, tp_size) for k in A.seq(base_keys, "base_keys")]
