"""Support for the KVCM gRPC tests: a real mmc-metaserver, stubs generated from our .proto files, and one client
that calls any route over HTTP (JSON, as curl does) or over gRPC (protobuf, as the reference's client does).

The stubs are generated at test time by python3-grpc-tools into the build directory (KVCM_GRPC_STUBS, else a temp
directory). Without python3-grpcio the tests exit 77, which meson reports as skipped.
Run one by hand from the source tree:
  MMC_METASERVER=build/metaserver/mmc-metaserver /usr/bin/python3 tests/kvcm/test_grpc_parity.py
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PROTO_DIR = os.path.join(ROOT, "metaserver", "kvcm", "proto")
SKIP = 77

try:
    import grpc
    from grpc_tools import protoc
    from google.protobuf import json_format
except ImportError as e:  # pragma: no cover - the skip path
    print("skipped: python3-grpcio / python3-grpc-tools not installed (%s)" % e)
    sys.exit(SKIP)

SERVICES = {  # service -> (pb2 module, full name, port attribute)
    "meta": ("meta_service_pb2", "kv_cache_manager.proto.meta.MetaService", "rpc_port"),
    "admin": ("admin_service_pb2", "kv_cache_manager.proto.admin.AdminService", "admin_rpc_port"),
    "debug": ("debug_service_pb2", "kv_cache_manager.proto.debug.DebugService", "admin_rpc_port"),
}
HTTP_PORT = {"meta": "http_port", "admin": "admin_http_port", "debug": "admin_http_port"}


def _stubs():
    out = os.environ.get("KVCM_GRPC_STUBS")
    if out:
        out = os.path.join(out, "stubs-%d" % os.getpid())
    else:
        out = tempfile.mkdtemp(prefix="kvcm-grpc-stubs-")
    os.makedirs(out, exist_ok=True)
    import atexit
    atexit.register(shutil.rmtree, out, True)  # one test's stubs: gone when it ends
    protos = [os.path.join(PROTO_DIR, p) for p in sorted(os.listdir(PROTO_DIR)) if p.endswith(".proto")]
    rc = protoc.main(["protoc", "-I" + PROTO_DIR, "--python_out=" + out, "--grpc_python_out=" + out] + protos)
    if rc != 0:
        raise RuntimeError("grpc_tools.protoc failed on %s" % PROTO_DIR)
    sys.path.insert(0, out)
    return out


STUB_DIR = _stubs()
PB2 = {k: __import__(v[0]) for k, v in SERVICES.items()}


def metaserver_binary():
    return os.environ.get("MMC_METASERVER") or os.path.join(ROOT, "build", "metaserver", "mmc-metaserver")


class Server:
    """mmc-metaserver on free loopback ports with a temp data dir and file root; .stop() checks its log."""

    def __init__(self, *extra):
        self.dir = tempfile.mkdtemp(prefix="kvcm-grpc-")
        self.root = os.path.join(self.dir, "nfs") + "/"
        argv = [metaserver_binary(), "--data-dir", os.path.join(self.dir, "data")]
        for e in ("ock.mmc.meta_service_url=tcp://127.0.0.1:0", "kvcm.service.http_port=0",
                  "kvcm.service.admin_http_port=0", "kvcm.service.rpc_port=0", "kvcm.service.admin_rpc_port=0",
                  "kvcm.service.bind=127.0.0.1", "ock.mmc.meta.lmdb.sync=false",
                  "kvcm.service.enable_debug_service=true", "kvcm.default_storage.root_path=" + self.root) + extra:
            argv += ["--env", e]
        self.argv = argv
        self.log_path = os.path.join(self.dir, "metaserver.log")
        self._start()

    def _start(self):
        self.channels = {}
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode()
        ports = dict(re.findall(r"(\w+)=(\d+)", line))
        if not line.startswith("mmc-metaserver ready") or "meta_rpc_port" not in ports:
            self.stop()
            raise RuntimeError("mmc-metaserver did not start: %r" % line)
        self.http_port, self.admin_http_port = int(ports["http"]), int(ports["admin"])
        self.rpc_port, self.admin_rpc_port = int(ports["meta_rpc_port"]), int(ports["admin_rpc_port"])

    def channel(self, port):
        if port not in self.channels:
            self.channels[port] = grpc.insecure_channel("127.0.0.1:%d" % port)
        return self.channels[port]

    def alive(self):
        return self.proc.poll() is None

    def _halt(self):
        for ch in self.channels.values():
            ch.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.log.close()

    def restart(self):
        """SIGTERM, then the same command on the same data directory (new ports)."""
        self._halt()
        self._start()

    def stop(self):
        """Stops the server; returns the sanitizer / crash lines of its log (empty when clean)."""
        self._halt()
        with open(self.log_path, errors="replace") as f:
            bad = [l for l in f if "AddressSanitizer" in l or "runtime error" in l or "LeakSanitizer" in l]
        if os.environ.get("KVCM_GRPC_KEEP_LOG"):
            shutil.copy(self.log_path, os.environ["KVCM_GRPC_KEEP_LOG"])
        shutil.rmtree(self.dir, ignore_errors=True)
        return bad


def deletes_done(srv, cap_s=10):
    """Polls /metrics until no delete is pending (each location marked DELETING so far is gone); False at the cap.
    A DELETING location still counts as existing for startWriteCache, as in the reference, so a step after a
    failed write or a removal depends on whether the deleter (which waits for its record to be on disk) is done."""
    import time
    end = time.monotonic() + cap_s
    while True:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % srv.admin_http_port, timeout=30) as f:
            if re.search(rb"^mmc_kvcm_pending_deletes 0$", f.read(), re.M):
                return True
        if time.monotonic() > end:
            return False
        time.sleep(0.005)


def raw_method(srv, service, route):
    """route's unary method, called with the request's bytes as they are (its reply decoded)."""
    resp_cls = message_classes(service, route)[1]
    return srv.channel(getattr(srv, SERVICES[service][2])).unary_unary(
        "/%s/%s" % (SERVICES[service][1], method_of(route)), request_serializer=lambda b: b,
        response_deserializer=resp_cls.FromString)


def method_of(route):
    return route[0].upper() + route[1:]


def message_classes(service, route):
    pb2 = PB2[service]
    m = pb2.DESCRIPTOR.services_by_name[SERVICES[service][1].rsplit(".", 1)[1]].methods_by_name[method_of(route)]
    from google.protobuf import message_factory
    get = getattr(message_factory, "GetMessageClass", None)
    if get:
        return get(m.input_type), get(m.output_type)
    f = message_factory.MessageFactory()
    return f.GetPrototype(m.input_type), f.GetPrototype(m.output_type)


def basic(user, password):
    """The value of an Authorization header (and of the gRPC authorization metadata) for these credentials."""
    import base64
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


def http_call(srv, service, route, body, timeout=30, auth=None, port=None):
    """(HTTP status, reply JSON or None); auth: an Authorization value; port: another than the service's."""
    port = port or getattr(srv, HTTP_PORT[service])
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = auth
    req = urllib.request.Request("http://127.0.0.1:%d/api/%s" % (port, route), data=json.dumps(body).encode(),
                                 headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, None


def grpc_call(srv, service, route, body, timeout=30, metadata=None):
    """The reply message of route over gRPC (raises grpc.RpcError on a non-OK status)."""
    req_cls, resp_cls = message_classes(service, route)
    req = json_format.ParseDict(body, req_cls())
    fn = srv.channel(getattr(srv, SERVICES[service][2])).unary_unary(
        "/%s/%s" % (SERVICES[service][1], method_of(route)),
        request_serializer=req_cls.SerializeToString, response_deserializer=resp_cls.FromString)
    return fn(req, timeout=timeout, metadata=metadata)


def call(srv, transport, service, route, body):
    """The reply to route over transport ("http" or "grpc"), as a dict of the same shape either way; HTTP must
    answer 200."""
    if transport == "http":
        status, reply = http_call(srv, service, route, body)
        assert status == 200, (route, status)
        return reply
    return to_dict(grpc_call(srv, service, route, body))


def to_dict(msg):
    return json_format.MessageToDict(msg, preserving_proto_field_name=True, including_default_value_fields=True)


def _wrapped(desc, v):
    """v with the bare values of our package's *Value wrapper fields put back in {"value": ...}: json_format maps
    only google.protobuf's own wrappers to bare values."""
    if not isinstance(v, dict):
        return v
    out = {}
    for k, x in v.items():
        f = desc.fields_by_name.get(k)
        m = f.message_type if f is not None else None
        if m is not None and m.name.endswith("Value") and [g.name for g in m.fields] == ["value"]:
            out[k] = x if isinstance(x, dict) else {"value": x}
        elif m is not None and isinstance(x, list):
            out[k] = [_wrapped(m, e) for e in x]
        elif m is not None:
            out[k] = _wrapped(m, x)
        else:
            out[k] = x
    return out


def http_as_message(service, route, reply):
    """The HTTP JSON reply parsed into the gRPC response message; a member the message lacks raises."""
    cls = message_classes(service, route)[1]
    return json_format.ParseDict(_wrapped(cls.DESCRIPTOR, reply), cls())
