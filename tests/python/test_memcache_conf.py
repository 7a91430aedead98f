"""MemCache's own configuration files through memcache_hybrid, the way vLLM-Ascend starts its worker: the
mmc-local.conf of vLLM-Ascend's guide (kv_pool.md @016a636, Scenario 2 step 3) exactly as printed, but for the
meta server's address, named by MMC_LOCAL_CONFIG_PATH; DistributedObjectStore().init(local_rank, init_bm=True) must
give 0 (vLLM-Ascend asserts it), where it gave "unknown configuration key ubsio.disk.path". Then the SSD keys of
its step 8 map onto mmc's SSD tier when they mean one disk for one local service."""
import os
import tempfile

import mmctest

GUIDE_LOCAL_CONF = """\
ock.mmc.meta_service_url = tcp://<meta_service_ip>:5000
ock.mmc.local_service.config_store_url = tcp://<meta_service_ip>:6000
ock.mmc.log_level = info
ock.mmc.local_service.world_size = 256
ock.mmc.local_service.protocol = device_sdma
ock.mmc.local_service.dram.size = 1GB
ock.mmc.local_service.max.dram.size = 1024GB
# SSD feature related parameters below
ock.mmc.local_service.storage.enabled = false
ubsio.disk.path = /dev/nvmexn1:/dev/nvmexn2p1:/dev/loopX
ubsio.mem.size_in_gb = 10
ubsio.standalone.device_count = 8
ubsio.standalone.force_new_disk = true
"""


class GuideConf(mmctest.ServerTest):
    def setUp(self):
        self.old = os.environ.get("MMC_LOCAL_CONFIG_PATH")
        self.files = []

    def tearDown(self):
        for f in self.files:
            os.unlink(f)
        if self.old is None:
            os.environ.pop("MMC_LOCAL_CONFIG_PATH", None)
        else:
            os.environ["MMC_LOCAL_CONFIG_PATH"] = self.old

    def conf(self, text):
        """text with the guide's placeholders pointed at this test's meta server, as MMC_LOCAL_CONFIG_PATH"""
        text = text.replace("<meta_service_ip>:5000", "127.0.0.1:%d" % self.meta.port)
        text = text.replace("<meta_service_ip>", "127.0.0.1")
        fd, path = tempfile.mkstemp(prefix="mmc-local-", suffix=".conf")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        self.files.append(path)
        os.environ["MMC_LOCAL_CONFIG_PATH"] = path
        return path

    def test_guide_local_conf_inits(self):
        from memcache_hybrid import DistributedObjectStore
        self.conf(GUIDE_LOCAL_CONF)
        store = DistributedObjectStore()
        res = store.init(0, init_bm=True)
        assert res == 0  # vLLM-Ascend's own check
        try:
            self.assertEqual(store.put("guide-key", b"kv" * 100), 0)
            self.assertEqual(store.get("guide-key"), b"kv" * 100)
            self.assertNotEqual(store.get_local_service_id(), 4294967295, "the worker lends its 1GB")
        finally:
            store.close()

    def test_one_disk_is_the_ssd_tier(self):
        from memcache_hybrid import DistributedObjectStore
        import mmc
        fd, disk = tempfile.mkstemp(prefix="mmc-disk-")
        os.ftruncate(fd, 8 << 20)
        os.close(fd)
        self.files.append(disk)
        text = GUIDE_LOCAL_CONF.replace("dram.size = 1GB", "dram.size = 64MB")
        text = text.replace("storage.enabled = false", "storage.enabled = true")
        text = text.replace("/dev/nvmexn1:/dev/nvmexn2p1:/dev/loopX", disk)
        text = text.replace("device_count = 8", "device_count = 1")
        self.conf(text)
        store = DistributedObjectStore()
        self.assertEqual(store.init(0, init_bm=True), 0)
        try:
            value = os.urandom(64 << 10)
            self.assertEqual(store.put("ssd-key", value), 0)
            self.assertEqual(store.evict_keys(["ssd-key"]), 0)
            self.assertEqual(store.get_key_info("ssd-key").type_list(), [mmc.MEDIA_SSD])
            self.assertEqual(store.get("ssd-key"), value)
        finally:
            store.close()


if __name__ == "__main__":
    mmctest.main()
