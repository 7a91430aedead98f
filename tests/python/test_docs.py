"""docs/python.md, tested as code: every fenced block is run as printed. Python blocks are whole programs run by
/usr/bin/python3; sh blocks run under bash -e in a directory laid out like the source tree (python/, examples/,
tests/ and build/ are links to this checkout and its build), where `python -m sglang.launch_server` and
`vllm serve` are stand-ins (doc_engines/) that make the engine's calls on mmc with the configuration the block
gives them; each runs from the top of that tree. All of them reach this test's mmc-metaserver through $MMC_META_URL, as the page says. Blocks that
build or install mmc (meson) are skipped: ./quickstart.sh and py-install run those."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

import mmctest

DOC = os.path.join(mmctest.ROOT, "docs", "python.md")
ENGINES = os.path.join(mmctest.HERE, "doc_engines")


def blocks():
    """[(line, language, text)] of the fenced blocks of the page."""
    out, lang, start, body = [], None, 0, []
    for n, line in enumerate(open(DOC, encoding="utf-8"), 1):
        m = re.match(r"```(\S*)", line)
        if m and lang is None:
            lang, start, body = m.group(1), n, []
        elif line.startswith("```"):
            out.append((start, lang, "".join(body)))
            lang = None
        elif lang is not None:
            body.append(line)
    return out


class Docs(mmctest.ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tree = tempfile.mkdtemp(prefix="mmc-docs-")
        build = os.environ.get("MMC_BUILD_DIR") or os.path.join(mmctest.ROOT, "build")
        for name, target in (("python", os.path.join(mmctest.ROOT, "python")),
                             ("examples", os.path.join(mmctest.ROOT, "examples")),
                             ("tests", os.path.join(mmctest.ROOT, "tests")), ("build", build)):
            os.symlink(target, os.path.join(cls.tree, name))
        env = dict(os.environ, MMC_META_URL=cls.meta.url)
        env["PATH"] = ENGINES + os.pathsep + env.get("PATH", "")
        env["PYTHONPATH"] = os.pathsep.join([ENGINES, os.path.join(mmctest.ROOT, "python"), mmctest.HERE])
        cls.env = env

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.tree, ignore_errors=True)
        super().tearDownClass()

    def run_block(self, line, lang, text):
        if lang == "python":
            argv = ["/usr/bin/python3", "-c", text]
        elif lang == "sh":
            if re.search(r"^\s*meson ", text, re.M):
                self.skipTest("builds or installs mmc: ./quickstart.sh and py-install run this")
            argv = ["/bin/bash", "-e", "-c", text]
        else:
            self.assertIn(lang, ("json", "text", ""), "line %d: a block of an unknown language" % line)
            return
        r = subprocess.run(argv, cwd=self.tree, env=self.env, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, "docs/python.md:%d\n%s%s" % (line, r.stdout, r.stderr))

    def test_the_page_has_programs(self):
        langs = [lang for _, lang, _ in blocks()]
        self.assertGreaterEqual(langs.count("python"), 2)
        self.assertGreaterEqual(langs.count("sh"), 5)


def _add(line, lang, text):
    setattr(Docs, "test_line_%04d_%s" % (line, lang or "plain"), lambda self: self.run_block(line, lang, text))


for _block in blocks():
    _add(*_block)


if __name__ == "__main__":
    mmctest.main()
