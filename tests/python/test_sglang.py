"""mmc.sglang.MmcHiCacheStorage through the stand-in HiCacheStorage base (SGLang is not installed here): loaded as
SGLang's dynamic backend loads it, set / get / exists, and batch v1 zero-copy between two host pools."""
import importlib

import torch

import mmctest
import mmc.sglang as ms


class FakeHostPool:
    """An MHA (or MLA) host pool in page_first layout with get_page_buffer_meta(host_indices) as SGLang's."""

    def __init__(self, pages, page_size, page_bytes, mla=False):
        self.page_size, self.page_bytes, self.mla = page_size, page_bytes, mla
        self.kv_buffer = torch.zeros((1 if mla else 2, pages, page_bytes), dtype=torch.uint8)

    def get_page_buffer_meta(self, host_indices):
        ptrs, sizes = [], []
        for p in (host_indices[::self.page_size] // self.page_size).tolist():
            for part in range(self.kv_buffer.shape[0]):
                ptrs.append(self.kv_buffer[part, p].data_ptr())
                sizes.append(self.page_bytes)
        return ptrs, sizes


def load_dynamic(config, extra):
    """backend_factory.py's dynamic path: importlib, issubclass check, cls(storage_config, kwargs)."""
    module = importlib.import_module(extra["module_path"])
    cls = getattr(module, extra["class_name"])
    if not issubclass(cls, module.HiCacheStorage):
        raise TypeError("not a HiCacheStorage")
    return cls(config, {})


class HiCache(mmctest.ServerTest):
    def backend(self, tp_rank=0, mla=False, tag=None, v1=1, dram="64MB"):
        extra = {"backend_name": "mmc", "module_path": "mmc.sglang", "class_name": "MmcHiCacheStorage",
                 "meta_service_url": self.meta.url, "protocol": mmctest.PROTOCOL, "dram_size": dram}
        if v1 is not None:
            extra["interface_v1"] = v1
        if tag:
            extra["extra_backend_tag"] = tag
        cfg = ms.HiCacheStorageConfig(tp_rank=tp_rank, tp_size=2, is_mla_model=mla, extra_config=extra)
        return load_dynamic(cfg, extra)

    def test_stand_in_declares_the_abstract_methods(self):
        self.assertFalse(ms.HAVE_SGLANG)
        self.assertEqual(ms.HiCacheStorage.__abstractmethods__, {"get", "batch_get", "set", "batch_set", "exists"})
        with self.assertRaises(TypeError):
            ms.HiCacheStorage()

    def test_set_get_exists(self):
        b = self.backend(tag="generic", v1=None)  # no interface_v1: SGLang's generic batch_get / batch_set
        try:
            v = torch.arange(1024, dtype=torch.int32)
            self.assertFalse(b.exists("page-a"))
            self.assertTrue(b.set("page-a", v))
            self.assertTrue(b.set("page-a", v))  # already there: still a success
            self.assertTrue(b.exists("page-a"))
            got = b.get("page-a")
            self.assertTrue(torch.equal(got.view(torch.int32), v))
            out = torch.zeros_like(v)
            self.assertIs(b.get("page-a", out), out)
            self.assertTrue(torch.equal(out, v))
            self.assertIsNone(b.get("page-none"))
            vals = [torch.full((256,), i, dtype=torch.uint8) for i in range(4)]
            keys = ["page-b%d" % i for i in range(4)]
            self.assertTrue(b.batch_set(keys, vals))
            outs = [torch.zeros(256, dtype=torch.uint8) for _ in range(4)] + [torch.zeros(256, dtype=torch.uint8)]
            got = b.batch_get(keys + ["page-none"], outs)
            self.assertTrue(all(torch.equal(g, x) for g, x in zip(got[:4], vals)))
            self.assertIsNone(got[4])
            self.assertEqual(b.batch_exists(keys + ["page-none"] + keys), 4)
            b.clear()  # SGLang's cache flush: mmc_remove_all
            self.assertFalse(b.exists("page-a"))
            self.assertEqual(b.batch_exists(keys), 0)
            self.assertIsNone(b.get_stats())
        finally:
            b.close()

    def run_v1(self, mla):
        pages, page_size, page_bytes = 6, 4, 4096
        writer, reader = self.backend(0, mla), self.backend(0, mla)
        try:
            src = FakeHostPool(pages, page_size, page_bytes, mla)
            src.kv_buffer.copy_(torch.randint(0, 256, src.kv_buffer.shape, dtype=torch.uint8))
            dst = FakeHostPool(pages, page_size, page_bytes, mla)
            writer.register_mem_pool_host(src)
            reader.register_mem_pool_host(dst)
            keys = ["%064x" % (0xfeed + i + (1000 if mla else 0)) for i in range(pages)]
            idx = torch.arange(pages * page_size)
            self.assertEqual(reader.batch_exists(keys), 0)
            self.assertEqual(writer.batch_set_v1(keys[:4], idx[:4 * page_size]), [True] * 4)
            self.assertEqual(reader.batch_exists(keys), 4)  # the leading run of hits
            self.assertEqual(writer.batch_set_v1(keys, idx), [True] * pages)  # the first 4 are skipped
            res = reader.batch_get_v1(keys + ["%064x" % 1], torch.arange((pages + 1) * page_size) % (pages * page_size))
            self.assertEqual(res, [True] * pages + [False])
            self.assertTrue(torch.equal(src.kv_buffer, dst.kv_buffer))
            suffix = "__k" if mla else "_0_k"
            self.assertEqual(reader.store.is_exist(keys[0] + suffix), 1)  # npu_memcache's key scheme
        finally:
            writer.close()
            reader.close()

    def test_batch_v1_mha(self):
        self.run_v1(False)

    def test_batch_v1_mla(self):
        self.run_v1(True)

    def test_a_batch_past_libmmc_s_limit_goes_in_several_calls(self):
        """More objects than one libmmc call takes (BATCH_MAX): the store answers such a batch with one code, which
        read as one result per page left every page after the first marked as stored or loaded."""
        pages, page_bytes = ms.BATCH_MAX + 3, 16
        writer, reader = self.backend(0, True, dram="96MB"), self.backend(0, True, dram="96MB")
        try:
            src, dst = FakeHostPool(pages, 1, page_bytes, True), FakeHostPool(pages, 1, page_bytes, True)
            src.kv_buffer.copy_(torch.randint(0, 256, src.kv_buffer.shape, dtype=torch.uint8))
            writer.register_mem_pool_host(src)
            reader.register_mem_pool_host(dst)
            keys = ["%064x" % (0xb16 + i) for i in range(pages)]
            idx = torch.arange(pages)
            self.assertEqual(writer.batch_set_v1(keys, idx), [True] * pages)
            self.assertEqual(reader.batch_exists(keys), pages)
            reader.prefix_timeout_ms = 0  # the plain batch read, then the prefix read
            self.assertEqual(reader.batch_get_v1(keys, idx), [True] * pages)
            self.assertTrue(torch.equal(src.kv_buffer, dst.kv_buffer))
            dst.kv_buffer.zero_()
            reader.prefix_timeout_ms = 5000
            writer.store.remove(keys[-1] + "__k")
            self.assertEqual(reader.batch_get_v1(keys, idx), [True] * (pages - 1) + [False])
            self.assertTrue(torch.equal(src.kv_buffer[:, :-1], dst.kv_buffer[:, :-1]))
        finally:
            writer.close()
            reader.close()

    def test_tp_ranks_have_their_own_keys(self):
        a, b = self.backend(0), self.backend(1)
        try:
            self.assertEqual(a.plan.suffixes, ["_0_k", "_0_v"])
            self.assertEqual(b.plan.suffixes, ["_1_k", "_1_v"])
        finally:
            a.close()
            b.close()


if __name__ == "__main__":
    mmctest.main()
