"""meson install puts mmc into a directory /usr/bin/python3 reads, next to a _paths.py naming the libdir that
libmmc.so.0 goes to; an installed copy (meson install --destdir) loads libmmc through _paths alone, with no
MMC_LIBRARY, PYTHONPATH tricks aside; memcache_hybrid is installed only when -Dmemcache_hybrid=true."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import mmctest

BUILD = os.environ.get("MMC_BUILD_DIR") or os.path.join(mmctest.ROOT, "build")


def introspect(what):
    return json.loads(subprocess.run(["meson", "introspect", BUILD, what], check=True, capture_output=True,
                                     text=True).stdout)


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.installed = introspect("--installed")
        cls.options = {o["name"]: o["value"] for o in introspect("--buildoptions")}

    def dest(self, suffix):
        hits = [v for k, v in self.installed.items() if k.endswith(suffix)]
        self.assertEqual(len(hits), 1, suffix)
        return hits[0]

    def test_site_packages_is_on_sys_path(self):
        init = self.dest("python/mmc/__init__.py")
        path = subprocess.run(["/usr/bin/python3", "-c", "import sys, json; print(json.dumps(sys.path))"],
                              check=True, capture_output=True, text=True, env={}).stdout
        self.assertIn(os.path.dirname(os.path.dirname(init)), json.loads(path))

    def test_paths_name_the_installed_library(self):
        lib = self.dest("lib/libmmc.so.0.1.0")
        paths = self.dest("python/_paths.py")
        self.assertEqual(os.path.dirname(paths), os.path.dirname(self.dest("python/mmc/_lib.py")))
        text = open(os.path.join(BUILD, "python", "_paths.py")).read()
        self.assertIn("LIBDIR = %r" % os.path.dirname(lib), text)
        self.assertIn("BINDIR = %r" % os.path.dirname(self.dest("metaserver/mmc-metaserver")), text)

    def test_memcache_hybrid_only_when_asked(self):
        mh = [v for k, v in self.installed.items() if "memcache_hybrid" in k]
        self.assertEqual(bool(mh), bool(self.options.get("memcache_hybrid")))

    def test_installed_copy_finds_libmmc_without_environment(self):
        root = tempfile.mkdtemp(prefix="mmc-pyinstall-")
        try:
            subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild", "--quiet", "--destdir", root],
                           check=True, capture_output=True)
            site = os.path.dirname(os.path.dirname(self.dest("python/mmc/__init__.py")))
            pkg = root + site
            libdir = os.path.dirname(self.dest("lib/libmmc.so.0.1.0"))
            bindir = os.path.dirname(self.dest("metaserver/mmc-metaserver"))
            # the installed _paths.py, relocated under the destdir as if it were the real prefix
            with open(os.path.join(pkg, "mmc", "_paths.py"), "w") as f:
                f.write("LIBDIR = %r\nBINDIR = %r\n" % (root + libdir, root + bindir))
            env = {"PYTHONPATH": pkg, "PATH": "/usr/bin:/bin"}
            code = ("import mmc, mmc.meta; print(mmc.library_path); print(mmc.meta.metaserver_path());"
                    " print(mmc.version())")
            if self.options.get("memcache_hybrid"):
                code += ("\nimport memcache_hybrid, os\n"
                         "assert memcache_hybrid.DistributedObjectStore is mmc.DistributedObjectStore\n"
                         "assert os.path.exists(os.path.join(os.path.dirname(memcache_hybrid.__file__),"
                         " 'config', 'mmc-local.conf'))")
            out = subprocess.run(["/usr/bin/python3", "-c", code], env=env, cwd=root, capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.split()
            self.assertEqual(lines[0], os.path.join(root + libdir, "libmmc.so.0"))
            self.assertEqual(lines[1], os.path.join(root + bindir, "mmc-metaserver"))
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    mmctest.main()
