"""mmc.Store, the Pythonic layer: a context manager, exceptions with codes, numpy / torch / memoryview buffers,
registration on request, put_tensor / get_tensor."""

import threading
import time
import warnings

import numpy as np
import torch

import mmctest
import mmc


class Pythonic(mmctest.ServerTest):
    def open(self, **kw):
        return mmc.Store(self.meta.url, protocol=mmctest.PROTOCOL, dram_size="64MB", **kw)

    def test_context_manager_and_errors(self):
        with self.open() as s:
            self.assertFalse(s.closed)
            s.put("py/a", b"hello")
            self.assertEqual(s.get("py/a"), b"hello")
            self.assertTrue(s.exists("py/a"))
            self.assertEqual(s.batch_exists(["py/a", "py/none"]), [True, False])
            with self.assertRaises(mmc.ObjectNotExistsError) as cm:
                s.get("py/none")
            self.assertEqual(cm.exception.code, -3007)
            self.assertIn("MMC_OBJECT_NOT_EXISTS", cm.exception.message)
            with self.assertRaises(mmc.InvalidParamError):
                s.put("", b"x")
            with self.assertRaises(mmc.Error):
                s.get_into("py/a", bytearray(3))  # wrong size
            s.remove("py/a")
            with self.assertRaises(mmc.NotFoundError):
                s.remove("py/a")
            self.assertLess(s.local_service_id, 4294967295)
        self.assertTrue(s.closed)

    def test_bad_settings(self):
        with self.assertRaises(mmc.InvalidParamError):
            mmc.Store(self.meta.url, dram_size="lots")
        with self.assertRaises(TypeError):
            mmc.Store(self.meta.url, no_such_setting=1)
        with self.assertRaises(mmc.NotConnectedMetaError):
            mmc.Store("tcp://127.0.0.1:1", protocol=mmctest.PROTOCOL, lend=False)

    def test_buffers_everywhere(self):
        with self.open() as s:
            a = np.arange(1000, dtype=np.float32)
            t = torch.arange(500, dtype=torch.int64)
            s.put("py/np", a)
            s.put("py/torch", t, register=True)
            s.put("py/mv", memoryview(b"view bytes"))
            out_np, out_t, out_mv = np.zeros_like(a), torch.zeros_like(t), bytearray(10)
            s.get_into("py/np", out_np)
            s.get_into("py/torch", out_t, register=True)
            s.get_into("py/mv", memoryview(out_mv))
            self.assertTrue(np.array_equal(a, out_np))
            self.assertTrue(torch.equal(t, out_t))
            self.assertEqual(bytes(out_mv), b"view bytes")
            s.put("py/raw", a.ctypes.data, size=16)  # a raw address with an explicit size
            self.assertEqual(s.get("py/raw"), a[:4].tobytes())
            with self.assertRaises(TypeError):
                s.get_into("py/np", np.zeros(2000, np.float32)[::2])  # not contiguous
            with self.assertRaises(TypeError):
                s.get_into("py/mv", b"read-only!")  # a get needs writable memory
            with self.assertRaises(TypeError):
                s.put("py/x", a.ctypes.data)  # a raw address needs size=

    def test_a_tensor_s_memory_outlives_its_swap_during_a_call(self):
        """t.set_() in another thread while libmmc writes into t: the old storage is held for the call."""
        with self.open() as s:
            src = np.full(48 << 20, 7, np.uint8)
            s.put("py/swap", src)
            for _ in range(5):
                t = torch.zeros(48 << 20, dtype=torch.uint8)
                th = threading.Thread(target=lambda: (time.sleep(0.002), t.set_(torch.empty(0, dtype=torch.uint8))))
                th.start()
                try:
                    s.get_into("py/swap", t)  # a crash here is the failure
                except (mmc.InvalidParamError, TypeError):  # the swap came first, or while the tensor was read
                    self.assertEqual(t.numel(), 0, "refused, though the tensor was never swapped")
                th.join()

    def test_a_read_only_tensor_is_refused_as_a_destination(self):
        import mmap
        import tempfile
        with self.open() as s, tempfile.TemporaryFile() as f:
            s.put("py/ro", np.arange(4096, dtype=np.uint8))
            f.write(bytes(4096))
            f.flush()
            m = mmap.mmap(f.fileno(), 4096, access=mmap.ACCESS_READ)
            a = np.frombuffer(m, np.uint8)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch warns of the non-writable array, and goes on
                t = torch.from_numpy(a)
            with self.assertRaises(TypeError):
                s.get_into("py/ro", t)  # libmmc would crash writing into the read-only mapping
            del t, a
            m.close()
            out = torch.zeros(4096, dtype=torch.uint8)
            s.get_into("py/ro", out)
            self.assertTrue(torch.equal(out, torch.arange(4096, dtype=torch.int64).to(torch.uint8)))

    def test_batches(self):
        with self.open() as s:
            keys = ["py/b/%d" % i for i in range(6)]
            vals = [torch.full((256,), i, dtype=torch.uint8) for i in range(6)]
            s.put_batch(keys, vals)
            outs = [np.zeros(256, np.uint8) for _ in keys]
            s.get_batch_into(keys, outs, register=True)
            self.assertTrue(all((o == i).all() for i, o in enumerate(outs)))
            with self.assertRaises(mmc.BatchError) as cm:
                s.get_batch_into(keys[:2] + ["py/b/none"], outs[:3])
            self.assertEqual(cm.exception.results[:2], [0, 0])
            self.assertEqual(cm.exception.results[2], -3007)
            s.remove_batch(keys)
            self.assertEqual(s.batch_exists(keys), [False] * 6)

    def test_prefix(self):
        """A prefix read returns how many leading pages landed: up to the first missing one, and none past it."""
        with self.open() as s:
            keys = ["py/prefix/%d" % i for i in range(6)]
            s.put_batch(keys[:4], [np.full(4096, i, np.uint8) for i in range(4)])
            outs = [np.zeros(4096, np.uint8) for _ in keys]
            self.assertEqual(s.get_prefix_into(keys, outs, 2000), 4)
            self.assertTrue(all((outs[i] == i).all() for i in range(4)))
            self.assertTrue((outs[4] == 0).all(), "a key past the prefix is not read")
            self.assertEqual(s.get_prefix_into(["py/prefix/none"] + keys[:4], outs[:5], 2000), 0)
            self.assertEqual(s.get_prefix_into([], [], 2000), 0)
            with self.assertRaises(mmc.InvalidParamError):
                s.get_prefix_into(keys, outs[:2], 2000)
            for bad in (-1, 1 << 32):  # not wrapped into another deadline
                with self.assertRaises(TypeError):
                    s.get_prefix_into(keys, outs, bad)

    def test_a_key_with_a_nul_is_refused(self):
        """libmmc keys are C strings: "k\\0one" would be stored as "k", and read back for "k\\0two"."""
        with self.open() as s:
            for call in (lambda: s.put("py/nul\0one", b"AAAA"), lambda: s.exists("py/nul\0two"),
                         lambda: s.batch_exists(["py/ok", "py/nul\0x"]), lambda: s.raw.put("k\0", b"x"),
                         lambda: s.raw.batch_is_exist([b"py/nul\0bytes"])):
                with self.assertRaises(ValueError):
                    call()
            self.assertFalse(s.exists("py/nul"), "nothing was stored under the key's first part")

    def test_a_size_past_the_buffer_is_refused(self):
        with self.open() as s:
            s.put("py/big", np.zeros(4096, np.uint8))
            for small in (np.zeros(4, np.uint8), torch.zeros(4, dtype=torch.uint8), bytearray(4)):
                with self.assertRaises(ValueError):
                    s.get_into("py/big", small, size=4096)
                with self.assertRaises(ValueError):
                    s.put("py/small", small, size=4096)
            with self.assertRaises(TypeError):
                s.get_into("py/big", np.empty(512, dtype=object))  # pointers, not data
            with self.assertRaises(TypeError):
                s.put("py/conj", torch.ones(2, dtype=torch.complex64).conj())

    def test_numpy_scalars_are_stored_by_value(self):
        """A numpy scalar's __array_interface__ points at a temporary array, freed once the interface is dropped."""
        with self.open() as s:
            s.put_batch(["py/s1", "py/s2"], [np.float64(1.5), np.float64(2.5)])
            s.put("py/s3", np.int32(7))
            self.assertEqual(s.get("py/s1"), np.float64(1.5).tobytes())
            self.assertEqual(s.get("py/s2"), np.float64(2.5).tobytes())
            self.assertEqual(s.get("py/s3"), np.int32(7).tobytes())

    def test_a_numpy_integer_with_a_size_is_an_address(self):
        """Addresses kept in numpy arrays (tensor data_ptr()s) come out as numpy integers: with size= one is an
        address, as an int is; it used to store the 8 bytes of the address itself."""
        with self.open() as s:
            src = np.arange(16, dtype=np.uint8)
            addrs = np.array([src.ctypes.data], dtype=np.uint64)
            s.put("py/np-addr", addrs[0], size=16)
            self.assertEqual(s.get("py/np-addr"), bytes(range(16)))

    def test_a_registered_buffer_cannot_move(self):
        with self.open() as s:
            ba = bytearray(1 << 16)
            s.register(ba)
            with self.assertRaises(BufferError):
                ba.extend(b"x")  # would move the memory the fabric has registered
            s.unregister(ba)
            ba.extend(b"x")

    def test_register(self):
        with self.open() as s:
            buf = torch.zeros(1 << 20, dtype=torch.uint8)
            s.register(buf)
            s.register(buf)  # idempotent
            s.put("py/reg", buf)
            s.unregister(buf)
            with self.assertRaises(mmc.InvalidParamError):
                s.unregister(buf)

    def test_tensors(self):
        with self.open() as s:
            x = torch.randn(4, 8, 16)
            s.put_tensor("py/t", x)
            y = s.get_tensor("py/t")
            self.assertEqual(y.dtype, torch.float32)
            self.assertTrue(torch.equal(x, y))
            out = torch.empty_like(x)
            self.assertIs(s.get_tensor("py/t", out=out, register=True), out)
            self.assertTrue(torch.equal(x, out))
            a = np.arange(12, dtype=np.int16).reshape(3, 4)
            s.put_tensor("py/n", a)
            b = s.get_tensor("py/n")
            self.assertEqual((b.dtype, b.shape), (a.dtype, a.shape))
            self.assertTrue(np.array_equal(a, b))
            h = torch.ones(10, dtype=torch.bfloat16)
            s.put_tensor("py/bf16", h)
            self.assertTrue(torch.equal(s.get_tensor("py/bf16"), h))
            # out= of another element type and the same size: its bytes would not be the values, so it is refused
            with self.assertRaises(mmc.InvalidParamError):
                s.get_tensor("py/bf16", out=torch.empty(10, dtype=torch.float16))
            with self.assertRaises(mmc.InvalidParamError):
                s.get_tensor("py/n", out=np.empty((3, 4), dtype=np.uint16))
            flat = np.empty(12, dtype=np.int16)  # the same element type in another shape is a reshape: kept
            self.assertTrue(np.array_equal(s.get_tensor("py/n", out=flat), a.ravel()))
            t16 = torch.empty(3, 4, dtype=torch.int16)  # numpy's int16 is torch's
            self.assertTrue(np.array_equal(s.get_tensor("py/n", out=t16).numpy(), a))
            # the same element type in the other byte order: the same bytes would be other numbers
            with self.assertRaises(mmc.InvalidParamError):
                s.get_tensor("py/n", out=np.empty((3, 4), dtype=">i2"))
            s.put_tensor("py/be", a.astype(">i2"))
            self.assertTrue(np.array_equal(s.get_tensor("py/be", out=np.empty((3, 4), dtype=">i2")), a))
            rec = np.array([(1, 2.5)], dtype=[("a", ">i4"), ("b", "<f8")])  # a structure has no byte order of its own
            s.put_tensor("py/rec", rec)
            self.assertEqual(s.get_tensor("py/rec", out=np.empty(1, rec.dtype)).tolist(), rec.tolist())
            s.put("py/plain", b"x" * 300)
            with self.assertRaises(mmc.Error):
                s.get_tensor("py/plain")

    def test_log_handler(self):
        lines = []
        mmc.set_log_handler(lambda level, msg: lines.append((level, msg)))
        try:
            with self.assertRaises(mmc.Error):
                mmc.Store(self.meta.url, protocol="pigeon")
        finally:
            mmc.set_log_handler(None)
        self.assertTrue(any("pigeon" in m for _, m in lines), lines)


if __name__ == "__main__":
    mmctest.main()
