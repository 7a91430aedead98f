"""mooncake.store on mmc: MooncakeDistributedStore, ReplicateConfig, BufferHandle and the replica descriptors with
Mooncake's signatures and return conventions (UPSTREAM below), over mmc.DistributedObjectStore.

- Codes are Mooncake's ErrorCode values (0 ok, negative errors); get calls return byte counts.
- setup() maps master_server_addr "host:port" to mmc-metaserver's tcp://host:port and global_segment_size to the
  DRAM this process lends; metadata_server, local_hostname, local_buffer_size and rdma_devices are accepted and
  not needed (mmc has no transfer-engine metadata service and picks its NICs itself).
- What mmc cannot honour is refused with INVALID_PARAMS and one log line (logger "mooncake.store") naming the
  feature, never claimed: hard pin, DFS and NoF replicas, the standalone client (setup_dummy), replica copy/move
  tasks.
- setup(enable_ssd_offload=True, ssd_offload_path=DIR) gives this process's local service an SSD tier in DIR, a
  file of its own there (_ssd.py): what is evicted from the DRAM it lends goes there and is read back from there. Soft pin, preferred segments and group_ids are
  placement and eviction hints mmc does not follow: the objects are stored and evicted one by one (logged once).
- setup(tenant_id=X) connects as mmc tenant X (ock.mmc.client.tenant) with the secret in $MMC_TENANT_TOKEN_FILE
  ("{tenant}" in it stands for X): every key of the store is in X's namespace. Without that file, setup refuses
  with INVALID_PARAMS; a server without tenant X refuses the secret (the setup's code says so).
- enable_client_http_server starts a small HTTP server with the client's counters (/metrics, /metrics/summary,
  /health) on client_http_port; when it cannot listen, setup still succeeds (logged).
- mmc's remove never waits for readers (a leased object is unlinked at once, its memory freed when the lease
  ends), so force=False behaves as Mooncake's force=True.
- The session calls (Mooncake's layer-wise API: batch_put_session_*, batch_get_session_*, the *_ranges calls) are
  _sessions.py's, over libmmc's GVA flow.
"""
import ctypes
import json
import logging
import os

import mmc
from mmc import _args as A
from mmc import _lib
from mmc._lib import lib, BATCH_MAX, LAYERS_MAX

from . import _metrics, _ssd
from ._batch import in_chunks as _in_chunks
from ._codes import (OK,  # Mooncake's codes, re-exported as mooncake.store.OK ...
                     INTERNAL_ERROR, BUFFER_OVERFLOW, NO_AVAILABLE_HANDLE, INVALID_PARAMS, OBJECT_NOT_FOUND,
                     OBJECT_ALREADY_EXISTS, OBJECT_HAS_LEASE, LEASE_EXPIRED, TRANSFER_FAIL, RPC_FAIL, mooncake_code)
from ._replica import (BufferHandle, Descriptor, DiskDescriptor, MemoryDescriptor, ReplicaDescriptor,
                       ReplicaStatus, replicas)
from ._sessions import Sessions, SessionTable
from ._tensor_calls import TensorCalls

__all__ = ["MooncakeDistributedStore", "ReplicateConfig", "MooncakeHostMemAllocator", "BufferHandle",
           "ReplicaDescriptor", "ReplicaStatus", "Descriptor", "MemoryDescriptor", "DiskDescriptor", "load_config",
           "bind_to_numa_node"]

# What this module follows: kvcache-ai/Mooncake mooncake-integration/store/store_py.cpp at d8037694 (method names,
# arguments, defaults, return values) and integration_utils.h's TensorMetadata version 1; setup's tenant_id,
# enable_client_http_server and client_http_port and ReplicateConfig's group_ids, nof_replica_num,
# dfs_replica_num and soft_pin_action as of 3b5a594.
UPSTREAM = "kvcache-ai/Mooncake d8037694 (store_py.cpp), 3b5a594 (setup and ReplicateConfig fields)"

log = logging.getLogger("mooncake.store")

# health_check()
HC_OK, HC_NOT_INITIALIZED, HC_MASTER_UNREACHABLE = 0, 1, 2

_UNREACHABLE = (_lib.MMC_TIMEOUT, _lib.MMC_NOT_CONNECTED_META, _lib.MMC_NOT_CONNECTED_LOCAL)
_MISSING = (_lib.MMC_OBJECT_NOT_EXISTS, _lib.MMC_UNMATCHED_KEY)

_PROTOCOLS = {"tcp": "host_tcp", "rdma": "host_rdma", "shm": "host_shm"}
_G2H, _H2G = 2, 3
_noted = set()


def unsupported(feature, why):
    """Logs that mmc cannot honour feature and answers INVALID_PARAMS."""
    log.warning("mooncake.store: %s is not supported by mmc: %s", feature, why)
    return INVALID_PARAMS


def _note_once(feature, why):
    if feature not in _noted:
        _noted.add(feature)
        log.info("mooncake.store: %s: %s", feature, why)


def _size(v, name):
    if isinstance(v, str):
        try:
            return mmc.parse_size(v)
        except ValueError:
            raise ValueError("%s: bad size %r" % (name, v)) from None
    return A.uint(v, name)


