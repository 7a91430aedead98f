"""Two processes: a Python writer lends a pool and writes numpy arrays, torch CPU tensors and DeepSeek-R1 shaped
layer objects; this process, a client that lends nothing, reads them into preallocated tensors through
batch_get_into and batch_get_into_layers, byte-exact. Then a C writer (mmc-test-node) and a Python reader, and a
Python writer and a C reader, interoperate. And a child forked without exec, as Python's multiprocessing makes
them, leaves its parent's store alone."""
import gc
import os
import subprocess
import sys
import time
import urllib.request

import numpy as np
import torch

import mmctest
import shapes


class PythonWriter(mmctest.ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.writer = subprocess.Popen([sys.executable, os.path.join(mmctest.HERE, "peer_writer.py"), cls.meta.url],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = cls.writer.stdout.readline()
        if line.strip() != b"ready":
            cls.writer.kill()
            super().tearDownClass()
            raise RuntimeError("the writer process failed: %r" % line)
        cls.s = mmctest.store(cls.meta.url, lend=False)
        cls.data = shapes.Data()

    @classmethod
    def tearDownClass(cls):
        cls.s.close()
        cls.writer.stdin.close()
        cls.writer.wait(30)
        super().tearDownClass()

    def test_objects_live_in_the_writer_pool(self):
        me = self.s.get_local_service_id()
        self.assertEqual(me, 4294967295)  # a client lends nothing
        infos = self.s.batch_get_key_info(self.data.np_keys + self.data.dsr1_keys)
        self.assertTrue(all(i.size() > 0 and len(i.loc_list()) == 1 for i in infos))

    def test_numpy_into_tensors(self):
        outs = [torch.empty(a.nbytes, dtype=torch.uint8) for a in self.data.np_arrays]
        res = self.s.batch_get_into(self.data.np_keys, [t.data_ptr() for t in outs], [t.numel() for t in outs])
        self.assertEqual(res, [0] * len(outs))
        for a, t in zip(self.data.np_arrays, outs):
            self.assertTrue(np.array_equal(a, t.numpy()))

    def test_tensors_into_tensors(self):
        outs = [torch.empty_like(t) for t in self.data.tensors]
        for t in outs:
            self.assertEqual(self.s.register_buffer(t.data_ptr(), t.numel() * t.element_size()), 0)
        res = self.s.batch_get_into(self.data.torch_keys, [t.data_ptr() for t in outs],
                                    [t.numel() * t.element_size() for t in outs], 2)
        self.assertEqual(res, [0] * len(outs))
        for want, got in zip(self.data.tensors, outs):
            self.assertTrue(torch.equal(want, got))
            self.assertEqual(self.s.unregister_buffer(got.data_ptr(), got.numel() * got.element_size()), 0)

    def test_dsr1_layers(self):
        k = torch.zeros_like(self.data.dsr1_k)
        v = torch.zeros_like(self.data.dsr1_v)
        ptrs, sizes = shapes.Data.dsr1_layers(k, v)
        self.assertEqual(len(ptrs[0]), 2 * shapes.DSR1_LAYERS)
        res = self.s.batch_get_into_layers(self.data.dsr1_keys, ptrs, sizes, 2)
        self.assertEqual(res, [0] * len(self.data.dsr1_keys))
        self.assertTrue(torch.equal(k, self.data.dsr1_k))
        self.assertTrue(torch.equal(v, self.data.dsr1_v))
        per_key = shapes.DSR1_LAYERS * (shapes.DSR1_K + shapes.DSR1_V)
        self.assertEqual(self.s.get_key_info(self.data.dsr1_keys[0]).size(), per_key)
        whole = torch.empty(per_key, dtype=torch.uint8)  # the same object as one flat buffer
        self.assertEqual(self.s.get_into(self.data.dsr1_keys[1], whole.data_ptr(), per_key), 0)
        layer0 = torch.cat([self.data.dsr1_k[1, 0], self.data.dsr1_v[1, 0]])
        self.assertTrue(torch.equal(whole[:shapes.DSR1_K + shapes.DSR1_V], layer0))


class CInterop(mmctest.ServerTest):
    """mmc-test-node (C, tests/integration/node.c) and Python on the same cluster."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        node = os.environ.get("MMC_TEST_NODE") or os.path.join(mmctest.ROOT, "build", "tests", "mmc-test-node")
        env = dict(os.environ, MMC_TEST_META=cls.meta.url, MMC_PROTOCOL=mmctest.PROTOCOL)
        cls.node = subprocess.Popen([node], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        code, _rank = cls.cmd("init 1 67108864").split()
        assert code == "0", code
        cls.s = mmctest.store(cls.meta.url, dram="64MB")

    @classmethod
    def cmd(cls, line):
        cls.node.stdin.write(line + "\n")
        cls.node.stdin.flush()
        return cls.node.stdout.readline().strip()

    @classmethod
    def tearDownClass(cls):
        cls.s.close()
        cls.node.stdin.write("quit\n")
        cls.node.stdin.close()
        cls.node.wait(30)
        super().tearDownClass()

    def test_c_writer_python_reader(self):
        size = (1 << 20) + 3
        self.assertEqual(self.cmd("put interop/c2py %d 42" % size), "0")
        out = np.zeros(size, np.uint8)
        self.assertEqual(self.s.get_into("interop/c2py", out.ctypes.data, size), 0)
        self.assertTrue(np.array_equal(out, mmctest.pattern(size, 42)))
        self.assertEqual(self.cmd("bput interop/batch/ 4 65536 100").split(), ["0"] * 5)
        outs = [np.zeros(65536, np.uint8) for _ in range(4)]
        res = self.s.batch_get_into(["interop/batch/%d" % i for i in range(4)], [o.ctypes.data for o in outs],
                                    [65536] * 4)
        self.assertEqual(res, [0] * 4)
        for i, o in enumerate(outs):
            self.assertTrue(np.array_equal(o, mmctest.pattern(65536, 100 + i)))

    def test_python_writer_c_reader(self):
        size = 300000
        a = mmctest.pattern(size, 9)
        self.assertEqual(self.s.put_from("interop/py2c", a.ctypes.data, size), 0)
        self.assertEqual(self.cmd("get interop/py2c %d 9" % size), "0")  # 99 would mean the bytes differ
        self.assertEqual(self.cmd("exist interop/py2c"), "1")


MOONCAKE_PROTOCOL = {"host_tcp": "tcp", "host_shm": "shm", "host_rdma": "rdma"}.get(mmctest.PROTOCOL, mmctest.PROTOCOL)


def in_forked_child(fn, timeout=20):
    """fn() in a child forked without exec, its result the exit code; the code, or None when the child hung."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = fn()
        finally:
            os._exit(code)
    until, done = time.time() + timeout, (0, 0)
    while done == (0, 0) and time.time() < until:
        time.sleep(0.01)
        done = os.waitpid(pid, os.WNOHANG)
    if done == (0, 0):
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        return None
    return os.waitstatus_to_exitcode(done[1])


class ForkedChild(mmctest.ServerTest):
    """A child forked without exec gets a copy of the parent's store object but none of libmmc's threads. Its
    collection there (__del__, mmc_destroy) used to send an Unregister on the parent's connection: the meta server
    dropped the parent's local service and its objects, and the child hung."""

    def test_a_child_that_drops_the_parents_store_leaves_it_alone(self):
        s = mmctest.store(self.meta.url)
        data = bytes(mmctest.pattern(1 << 16, 81))
        self.assertEqual(s.put("forked", data), 0)
        me = s.get_local_service_id()

        def child():
            nonlocal s
            if s.is_exist("forked") >= 0:  # the parent's store answers an error here
                return 2
            del s
            gc.collect()
            own = mmctest.store(self.meta.url)  # a store of the child's own, lending a pool of its own
            ok = own.get("forked") == data and own.put("forked/child", data[::-1]) == 0
            ok = ok and own.get("forked/child") == data[::-1]
            own.close()
            return 0 if ok else 4

        self.assertEqual(in_forked_child(child), 0, "None: the child hung; 2: it used the parent's store; 4: it "
                         "could not put and get with its own")
        self.assertEqual(s.get_local_service_id(), me)
        self.assertEqual(s.get("forked"), data)
        s.close()

    def test_a_mooncake_store_closed_in_a_child_leaves_the_parents_alone(self):
        from mooncake.store import MooncakeDistributedStore
        s = MooncakeDistributedStore()
        self.assertEqual(s.setup("localhost", "P2PHANDSHAKE", 64 << 20, 16 << 20, MOONCAKE_PROTOCOL, "",
                                 "127.0.0.1:%d" % self.meta.port, enable_client_http_server=True,
                                 client_http_port=0), 0)
        self.assertEqual(s.put("forked/mooncake", b"abc"), 0)
        port = s._http.port
        self.assertEqual(in_forked_child(lambda: s.close()), 0, "the child's close hung or failed")
        self.assertEqual(s.get("forked/mooncake"), b"abc")
        url = "http://127.0.0.1:%d/health" % port
        self.assertEqual(urllib.request.urlopen(url, timeout=10).status, 200, "the parent's HTTP server stopped")
        s.close()


if __name__ == "__main__":
    mmctest.main()
