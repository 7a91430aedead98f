"""mmc.sglang.MmcHiCacheStorage with every host pool layout SGLang has, between two processes: a writer process
(sglang_writer.py) fills an SGLang-shaped host pool (sglang_pools.py) per case and writes every page the way
SGLang's cache controller does; this process, whose store lends nothing, asks batch_exists, reads every page into
a pool of its own (in another slot order) and compares each page with the writer's, byte for byte. The objects
carry NpuMemcacheStore's keys for the same pages.

Before: the MLA page_first_kv_split layout raised "the host pool gave 12 buffers for 4 objects", layer_first
pools failed the same way, and with interface_v1 left out (SGLang's default: its generic path) the hit query
answered 0 pages while exists(key) was True."""
import json
import os
import subprocess
import sys

import mmctest
import sglang_layouts_cases as cases
import sglang_pools as pools


class Layouts(mmctest.ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.writer = subprocess.Popen([sys.executable, os.path.join(mmctest.HERE, "sglang_writer.py"),
                                       cls.meta.url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        cls.written = {}

    @classmethod
    def tearDownClass(cls):
        cls.writer.stdin.close()
        cls.writer.wait(60)
        super().tearDownClass()

    def write(self, case):
        if case["name"] not in self.written:
            self.writer.stdin.write(json.dumps(case) + "\n")
            self.writer.stdin.flush()
            self.written[case["name"]] = self.writer.stdout.readline().strip()
        self.assertEqual(self.written[case["name"]], "done %s ok" % case["name"])

    def read_back(self, case, v1=None):
        """Reads every page of case into a fresh pool through a store that lends nothing, with the case's
        interface_v1 (or v1); checks the bytes."""
        reader = cases.backend(case, self.meta.url, lend=False, v1=v1)
        v1 = cases.zero_copy(case) if v1 is None else v1
        try:
            mine = cases.pool(case, writer=False)
            reader.register_mem_pool_host(mine)
            keys = pools.page_keys(case["name"])
            self.assertEqual(reader.batch_exists(keys), len(keys), "the hit query")
            self.assertEqual(reader.batch_exists(keys + pools.page_keys("absent", 2)), len(keys))
            self.assertTrue(reader.exists(keys[0]))
            self.assertEqual(cases.read(reader, mine, case, v1), len(keys))
            theirs = cases.pool(case, writer=True)
            w_order, _ = cases.slots(case, "writer")
            r_order, _ = cases.slots(case, "reader")
            for i, key in enumerate(keys):
                want = cases.page_objects(case, theirs, w_order[i].item())
                self.assertEqual(cases.page_objects(case, mine, r_order[i].item()), want, "page %d" % i)
                names = cases.npu_memcache_keys(case, key)
                self.assertEqual([reader.store.get(n) for n in names], want, "NpuMemcacheStore's objects")
        finally:
            reader.close()

    def run_case(self, case):
        self.write(case)
        self.read_back(case)
        if not cases.zero_copy(case):  # the generic path's objects are the zero-copy path's
            self.read_back(case, 1)


def _add(case):
    setattr(Layouts, "test_" + case["name"].replace("-", "_"), lambda self: self.run_case(case))


for _case in cases.CASES:
    _add(_case)


if __name__ == "__main__":
    mmctest.main()