def _tenant_token_file(tenant_id):
    """The file of tenant_id's secret ("" for the default tenant): $MMC_TENANT_TOKEN_FILE, "{tenant}" in it
    replaced by the tenant id. Raises ValueError naming what is missing: a tenant is named by its secret, never by
    the id alone."""
    if tenant_id == "default":
        return ""
    template = os.environ.get("MMC_TENANT_TOKEN_FILE", "")
    path = template.replace("{tenant}", tenant_id)
    if not template or not os.path.isfile(path):
        raise ValueError("setup(tenant_id=%r): no secret for this tenant: set $MMC_TENANT_TOKEN_FILE to the file "
                         "holding it (\"{tenant}\" in it stands for the tenant id)%s" %
                         (tenant_id, "; %s is not a file" % path if template else ""))
    return path


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
        try:
            self._live.remove(ptr)  # one step: two threads freeing one pointer cannot both get past it
        except KeyError:
            return -1
        _libc.free(ptr)
        return 0


class ReplicateConfig:
    """Mooncake's ReplicateConfig. mmc honours replica_num (1..8); see the module docstring for the rest."""
    __slots__ = ("replica_num", "with_soft_pin", "with_hard_pin", "preferred_segments", "preferred_segment",
                 "prefer_alloc_in_same_node", "nof_replica_num", "dfs_replica_num", "soft_pin_action", "group_ids")

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
        self.group_ids = []

    def _refusal(self):
        """(feature, why) of what mmc cannot do, or None."""
        if self.with_hard_pin:
            return "with_hard_pin", "mmc evicts every object under memory pressure; there is no hard pin"
        if self.dfs_replica_num:
            return "dfs_replica_num", "mmc has no DFS tier (its SSD tier is configured per local service)"
        if self.nof_replica_num:
            return "nof_replica_num", "mmc has no NVMe-oF tier"
        n = A.uint(self.replica_num, "replica_num", 0xFFFF)
        if n < 1 or n > _lib.REPLICA_MAX:
            return "replica_num=%d" % n, "mmc keeps 1 to %d replicas" % _lib.REPLICA_MAX
        return None

    def _to_mmc(self, call):
        """mmc.ReplicateConfig, or None (logged) for what mmc cannot do."""
        refusal = self._refusal()
        if refusal:
            unsupported("%s (%s)" % (refusal[0], call), refusal[1])
            return None
        if self.with_soft_pin or self.preferred_segment or self.preferred_segments:
            _note_once("soft pin / preferred segments", "placement hints mmc does not follow; objects are stored "
                       "and evicted like any other")
        rc = mmc.ReplicateConfig()
        rc.replicaNum = self.replica_num
        return rc

    def __str__(self):
        return "ReplicateConfig: { replica_num: %d, with_soft_pin: %s, with_hard_pin: %s, preferred_segment: %s }" % (
            self.replica_num, self.with_soft_pin, self.with_hard_pin, self.preferred_segment)

    __repr__ = __str__


_DEFAULT_RC = mmc.ReplicateConfig()


def _rc(config, call):
    if config is None:
        return _DEFAULT_RC
    if not isinstance(config, ReplicateConfig):
        raise TypeError("config: expected ReplicateConfig, got %s" % type(config).__name__)
    return config._to_mmc(call)


def _only_good(good, call, *cols):
    """call(*cols) over the entries where good holds, INVALID_PARAMS for the others, in order."""
    out = [INVALID_PARAMS] * len(good)
    idx = [i for i, g in enumerate(good) if g]
    if idx:
        for i, r in zip(idx, call(*[[c[i] for i in idx] for c in cols])):
            out[i] = r
    return out


def _layers_good(all_ptrs, all_sizes):
    """Per key whether its buffers can go in one layer call: 1 to LAYERS_MAX of them, a size for each, none NULL
    or empty (libmmc refuses the whole call over one that cannot)."""
    out = []
    for p, n in zip(all_ptrs, all_sizes):
        try:
            out.append(bool(0 < len(p) <= LAYERS_MAX and len(p) == len(n) and all(p) and all(n)))
        except TypeError:
            out.append(True)  # not sequences: the call says what is wrong with them
    return out


def _nonempty(value, name):
    """Whether value holds bytes to put (TypeError when it is not a buffer at all)."""
    with A.Buffer(value, name) as b:
        return b.len > 0


def _groups_ok(config, n):
    """False when config's group_ids are given but not one per key (logged). mmc has no object groups."""
    ids = getattr(config, "group_ids", None) or []
    if not ids:
        return True
    if len(ids) != n:
        log.warning("mooncake.store: group_ids: %d ids for %d keys", len(ids), n)
        return False
    _note_once("group_ids", "mmc has no object groups; each object of a group is stored and evicted on its own")
    return True


