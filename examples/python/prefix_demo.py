#!/usr/bin/python3
"""Prefix caching with mmc, to watch: two requests share a long prefix; the second loads the prefix's KV pages from
mmc (put there by the first) instead of computing them again.

A small transformer (torch, CPU, random weights from a fixed seed: nothing is downloaded) serves the requests the
way an inference engine does: the prompt is cut into pages of PAGE tokens, prefilled one page at a time into a
paged KV cache, and each full page is named by a hash of every token up to its end (as SGLang's HiCache and
vLLM's prefix cache name theirs). After request 1 its pages go to mmc; request 2, on an engine with an empty KV
cache, asks mmc which of its leading pages exist, reads them straight into its KV cache and prefills only the rest.

For each prompt length it prints the time to first token of request 2 computed from scratch and with the prefix
from mmc, and checks that the first token's logits are identical both ways (exit status 1 when they are not).

  prefix_demo.py [--meta tcp://HOST:PORT] [--lengths 256,512,1024,2048] [--plot ttft.png] [--quick]

Without --meta it starts an mmc-metaserver of its own (mmc.meta.metaserver_path(): $MMC_METASERVER, the
installed one, the build tree's) on a free loopback port, and stops it at the end. --plot needs matplotlib
(Debian: python3-matplotlib); nothing else does.
"""
import argparse
import hashlib
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import torch
from torch import nn

import mmc
from mmc.meta import metaserver_path


class Model(nn.Module):
    """A decoder-only transformer: learned positions, pre-norm blocks, causal attention over a paged KV cache."""

    def __init__(self, vocab, dim, layers, heads, max_tokens, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.heads, self.head_dim = heads, dim // heads
        self.embed, self.pos = nn.Embedding(vocab, dim), nn.Embedding(max_tokens, dim)
        self.blocks = nn.ModuleList(Block(dim) for _ in range(layers))
        self.norm, self.out = nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln1, self.qkv, self.proj = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))


