"""The ctypes structures of python/mmc/_lib.py have the sizes, alignments and field offsets of mmc.h's structs
(read from tests/python/layout.c, compiled against the header), and the limits agree."""
import ctypes
import os
import subprocess
import unittest

import mmctest
import mmc
from mmc import _lib


def c_layout():
    exe = os.environ.get("MMC_PY_LAYOUT") or os.path.join(mmctest.ROOT, "build", "tests", "mmc-py-layout")
    out = {}
    for line in subprocess.run([exe], check=True, capture_output=True, text=True).stdout.splitlines():
        struct, field, a, b = line.split()
        out[(struct, field)] = (int(a), int(b))
    return out


class Layout(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = c_layout()

    def check_struct(self, name):
        py = _lib.STRUCTS[name]
        size, align = self.c[(name, "-")]
        self.assertEqual(ctypes.sizeof(py), size, name + " size")
        self.assertEqual(ctypes.alignment(py), align, name + " alignment")
        cfields = sorted(f for (s, f) in self.c if s == name and f != "-")
        self.assertEqual(sorted(f for f, _ in py._fields_), cfields, name + " fields")
        for f, _ in py._fields_:
            d = getattr(py, f)
            self.assertEqual((d.offset, d.size), self.c[(name, f)], "%s.%s offset/size" % (name, f))

    def test_local_config(self):
        self.check_struct("mmc_local_config")
        self.assertEqual(_lib.mmc_local_config._fields_[0][0], "version")

    def test_replicate_config(self):
        self.check_struct("mmc_replicate_config")

    def test_key_info(self):
        self.check_struct("mmc_key_info")

    def test_limits(self):
        self.assertEqual(self.c[("MMC_LOCAL_CONFIG_VERSION", "-")][0], _lib.LOCAL_CONFIG_VERSION)
        self.assertEqual(self.c[("MMC_BATCH_MAX", "-")][0], mmc.BATCH_MAX)
        self.assertEqual(self.c[("MMC_KEY_MAX", "-")][0], mmc.KEY_MAX)
        self.assertEqual(self.c[("MMC_LAYERS_MAX", "-")][0], mmc.LAYERS_MAX)
        self.assertEqual(self.c[("MMC_REPLICA_MAX", "-")][0], mmc.REPLICA_MAX)

    def test_defaults_come_from_the_library(self):
        c = _lib.mmc_local_config()
        self.assertEqual(_lib.lib.mmc_local_config_init(ctypes.byref(c), _lib.LOCAL_CONFIG_VERSION), 0)
        self.assertEqual(c.version, _lib.LOCAL_CONFIG_VERSION)
        cfg = mmc.LocalConfig()
        self.assertEqual(cfg.meta_service_url, c.meta_service_url.decode())
        self.assertEqual(mmc.parse_size(cfg.dram_size), c.dram_size)
        self.assertEqual(cfg.to_c().version, _lib.LOCAL_CONFIG_VERSION)

    def test_version_check(self):
        self.assertEqual(_lib.check_version("0.1.0"), (0, 1, 0))
        self.assertEqual(_lib.check_version(mmc.version())[0], _lib.SUPPORTED_MAJOR)
        for bad in ("1.0.0", "0.0.9", "garbage"):
            with self.assertRaises(mmc.LibraryError) as cm:
                _lib.check_version(bad)
            self.assertIn("libmmc", str(cm.exception))

    def test_refuses_a_library_of_another_major(self):
        fake = os.environ.get("MMC_PY_FAKE_LIB") or os.path.join(mmctest.ROOT, "build", "tests",
                                                                 "libfake-libmmc.so")
        env = dict(os.environ, MMC_LIBRARY=fake)
        r = subprocess.run([os.sys.executable, "-c", "import mmc"], env=env, capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("LibraryError", r.stderr)
        self.assertIn("libmmc 9.0.0 is not supported by this mmc Python package", r.stderr)

    def test_refuses_an_unsupported_library(self):
        # a fresh interpreter with the version check pointed at a major it does not support
        env = dict(os.environ)
        src_dir = os.path.join(mmctest.ROOT, "python")
        r = subprocess.run([os.sys.executable, "-c",
                            "import sys; sys.path.insert(0, %r)\n"
                            "import importlib.util, ctypes\n"
                            "spec = importlib.util.find_spec('mmc._lib')\n"
                            "src = open(spec.origin).read().replace('SUPPORTED_MAJOR = 0', 'SUPPORTED_MAJOR = 7')\n"
                            "import types; m = types.ModuleType('mmc._lib'); m.__file__ = spec.origin\n"
                            "m.__package__ = 'mmc'\n"
                            "try:\n    exec(compile(src, spec.origin, 'exec'), m.__dict__)\n"
                            "except ImportError as e:\n    print('REFUSED', e)\n" % src_dir],
                           env=env, capture_output=True, text=True)
        self.assertIn("REFUSED", r.stdout, r.stderr)
        self.assertIn("not supported", r.stdout)


if __name__ == "__main__":
    mmctest.main()