def _node_cpus(node):
    """The CPUs of NUMA node `node` (its sysfs cpulist, "0-3,8-11"), or None when there is no such node."""
    try:
        with open("/sys/devices/system/node/node%d/cpulist" % node) as f:
            text = f.read().strip()
    except OSError:
        return None
    cpus = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def bind_to_numa_node(node):
    """Mooncake's helper (LMCache calls it before setup, for the GPU's node): the calling thread runs on that NUMA
    node's CPUs from now on, so the memory it touches first is the node's. A node this host lacks is logged and
    left alone, as is a kernel that refuses the affinity."""
    cpus = _node_cpus(A.uint(node, "node", 1 << 16))
    if not cpus:
        log.warning("bind_to_numa_node(%d): this host has no such NUMA node (or it has no CPUs): not bound", node)
        return
    try:
        os.sched_setaffinity(0, cpus)
    except OSError as e:
        log.warning("bind_to_numa_node(%d): %s: not bound", node, e)


class MooncakeDistributedStore(TensorCalls, Sessions):
    """mooncake.store.MooncakeDistributedStore over one mmc store."""

    def __init__(self):
        # mmc.DistributedObjectStore after a good setup(); close() leaves the torn-down one here (its calls fail
        # with a code), so a thread past _ready() when another closes still has a store to call
        self._d = None
        self._up = False
        self._closed = []  # the torn-down ones, freed with this object (close())
        self._regs = {}  # registered buffer start -> size: Mooncake unregisters by address, libmmc by (address, size)
        self._hostname = None
        self._ssd_claim = None  # the SSD tier file this store claimed (_ssd.py)
        self._http = None  # the client HTTP server, when enable_client_http_server
        self.counters = _metrics.Counters()
        self._sessions = SessionTable()  # the put and get sessions open (_sessions.py)
        self.last_error = ""

    def _fail(self, msg, code=INVALID_PARAMS):
        self.last_error = msg
        log.warning("mooncake.store: %s", msg)
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
        tenant_id = "default" if tenant_id in (None, "") else tenant_id
        for name, v in (("local_hostname", local_hostname), ("metadata_server", metadata_server),
                        ("protocol", protocol), ("rdma_devices", rdma_devices), ("tenant_id", tenant_id)):
            if not isinstance(v, str):
                raise TypeError("%s: expected str, got %s" % (name, type(v).__name__))
        if self._up:
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
        try:
            secret = _tenant_token_file(tenant_id)
            ssd = _ssd.directory(ssd_offload_path) if A.boolean(enable_ssd_offload, "enable_ssd_offload") else None
        except ValueError as e:
            return self._fail(str(e))
        # engine: a Mooncake TransferEngine; mmc moves bytes with its own fabric, so it is not used
        rc = self._open_with_ssd(url, proto, lend, tenant_id, secret, ssd)
        if rc:
            return rc
        self._hostname = local_hostname
        if A.boolean(enable_client_http_server, "enable_client_http_server"):
            self._http = _metrics.start(self.counters, A.uint(client_http_port, "client_http_port", 0xFFFF))
        return 0

    def _open_with_ssd(self, url, proto, lend, tenant_id, secret, ssd):
        """_open, with an SSD tier in directory ssd (None: none): the first of its files this process can claim,
        or the next when a service that does not claim (libmmc's own) took it meanwhile."""
        if ssd is None:
            return self._open(url, proto, lend, tenant_id, secret)
        if not lend:
            return self._fail("enable_ssd_offload: the SSD tier spills the memory this process lends, and "
                              "global_segment_size is 0")
        try:
            for c in _ssd.claims(ssd):
                rc = self._open(url, proto, lend, tenant_id, secret, c.path, c.size)
                if rc == 0:
                    self._ssd_claim = c
                    log.info("mooncake.store: SSD offload to %s (%d bytes)", c.path, c.size)
                    return 0
                c.release()
                if not _ssd.held(c.path):
                    return rc
        except ValueError as e:
            return self._fail(str(e))
        return self._fail("enable_ssd_offload: every SSD tier file in %s is held by a running service" % ssd)

    def _open(self, url, proto, lend, tenant_id="default", secret="", ssd_path=None, ssd_size=0):
        cfg = mmc.LocalConfig()
        cfg.meta_service_url = url
        cfg.protocol = proto
        cfg.dram_size = lend
        if ssd_path:
            cfg.ssd_path = ssd_path
            cfg.ssd_size = ssd_size
        if tenant_id != "default":
            cfg.tenant = tenant_id
            cfg.auth_token_file = secret
        d = mmc.DistributedObjectStore()
        rc = d.setup(cfg)
        if rc == 0:
            rc = d.init(0, lend > 0)
        if rc:
            d.close()
            return self._fail("setup: mmc answered %d (%s)" % (rc, _lib.strerror(rc)), mooncake_code(rc))
        self._d, self._up = d, True
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
        # LMCache's connector gives every value as a string, and a JSON config may
        for flag in ("enable_ssd_offload", "enable_client_http_server"):
            if isinstance(kw.get(flag), str):
                kw[flag] = kw[flag].strip().lower() in ("1", "true", "yes", "on")
        if isinstance(kw.get("client_http_port"), str) and kw["client_http_port"].strip().isdigit():
            kw["client_http_port"] = int(kw["client_http_port"])
        kw.setdefault("local_hostname", "localhost")
        kw.setdefault("metadata_server", "P2PHANDSHAKE")
        return self.setup(**kw)

    def setup_dummy(self, mem_pool_size, local_buffer_size, server_address):
        """Mooncake's standalone mode (a separate mooncake_client owns the pool): not supported; every mmc client
        talks to mmc-metaserver itself. Use setup() with global_segment_size 0 for a client that lends nothing."""
        self.last_error = "setup_dummy"
        return unsupported("setup_dummy (a standalone mooncake_client)", "every mmc client talks to mmc-metaserver "
                           "itself; use setup(..., global_segment_size=0)")

    def init_all(self, protocol, device_name, mount_segment_size=16 << 20):
        """Mooncake's legacy init: not supported (it needs the addresses setup() takes)."""
        self.last_error = "init_all"
        return unsupported("init_all", "use setup()")

    def alloc_from_mem_pool(self, size):
        """The standalone client's pool allocator: 0, there is no standalone client (see setup_dummy)."""
        unsupported("alloc_from_mem_pool", "there is no standalone client (setup_dummy)")
        return 0

    def close(self):
        d = self._d if self._up else None
        self._up = False
        srv, self._http = self._http, None
        self._regs = {}
        self._sessions.clear()  # their allocations and leases end with the store's
        if srv is not None:
            srv.stop()
        if d is not None:
            d.close()  # mmc_teardown: waits for other threads' calls; later ones fail
            if self._ssd_claim is not None:  # the service has let go of its SSD file: another rank may take it
                self._ssd_claim.release()
                self._ssd_claim = None
            # kept, not collected: a thread that read d's store pointer before close() may not have made its call
            # yet, and mmc_destroy would free the store under it (a torn-down store is a few kilobytes)
            self._closed.append(d)
        return 0

    def _ready(self):
        if not self._up:
            self.last_error = "not set up"
            return False
        return True

    def health_check(self):
        """0 healthy, 1 not set up (or closed), 2 mmc-metaserver unreachable."""
        if not self._up:
            return HC_NOT_INITIALIZED
        rc = lib.mmc_is_exist(self._d._s, b"mooncake-health-check")
        return HC_MASTER_UNREACHABLE if rc in _UNREACHABLE else HC_OK

    def record_prefetched_tokens(self, tokens):
        """SGLang's direct linker reports the tokens each successful load brought in: counted for /metrics
        (mooncake_client_prefetched_tokens_total)."""
        self.counters.add_prefetched_tokens(A.uint(tokens, "tokens"))

    def get_hostname(self):
        """The local_hostname given to setup() (Mooncake's segment name), else this host's name."""
        return self._hostname or os.uname().nodename

    # ---- buffers
    def register_buffer(self, buffer_ptr, size):
        """0 or a code. An address registered already: 0 again for its size; for another size the registration is
        replaced (memory freed and allocated again at the address). Mooncake unregisters by address, so a second
        registration beside the first could never be undone."""
        if not self._ready():
            return INVALID_PARAMS
        have = self._regs.get(A.uint(buffer_ptr, "buffer_ptr"))
        if have is not None:
            if have == A.uint(size, "size"):
                return 0
            self._d.unregister_buffer(buffer_ptr, have)
            del self._regs[buffer_ptr]
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
        rc = _rc(config, "put")
        if rc is None:
            return INVALID_PARAMS
        with A.Buffer(value, "value") as b:
            r = mooncake_code(lib.mmc_put_from(self._d._s, k, b.addr, b.len, _H2G, ctypes.byref(rc.to_c())))
            self.counters.add("put", 1, r != 0, b.len if r == 0 else 0)
        return r

    def put_parts(self, key, *parts, config=None):
        """One object of the parts (buffer-protocol objects) end to end, gathered without a copy: 0 or a code."""
        if not self._ready():
            return INVALID_PARAMS
        k = A.key(key)
        rc = _rc(config, "put_parts")
        if rc is None:
            return INVALID_PARAMS
        bufs = [A.Buffer(p, "parts[%d]" % i) for i, p in enumerate(parts)]
        try:
            live = [b for b in bufs if b.len]
            if not live:
                return self._fail("put_parts: no bytes to put")
            r = self._put_gathered(k, [b.addr for b in live], [b.len for b in live], rc)
            self.counters.add("put", 1, r != 0, sum(b.len for b in live) if r == 0 else 0)
            return r
        finally:
            for b in bufs:
                b.release()

    def _put_gathered(self, k, ptrs, sizes, rc):
        """One object from several buffers (mmc's layer put); more buffers than a layer call takes are joined."""
        if len(ptrs) > LAYERS_MAX:
            joined = b"".join(ctypes.string_at(p, n) for p, n in zip(ptrs, sizes))
            with A.Buffer(joined) as b:
                return mooncake_code(lib.mmc_put_from(self._d._s, k, b.addr, b.len, _H2G, ctypes.byref(rc.to_c())))
        ps, ns = A.u64s(ptrs, "parts"), A.u64s(sizes, "sizes")
        return mooncake_code(lib.mmc_put_from_layers(self._d._s, k, A.addr(ps), A.addr(ns), len(ps), _H2G,
                                                     ctypes.byref(rc.to_c())))

    def put_batch(self, keys, values, config=None):
        if not self._ready():
            return INVALID_PARAMS
        ks, vs = A.seq(keys, "keys"), A.seq(values, "values")
        if len(ks) != len(vs):
            return INVALID_PARAMS
        if not ks:
            return 0
        if len(ks) > BATCH_MAX:  # 0, or the first failing chunk's code (every chunk is sent)
            return next((r for r in _in_chunks(lambda k, v: [self.put_batch(k, v, config)], len(ks), ks, vs) if r), 0)
        rc = _rc(config, "put_batch")
        if rc is None:
            return INVALID_PARAMS
        r = mooncake_code(self._d.put_batch(ks, vs, rc))
        self.counters.add("put", len(ks), len(ks) if r else 0)
        return r

    def get(self, key):
        h = self.get_buffer(key)
        return bytes(h) if h is not None else b""

    def get_batch(self, keys):
        return [bytes(h) if h is not None else b"" for h in self.batch_get_buffer(keys)]

    def get_buffer(self, key):
        """The object's bytes as a BufferHandle, or None when absent (or on an error)."""
        return self.batch_get_buffer([key])[0]

    def batch_get_buffer(self, keys):
        """Per key a BufferHandle of the object's bytes, or None when it is absent or the read failed."""
        names = A.seq(keys, "keys")
        if len(names) > BATCH_MAX and self._ready():
            return _in_chunks(self.batch_get_buffer, len(names), names)
        ks = A.keys(names)
        if not self._ready() or len(ks) > BATCH_MAX:
            return [None] * len(ks)
        if not ks:
            return []
        infos = (_lib.mmc_key_info * len(ks))()
        if lib.mmc_batch_get_key_info(self._d._s, A.key_array(ks), len(ks), 0, infos):
            self.counters.add("get", len(ks), len(ks))
            return [None] * len(ks)
        out = [None] * len(ks)
        want = [i for i in range(len(ks)) if infos[i].size]
        if want:
            handles = [BufferHandle(infos[i].size) for i in want]
            ps = A.u64s([h.ptr() for h in handles], "buffers")
            ns = A.u64s([len(h) for h in handles], "sizes")
            res = A.results(len(want))
            lib.mmc_batch_get_into(self._d._s, A.key_array([ks[i] for i in want]), A.addr(ps), A.addr(ns),
                                   len(want), _G2H, A.addr(res))
            for j, i in enumerate(want):
                if res[j] == 0:
                    out[i] = handles[j]
        got = [h for h in out if h is not None]
        self.counters.add("get", len(ks), len(ks) - len(got), sum(len(h) for h in got))
        return out

    # ---- zero copy
    def put_from(self, key, buffer_ptr, size, config=None):
        if not self._ready():
            return INVALID_PARAMS
        rc = _rc(config, "put_from")
        if rc is None:
            return INVALID_PARAMS
        r = mooncake_code(self._d.put_from(key, buffer_ptr, size, _H2G, rc))
        self.counters.add("put", 1, r != 0, size if r == 0 else 0)
        return r

    def put_from_with_metadata(self, key, buffer_ptr, metadata_buffer_ptr, size, metadata_size, config=None):
        """One object: metadata_size bytes at metadata_buffer_ptr, then size bytes at buffer_ptr (Mooncake's order).
        size 0: nothing is stored and the answer is 0, as Mooncake's."""
        if not self._ready():
            return INVALID_PARAMS
        k = A.key(key)
        p, n = A.uint(buffer_ptr, "buffer_ptr"), A.uint(size, "size")
        mp, mn = A.uint(metadata_buffer_ptr, "metadata_buffer_ptr"), A.uint(metadata_size, "metadata_size")
        rc = _rc(config, "put_from_with_metadata")
        if rc is None:
            return INVALID_PARAMS
        if n == 0:
            return 0
        parts = [(mp, mn), (p, n)] if mn else [(p, n)]
        r = self._put_gathered(k, [a for a, _ in parts], [b for _, b in parts], rc)
        self.counters.add("put", 1, r != 0, n + mn if r == 0 else 0)
        return r

    def get_into_ranges(self, buffer_ptrs, all_keys, all_dst_offsets, all_src_offsets, all_sizes,
                        allow_staging=True):
        """Per destination buffer, per key, per fragment: the bytes read from the object at src_offset into
        buffer + dst_offset, or a negative code (OBJECT_NOT_FOUND, INVALID_PARAMS for a range outside the object).
        mmc has no partial read on the wire yet: each object is read whole (one batch per buffer) and its ranges
        copied."""
        cols = [A.seq(c, name) for c, name in ((all_keys, "all_keys"), (all_dst_offsets, "all_dst_offsets"),
                                                 (all_src_offsets, "all_src_offsets"), (all_sizes, "all_sizes"))]
        ptrs = A.seq(buffer_ptrs, "buffer_ptrs")
        if any(len(c) != len(ptrs) for c in cols):  # zip would drop what does not pair up, unanswered
            return [[[INVALID_PARAMS] for _ in keys] for keys in cols[0]]
        out = []
        for ptr, keys, dsts, srcs, sizes in zip(ptrs, *cols):
            keys, dsts, srcs, sizes = list(keys), list(dsts), list(srcs), list(sizes)
            if not len(keys) == len(dsts) == len(srcs) == len(sizes):
                out.append([[INVALID_PARAMS] for _ in keys])
                continue
            handles = self.batch_get_buffer(keys) if keys else []
            out.append([self._copy_ranges(int(ptr), h, d, s, n) for h, d, s, n in zip(handles, dsts, srcs, sizes)])
        return out

    @staticmethod
    def _copy_ranges(ptr, handle, dsts, srcs, sizes):
        if not len(dsts) == len(srcs) == len(sizes):
            return [INVALID_PARAMS] * max(len(dsts), len(srcs), len(sizes))
        if handle is None:
            return [OBJECT_NOT_FOUND] * len(sizes)
        got = []
        for d, s, n in zip(dsts, srcs, sizes):
            if d < 0 or s < 0 or n < 0 or s + n > handle.size():
                got.append(INVALID_PARAMS)
                continue
            ctypes.memmove(ptr + d, handle.ptr() + s, n)
            got.append(n)
        return got

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
        rc = _rc(config, call)
        if rc is None or not _groups_ok(config, len(ks)):
            self.last_error = "%s: the ReplicateConfig asks for what mmc cannot do" % call
            return ks, None, [INVALID_PARAMS] * len(ks)
        return ks, rc, None

    def _tally_puts(self, res, sizes):
        ok = [n for r, n in zip(res, sizes) if r == 0]
        self.counters.add("put", len(res), len(res) - len(ok), sum(ok))

    def batch_put_from(self, keys, buffer_ptrs, sizes, config=None):
        ks, rc, refused = self._batch_put_start("batch_put_from", keys, config)
        if refused is not None:
            return refused
        ps, ns = A.seq(buffer_ptrs, "buffer_ptrs"), A.seq(sizes, "sizes")
        if len(ps) != len(ks) or len(ns) != len(ks):
            return [INVALID_PARAMS] * len(ks)
        return self._put_from_checked(ks, ps, ns, rc)

    def _put_from_checked(self, ks, ps, ns, rc):
        """batch_put_from once its config was checked (rc: mmc's; group_ids were checked for the whole batch)."""
        if len(ks) > BATCH_MAX:
            return _in_chunks(lambda k, p, n: self._put_from_checked(k, p, n, rc), len(ks), ks, ps, ns)
        good = [bool(p and n) for p, n in zip(ps, ns)]
        if not all(good):  # libmmc refuses a whole call over one NULL buffer or empty size; Mooncake that key
            return _only_good(good, lambda k, p, n: self._put_from_checked(k, p, n, rc), ks, ps, ns)
        res = [mooncake_code(r) for r in self._d.batch_put_from(ks, ps, ns, _H2G, rc)]
        self._tally_puts(res, ns)
        return res

    def batch_get_into(self, keys, buffer_ptrs, sizes):
        """Per key the bytes read, or a negative code. A buffer larger than the object is read into in part, as
        Mooncake does (mmc wants the exact size: those keys are retried with the object's size)."""
        ks = A.keys(keys)
        if not self._ready():
            return [INVALID_PARAMS] * len(ks)
        if not ks:
            return []
        ps, ns = A.u64s(buffer_ptrs, "buffer_ptrs"), A.u64s(sizes, "sizes")
        if len(ps) != len(ks) or len(ns) != len(ks):
            return [INVALID_PARAMS] * len(ks)
        if len(ks) > BATCH_MAX:
            return _in_chunks(self.batch_get_into, len(ks), ks, ps, ns)
        res = A.results(len(ks))
        lib.mmc_batch_get_into(self._d._s, A.key_array(ks), A.addr(ps), A.addr(ns), len(ks), _G2H, A.addr(res))
        out = [ns[i] if r == 0 else mooncake_code(r) for i, r in enumerate(res)]
        retry = [i for i, r in enumerate(res) if r == _lib.MMC_INVALID_PARAM]
        if retry:
            self._short_reads(ks, ps, ns, retry, out)
        self._tally_gets(out)
        return out

    def _tally_gets(self, out):
        ok = [n for n in out if n >= 0]
        self.counters.add("get", len(out), len(out) - len(ok), sum(ok))

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
        return self._put_layers_checked(ks, all_buffer_ptrs, all_sizes, rc)

    def _put_layers_checked(self, ks, all_buffer_ptrs, all_sizes, rc):
        """batch_put_from_multi_buffers once its config was checked (as _put_from_checked)."""
        if len(ks) > BATCH_MAX:
            return _in_chunks(lambda k, p, n: self._put_layers_checked(k, p, n, rc), len(ks), ks,
                              A.seq(all_buffer_ptrs, "all_buffer_ptrs"), A.seq(all_sizes, "all_sizes"))
        pp, ss = A.seq(all_buffer_ptrs, "all_buffer_ptrs"), A.seq(all_sizes, "all_sizes")
        good = _layers_good(pp, ss)
        if len(pp) == len(ks) == len(ss) and not all(good):
            return _only_good(good, lambda k, p, n: self._put_layers_checked(k, p, n, rc), ks, pp, ss)
        res = self._d.batch_put_from_layers(ks, pp, ss, _H2G, rc)
        if len(res) != len(ks):
            return [INVALID_PARAMS] * len(ks)
        res = [mooncake_code(r) for r in res]
        self._tally_puts(res, [sum(A.u64s(s, "all_sizes")) for s in A.seq(all_sizes, "all_sizes")])
        return res

    def batch_get_into_multi_buffers(self, keys, all_buffer_ptrs, all_sizes, prefer_alloc_in_same_node=False):
        """Per key the bytes read (the sum of its buffer sizes), or a negative code."""
        ks = A.seq(keys, "keys")
        if not self._ready():
            return [INVALID_PARAMS] * len(ks)
        if not ks:
            return []
        if len(ks) > BATCH_MAX:
            return _in_chunks(self.batch_get_into_multi_buffers, len(ks), ks,
                              A.seq(all_buffer_ptrs, "all_buffer_ptrs"), A.seq(all_sizes, "all_sizes"))
        pp, ss = A.seq(all_buffer_ptrs, "all_buffer_ptrs"), A.seq(all_sizes, "all_sizes")
        good = _layers_good(pp, ss)
        if len(pp) == len(ks) == len(ss) and not all(good):
            return _only_good(good, self.batch_get_into_multi_buffers, ks, pp, ss)
        res = self._d.batch_get_into_layers(ks, pp, ss, _G2H)
        if len(res) != len(ks):
            return [INVALID_PARAMS] * len(ks)
        sizes = A.seq(all_sizes, "all_sizes")
        out = [sum(A.u64s(sizes[i], "all_sizes")) if r == 0 else mooncake_code(r) for i, r in enumerate(res)]
        self._tally_gets(out)
        return out

    # ---- upserts: remove, then put (not atomic: a reader in between misses). A put that would be refused is
    # refused before anything is removed: an upsert that fails on its arguments keeps the value stored.
    def _clear(self, keys):
        """Removes keys before an upsert: per key 0 or the code that stops it (absent keys are fine)."""
        ks = A.keys(keys)
        if len(ks) > BATCH_MAX:
            return _in_chunks(self._clear, len(ks), ks)
        res = A.results(len(ks))
        lib.mmc_batch_remove(self._d._s, A.key_array(ks), len(ks), A.addr(res))
        return [0 if r in _MISSING else mooncake_code(r) for r in res]

    def _upsert_keys(self, ks, good, put):
        """Per key 0 or a code: the keys checked good are removed, then put(their indices) puts them (a code per
        key); the others answer INVALID_PARAMS and keep their values."""
        idx = [i for i, g in enumerate(good) if g]
        out = [INVALID_PARAMS] * len(ks)
        if not idx:
            return out
        cleared = self._clear([ks[i] for i in idx])
        for i, c, r in zip(idx, cleared, put(idx)):
            out[i] = c or r
        return out

    def _upsert_one(self, key, good, put):
        if not self._ready():
            return INVALID_PARAMS
        return self._upsert_keys([A.key(key)], [good], lambda idx: [put()])[0]

    def upsert(self, key, value, config=None):
        good = _rc(config, "upsert") is not None and _nonempty(value, "value")
        return self._upsert_one(key, good, lambda: self.put(key, value, config))

    def upsert_from(self, key, buffer_ptr, size, config=None):
        good = _rc(config, "upsert_from") is not None and A.uint(buffer_ptr, "buffer_ptr") and A.uint(size, "size")
        return self._upsert_one(key, bool(good), lambda: self.put_from(key, buffer_ptr, size, config))

    def upsert_parts(self, key, *parts, config=None):
        good = _rc(config, "upsert_parts") is not None and any(_nonempty(p, "parts") for p in parts)
        return self._upsert_one(key, good, lambda: self.put_parts(key, *parts, config=config))

    def upsert_batch(self, keys, values, config=None):
        """0 or the first failure, as put_batch; a batch put_batch would refuse removes nothing."""
        if not self._ready():
            return INVALID_PARAMS
        ks, vs = A.seq(keys, "keys"), A.seq(values, "values")
        if len(ks) != len(vs) or _rc(config, "upsert_batch") is None or not all(_nonempty(v, "values") for v in vs):
            return INVALID_PARAMS
        bad = next((r for r in self._clear(ks) if r), 0) if ks else 0
        return bad or self.put_batch(ks, vs, config)

    def batch_upsert_from(self, keys, buffer_ptrs, sizes, config=None):
        ks, rc, refused = self._batch_put_start("batch_upsert_from", keys, config)
        if refused is not None:
            return refused
        ps, ns = A.u64s(buffer_ptrs, "buffer_ptrs"), A.u64s(sizes, "sizes")
        if len(ps) != len(ks) or len(ns) != len(ks):
            return [INVALID_PARAMS] * len(ks)
        return self._upsert_keys(ks, [p and n for p, n in zip(ps, ns)], lambda idx: self._put_from_checked(
            [ks[i] for i in idx], [ps[i] for i in idx], [ns[i] for i in idx], rc))

    # ---- queries and removal
    def is_exist(self, key):
        """1 / 0, or a negative code (INVALID_PARAMS before setup), as Mooncake's RealClient::isExist."""
        if not self._ready():
            return INVALID_PARAMS
        r = self._d.is_exist(key)
        self.counters.add("exist", 1, r not in (0, 1))
        return r if r in (0, 1) else mooncake_code(r)

    def batch_is_exist(self, keys):
        """1 / 0 / a negative code for each key, as Mooncake's RealClient::batchIsExist."""
        ks = A.seq(keys, "keys")
        if not self._ready():
            return [INVALID_PARAMS] * len(ks)
        if not ks:
            return []
        if len(ks) > BATCH_MAX:
            return _in_chunks(self.batch_is_exist, len(ks), ks)
        out = [r if r in (0, 1) else mooncake_code(r) for r in self._d.batch_is_exist(ks)]
        self.counters.add("exist", len(ks), sum(r < 0 for r in out))
        return out

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

    def get_replica_desc(self, key):
        """The object's replicas as ReplicaDescriptor ([] when absent or on an error)."""
        return self.batch_get_replica_desc([key]).get(key, [])

    def batch_get_replica_desc(self, keys):
        """{key: [ReplicaDescriptor]} for every key ([] when absent); {} when the query fails or before setup."""
        names = A.seq(keys, "keys")
        if len(names) > BATCH_MAX and self._ready():
            out = {}
            for at in range(0, len(names), BATCH_MAX):
                out.update(self.batch_get_replica_desc(names[at:at + BATCH_MAX]))
            return out
        ks = A.keys(names)
        if not self._ready() or not ks:
            return {}
        infos = (_lib.mmc_key_info * len(ks))()
        if lib.mmc_batch_get_key_info(self._d._s, A.key_array(ks), len(ks), 0, infos):
            return {}
        return {name: replicas(infos[i], _lib.REPLICA_MAX) for i, name in enumerate(names)}

    def remove(self, key, force=False):
        """0 or a code (OBJECT_NOT_FOUND). force is accepted: mmc never waits for readers (module docstring)."""
        A.boolean(force, "force")
        if not self._ready():
            return INVALID_PARAMS
        r = mooncake_code(self._d.remove(key))
        self.counters.add("remove", 1, r != 0)
        return r

    def batch_remove(self, keys, force=False):
        """0 or a code per key; force as remove()."""
        A.boolean(force, "force")
        ks = A.seq(keys, "keys")
        if not self._ready():
            return [INVALID_PARAMS] * len(ks)
        if not ks:
            return []
        if len(ks) > BATCH_MAX:
            return _in_chunks(lambda k: self.batch_remove(k, force), len(ks), ks)
        out = [mooncake_code(r) for r in self._d.remove_batch(ks)]
        self.counters.add("remove", len(ks), len(ks) - out.count(0))
        return out

    def remove_by_regex(self, regex_pattern, force=False):
        """How many objects were removed, or a negative code (INVALID_PARAMS for a bad pattern; INTERNAL_ERROR with
        a libmmc that lacks mmc_remove_by_regex). force as remove()."""
        if not isinstance(regex_pattern, str):
            raise TypeError("regex_pattern: expected str, got %s" % type(regex_pattern).__name__)
        A.boolean(force, "force")
        if not self._ready():
            return INVALID_PARAMS
        if not _lib.has("mmc_remove_by_regex"):
            return self._fail("remove_by_regex: this libmmc has no mmc_remove_by_regex", INTERNAL_ERROR)
        return mooncake_code(self._d.remove_by_regex_count(regex_pattern))

    def remove_all(self, force=False):
        """How many objects were removed, or a negative code (INTERNAL_ERROR without mmc_remove_all). force as
        remove()."""
        A.boolean(force, "force")
        if not self._ready():
            return INVALID_PARAMS
        if not _lib.has("mmc_remove_all"):
            return self._fail("remove_all: this libmmc has no mmc_remove_all", INTERNAL_ERROR)
        return mooncake_code(self._d.remove_all_count())

    # ---- what mmc has no counterpart for
    def batch_replica_clear(self, keys, segment_name=""):
        """Mooncake clears replicas of keys on a segment; mmc places replicas itself: nothing is cleared, []."""
        unsupported("batch_replica_clear", "mmc places and drops replicas itself; remove the keys instead")
        return []

    def create_copy_task(self, key, targets):
        unsupported("create_copy_task", "mmc has no replica copy tasks (replica_num is set at put)")
        return (0, 0), INVALID_PARAMS

    def create_move_task(self, key, source, target):
        unsupported("create_move_task", "mmc has no replica move tasks (its tiers move objects themselves)")
        return (0, 0), INVALID_PARAMS

    def query_task(self, task_id):
        unsupported("query_task", "mmc has no replica tasks")
        return None, INVALID_PARAMS
