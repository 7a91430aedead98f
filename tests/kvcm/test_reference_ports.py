#!/usr/bin/env python3
"""The ports the reference's own test harness uses: admin_rpc_port equal to rpc_port (the AdminService and the
DebugService on the MetaService's gRPC port), and the DebugService over HTTP on http_port + 3000."""
import socket
import sys
import time
import unittest

import grpc_fixture as fx


def free_port(also=0):
    """A port free now (and, with also, port + also free too), as the reference harness picks them."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not also:
            return port
        if port + also <= 65535:
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + also))
                return port
            except OSError:
                pass
    raise RuntimeError("no free port pair")


def ok(reply):
    return reply["header"]["status"]["code"] == "OK"


class SharedRpcPort(unittest.TestCase):
    def test_admin_and_debug_services_on_the_rpc_port(self):
        port = free_port()
        srv = fx.Server("kvcm.service.rpc_port=%d" % port, "kvcm.service.admin_rpc_port=%d" % port)
        try:
            self.assertEqual((srv.rpc_port, srv.admin_rpc_port), (port, port))
            self.assertTrue(ok(fx.to_dict(fx.grpc_call(srv, "meta", "getClusterInfo", {}))))
            self.assertTrue(ok(fx.to_dict(fx.grpc_call(srv, "admin", "checkHealth", {}))))
            self.assertTrue(ok(fx.to_dict(fx.grpc_call(srv, "debug", "clearFaults", {}))))
            info = fx.to_dict(fx.grpc_call(srv, "admin", "getManagerClusterInfo", {}))["leader_endpoint"]
            self.assertEqual((int(info["meta_rpc_port"]), int(info["admin_rpc_port"])), (port, port))
            self.roles_are_checked_per_service(srv)
        finally:
            self.assertEqual(srv.stop(), [])

    def roles_are_checked_per_service(self, srv):
        """One port, two kinds of service: a ROLE_USER may call the MetaService, not the AdminService."""
        self.assertTrue(ok(fx.to_dict(fx.grpc_call(srv, "admin", "addAccount", {
            "user_name": "root", "password": "pw1", "role": "ROLE_ADMIN"}))))
        root = (("authorization", fx.basic("root", "pw1")),)
        self.assertTrue(ok(fx.to_dict(self.retried(srv, "admin", "addAccount", {
            "user_name": "eng", "password": "pw2", "role": "ROLE_USER"}, root))))
        eng = (("authorization", fx.basic("eng", "pw2")),)
        self.assertTrue(ok(fx.to_dict(self.retried(srv, "meta", "getClusterInfo", {}, eng))))
        with self.assertRaises(fx.grpc.RpcError) as e:
            fx.grpc_call(srv, "admin", "listStorage", {}, metadata=eng)
        self.assertEqual(e.exception.code(), fx.grpc.StatusCode.PERMISSION_DENIED)

    def retried(self, srv, service, route, body, metadata):
        # right credentials: only the PBKDF2 time budget (250 ms a second, slow under sanitizers) refuses them
        for _ in range(5):
            try:
                return fx.grpc_call(srv, service, route, body, metadata=metadata)
            except fx.grpc.RpcError as e:
                if e.code() != fx.grpc.StatusCode.UNAUTHENTICATED:
                    raise
                time.sleep(1.1)
        self.fail("%s refused with good credentials" % route)


class DebugHttpPort(unittest.TestCase):
    def test_debug_service_on_http_port_plus_3000(self):
        port = free_port(3000)
        srv = fx.Server("kvcm.service.http_port=%d" % port)
        try:
            status, r = self.call(srv, "injectFault", {"api_name": "GetCacheLocation",
                                                       "fault_type": "FT_INTERNAL_ERROR"})
            self.assertEqual((status, ok(r)), (200, True))
            self.assertEqual(self.call(srv, "clearFaults", {})[0], 200)
            self.assertEqual(self.call(srv, "listStorage", {})[0], 404)  # the DebugService only
        finally:
            self.assertEqual(srv.stop(), [])

    def test_no_debug_port_without_the_debug_service(self):
        port = free_port(3000)
        srv = fx.Server("kvcm.service.http_port=%d" % port, "kvcm.service.enable_debug_service=false")
        try:
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", port + 3000), timeout=5).close()
        finally:
            self.assertEqual(srv.stop(), [])

    @staticmethod
    def call(srv, route, body):
        return fx.http_call(srv, "debug", route, body, port=srv.http_port + 3000)


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