class Engine:
    """One inference engine: the model and a paged KV cache, kv[page, layer, k|v, token, head, head_dim]. A page of
    the cache is one contiguous block of memory: one mmc object, moved without a copy."""

    def __init__(self, model, page, max_pages, store=None):
        self.model, self.page, self.store = model, page, store
        shape = (max_pages, len(model.blocks), 2, page, model.heads, model.head_dim)
        self.kv = torch.zeros(shape)
        if store is not None:
            store.register(self.kv)  # the whole cache, once: every page moves zero-copy

    def page_keys(self, tokens, tag):
        """One key per full page: a hash of every token up to the page's end (the chain a prefix cache uses)."""
        keys, h = [], hashlib.sha256(tag.encode())
        for start in range(0, len(tokens) - len(tokens) % self.page, self.page):
            h.update(tokens[start:start + self.page].numpy().tobytes())
            keys.append("prefix-demo/%s/%s" % (tag, h.copy().hexdigest()))
        return keys

    @torch.no_grad()
    def prefill_page(self, tokens, p):
        """Runs page p of the prompt through the model, writing its K and V into the cache; the last logits."""
        m, n = self.model, len(tokens)
        pos = torch.arange(p * self.page, p * self.page + n)
        x = m.embed(tokens) + m.pos(pos)
        for layer, b in enumerate(m.blocks):
            q, k, v = b.qkv(b.ln1(x)).view(n, 3, m.heads, m.head_dim).unbind(1)
            self.kv[p, layer, 0, :n], self.kv[p, layer, 1, :n] = k, v
            keys = self.kv[:p + 1, layer, 0].reshape(-1, m.heads, m.head_dim)[:p * self.page + n]
            values = self.kv[:p + 1, layer, 1].reshape(-1, m.heads, m.head_dim)[:p * self.page + n]
            scores = torch.einsum("qhd,khd->hqk", q, keys) / math.sqrt(m.head_dim)
            scores.masked_fill_(torch.arange(len(keys)) > pos[:, None], float("-inf"))
            att = torch.einsum("hqk,khd->qhd", scores.softmax(-1), values).reshape(n, -1)
            x = x + b.proj(att)
            x = x + b.mlp(b.ln2(x))
        return m.out(m.norm(x[-1]))

    def serve(self, tokens, tag, use_cache):
        """Prefills the prompt; with use_cache, first loads its leading pages that mmc holds. (logits, pages
        loaded, seconds to the first token)."""
        t0 = time.perf_counter()
        loaded = 0
        if use_cache:
            keys = self.page_keys(tokens, tag)[:-1]  # the last page is prefilled: its logits are the answer
            hits = self.store.batch_exists(keys)
            loaded = hits.index(False) if False in hits else len(hits)
            self.store.get_batch_into(keys[:loaded], [self.kv[p] for p in range(loaded)])
        logits = None
        for p in range(loaded, (len(tokens) + self.page - 1) // self.page):
            logits = self.prefill_page(tokens[p * self.page:(p + 1) * self.page], p)
        return logits, loaded, time.perf_counter() - t0

    def put_pages(self, tokens, tag):
        """After a request: every full page of its KV into mmc (pages already there are kept)."""
        keys = self.page_keys(tokens, tag)
        new = [i for i, there in enumerate(self.store.batch_exists(keys)) if not there]
        self.store.put_batch([keys[i] for i in new], [self.kv[i] for i in new])
        return len(new)


class Metaserver:
    """An mmc-metaserver of the demo's own on a free loopback port, in a temp directory."""

    def __init__(self):
        exe = metaserver_path()
        if not exe:
            sys.exit("prefix_demo: no mmc-metaserver found (set $MMC_METASERVER or pass --meta)")
        self.dir = tempfile.mkdtemp(prefix="mmc-prefix-demo-")
        argv = [exe, "--data-dir", os.path.join(self.dir, "data"), "--env", "ock.mmc.meta_service_url=tcp://127.0.0.1:0",
                "--env", "ock.mmc.meta.lmdb.sync=false", "--env", "kvcm.service.bind=127.0.0.1"]
        for port in ("http_port", "admin_http_port", "rpc_port", "admin_rpc_port"):
            argv += ["--env", "kvcm.service.%s=0" % port]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"rpc=(tcp://\S+)", line)
        if not m:
            self.stop()
            sys.exit("prefix_demo: mmc-metaserver did not start: %r" % line)
        self.url = m.group(1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def run(args, tamper=None):
    """The demo; returns the exit status. tamper(kv) runs on the cached engine's KV cache after its pages load
    (the test uses it to prove the logits check can fail)."""
    sizes = (dict(vocab=512, dim=64, layers=2, heads=4, page=16) if args.quick else
             dict(vocab=4096, dim=256, layers=4, heads=4, page=64))
    lengths = [int(x) for x in args.lengths.split(",")] if args.lengths else (
        [64, 128] if args.quick else [256, 512, 1024, 2048])
    page, max_tokens = sizes["page"], max(lengths) + sizes["page"]
    model = Model(sizes["vocab"], sizes["dim"], sizes["layers"], sizes["heads"], max_tokens, args.seed).eval()
    tag = "seed%d-%s" % (args.seed, "-".join(str(v) for v in sizes.values()))
    server = None if args.meta else Metaserver()
    url = args.meta or server.url
    kv_bytes = sum(lengths) * sizes["layers"] * 2 * sizes["dim"] * 4  # every request 1's pages, float32
    pool = "%dMB" % max(64, 2 * kv_bytes >> 20)
    print("model: %d layers, %d dims, %d heads; pages of %d tokens; mmc at %s" %
          (sizes["layers"], sizes["dim"], sizes["heads"], page, url))
    print("%8s %12s %18s %15s %9s  %s" % ("tokens", "pages (mmc)", "TTFT, no cache ms", "TTFT, mmc ms",
                                         "speed-up", "first-token logits"))
    rows, identical = [], True
    gen = torch.Generator().manual_seed(args.seed)
    try:
        with mmc.Store(url, protocol=args.protocol, dram_size=pool) as first, \
                mmc.Store(url, protocol=args.protocol, lend=False) as second:
            for n in lengths:
                n -= n % page
                prefix = torch.randint(0, sizes["vocab"], (n - page,), generator=gen)
                req1 = torch.cat([prefix, torch.randint(0, sizes["vocab"], (page,), generator=gen)])
                req2 = torch.cat([prefix, torch.randint(0, sizes["vocab"], (page,), generator=gen)])
                # request 1 on engine A, which puts its pages into mmc
                engine_a = Engine(model, page, n // page, first)
                engine_a.serve(req1, tag, use_cache=False)
                engine_a.put_pages(req1, tag)
                # request 2 computed from scratch, then on engine B (an empty cache) with the prefix from mmc
                scratch, _, t_scratch = Engine(model, page, n // page).serve(req2, tag, use_cache=False)
                engine_b = Engine(model, page, n // page, second)
                if tamper:
                    engine_b.store = _Tampering(second, engine_b, tamper)
                cached, loaded, t_cached = engine_b.serve(req2, tag, use_cache=True)
                same = torch.equal(scratch, cached)
                identical = identical and same
                rows.append((n, t_scratch, t_cached))
                print("%8d %12d %18.1f %15.1f %8.1fx  %s" % (n, loaded, 1e3 * t_scratch, 1e3 * t_cached,
                                                            t_scratch / t_cached, "identical" if same else "DIFFER"))
    finally:
        if server:
            server.stop()
    if args.plot:
        plot(rows, args.plot)
    if not identical:
        print("prefix_demo: the logits with the prefix from mmc differ from the ones computed from scratch")
        return 1
    return 0


class _Tampering:
    """The store of a tampered run: after pages load, tamper(kv) changes the cache."""

    def __init__(self, store, engine, tamper):
        self.store, self.engine, self.tamper = store, engine, tamper

    def batch_exists(self, keys):
        return self.store.batch_exists(keys)

    def get_batch_into(self, keys, outs):
        self.store.get_batch_into(keys, outs)
        self.tamper(self.engine.kv)


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("prefix_demo: --plot needs matplotlib (Debian: apt install python3-matplotlib)")
    tokens = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(tokens, [1e3 * r[1] for r in rows], "o-", label="prefix computed again")
    ax.plot(tokens, [1e3 * r[2] for r in rows], "s-", label="prefix KV pages from mmc")
    ax.set_xlabel("prompt tokens (all but the last page shared with the previous request)")
    ax.set_ylabel("time to first token (ms)")
    ax.set_title("Prefix caching with mmc: second request's time to first token")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print("plot: %s" % path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--meta", help="an mmc meta server, tcp://HOST:PORT (default: start one)")
    ap.add_argument("--lengths", help="prompt lengths in tokens, comma-separated")
    ap.add_argument("--protocol", default="auto", help="mmc's network provider (default auto)")
    ap.add_argument("--seed", type=int, default=1, help="weights and prompts (default 1)")
    ap.add_argument("--plot", metavar="FILE.png", help="draw the times (needs matplotlib)")
    ap.add_argument("--quick", action="store_true", help="a tiny model and short prompts (seconds)")
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
