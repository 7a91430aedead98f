"""examples/python/prefix_demo.py in its short mode (--quick), as a user runs it: it starts its own mmc-metaserver,
serves each pair of requests, prints the times and exits 0 only when the first token's logits with the prefix
from mmc equal the ones computed from scratch. Its check has teeth: a KV cache changed after the pages load gives
exit status 1. --plot draws a PNG where matplotlib is installed."""
import contextlib
import importlib.util
import io
import os
import subprocess
import sys
import tempfile
import unittest

import mmctest

DEMO = os.path.join(mmctest.ROOT, "examples", "python", "prefix_demo.py")


def have_matplotlib():
    return importlib.util.find_spec("matplotlib") is not None


class PrefixDemo(unittest.TestCase):
    def test_quick_run(self):
        out = subprocess.run([sys.executable, DEMO, "--quick", "--protocol", mmctest.PROTOCOL], capture_output=True,
                             text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        rows = [line for line in out.stdout.splitlines() if line.strip().split(" ")[0].isdigit()]
        self.assertEqual(len(rows), 2, out.stdout)
        for row in rows:
            self.assertTrue(row.endswith("identical"), row)
            self.assertGreater(int(row.split()[1]), 0, "pages came from mmc: %s" % row)

    def test_changed_kv_fails_the_check(self):
        spec = importlib.util.spec_from_file_location("prefix_demo", DEMO)
        demo = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(demo)
        args = demo.argparse.Namespace(meta=None, lengths="64", protocol=mmctest.PROTOCOL, seed=1, plot=None,
                                       quick=True)

        def tamper(kv):
            kv[0, 0, 0, 0, 0, 0] += 1.0  # one number of the first loaded page

        out = io.StringIO()
        with contextlib.redirect_stdout(out):  # the TAP stream is this process's stdout
            self.assertEqual(demo.run(args), 0)
            self.assertEqual(demo.run(args, tamper=tamper), 1)
        self.assertIn("DIFFER", out.getvalue())

    @unittest.skipUnless(have_matplotlib(), "no matplotlib (Debian: python3-matplotlib)")
    def test_plot(self):
        with tempfile.TemporaryDirectory() as d:
            png = os.path.join(d, "ttft.png")
            out = subprocess.run([sys.executable, DEMO, "--quick", "--protocol", mmctest.PROTOCOL, "--plot", png],
                                 capture_output=True, text=True, timeout=300)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    mmctest.main()
