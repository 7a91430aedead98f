"""Host KV pools shaped as SGLang's (python/sglang/srt/mem_cache/pool_host/mha.py @0047d99 and mla.py @01c0ede):
the same buffer shapes per layout and the same per-page buffer lists from get_page_buffer_meta(host_indices), plus
the generic path's get_data_page / get_dummy_flat_data_page / set_from_flat_data_page. Written from those files'
layouts for the tests; no SGLang code. Contents are seeded random bytes, so two processes build the same pool.

  MHA: layer_first (2, L, size, H, D); page_first (2, size, L, H, D); page_first_direct (2, pages, L, P, H, D);
       page_head (2, pages, H, P, L, D). A page's buffers: [k, v], or per layer [k0, v0, k1, v1, ...] (layer_first);
       with split heads (page_head) [k, v] per head group.
  MLA: layer_first (L, size, 1, R+Q); page_first (size, L, 1, R+Q); page_first_direct (pages, L, P, 1, R+Q);
       page_first_kv_split: k (pages, L, P, 1, R), v (pages, L, P, 1, Q), index_k (pages, Li, P, 1, I),
       scale (pages, Li, P, 1, 1) float32. A page's buffers: [k], per layer [k0, k1, ...] (layer_first), or
       [k, v, index_k, scale] (kv_split; no v when dsa_kv_cache_store_fp8).
"""
import torch

LAYERS, PAGE, PAGES, HEADS, HEAD_DIM = 3, 4, 6, 4, 8
LORA, ROPE, INDEX_DIM, INDEX_LAYERS = 16, 8, 8, 2
DTYPE = torch.bfloat16


def _random(t, gen):
    raw = t.view(torch.uint8) if t.dtype != torch.uint8 else t
    raw.copy_(torch.randint(0, 256, raw.shape, dtype=torch.uint8, generator=gen))


class _Pool:
    page_size, page_num, layer_num = PAGE, PAGES, LAYERS
    size = PAGE * PAGES
    dtype = DTYPE

    def fill(self, seed):
        gen = torch.Generator().manual_seed(seed)
        for t in self.buffers():
            _random(t, gen)
        return self

    def same(self, other):
        """Whether every buffer holds the same bytes as other's."""
        return all(torch.equal(a.view(torch.uint8), b.view(torch.uint8))
                   for a, b in zip(self.buffers(), other.buffers()))


class MHAPool(_Pool):
    def __init__(self, layout):
        self.layout, self.head_num, self.head_dim = layout, HEADS, HEAD_DIM
        dims = {"layer_first": (2, LAYERS, self.size, HEADS, HEAD_DIM),
                "page_first": (2, self.size, LAYERS, HEADS, HEAD_DIM),
                "page_first_direct": (2, PAGES, LAYERS, PAGE, HEADS, HEAD_DIM),
                "page_head": (2, PAGES, HEADS, PAGE, LAYERS, HEAD_DIM)}[layout]
        self.kv_buffer = torch.zeros(dims, dtype=DTYPE)

    @property
    def k_buffer(self):
        return self.kv_buffer[0]

    @property
    def v_buffer(self):
        return self.kv_buffer[1]

    def buffers(self):
        return [self.kv_buffer]

    def _token_bytes(self):
        return HEADS * HEAD_DIM * self.kv_buffer.element_size()

    def get_page_buffer_meta(self, indices):
        tb, base = self._token_bytes(), self.kv_buffer.data_ptr()
        v_off = LAYERS * self.size * tb
        ptrs = []
        for start in indices.tolist()[::PAGE]:
            if self.layout == "layer_first":
                for layer in range(LAYERS):
                    k = base + start * tb + layer * self.size * tb
                    ptrs += [k, k + v_off]
            else:
                k = base + start * LAYERS * tb
                ptrs += [k, k + v_off]
        each = PAGE * tb if self.layout == "layer_first" else LAYERS * PAGE * tb
        return ptrs, [each] * len(ptrs)

    def get_split_heads_page_buffer_meta(self, indices, split_factor):
        assert self.layout == "page_head"
        it, base = self.kv_buffer.element_size(), self.kv_buffer.data_ptr()
        v_off = LAYERS * self.size * HEADS * HEAD_DIM * it
        ptrs = []
        for start in indices.tolist()[::PAGE]:
            for head in range(0, HEADS, HEADS // split_factor):
                k = base + start * LAYERS * HEADS * HEAD_DIM * it + head * PAGE * LAYERS * HEAD_DIM * it
                ptrs += [k, k + v_off]
        return ptrs, [LAYERS * PAGE * HEADS * HEAD_DIM * it // split_factor] * len(ptrs)

    def get_data_page(self, index, flat=True):
        if self.layout == "layer_first":
            page = self.kv_buffer[:, :, index:index + PAGE]
        elif self.layout == "page_first":
            page = self.kv_buffer[:, index:index + PAGE]
        else:
            page = self.kv_buffer[:, index // PAGE:index // PAGE + 1]
        return page.flatten() if flat else page

    def get_dummy_flat_data_page(self):
        return torch.zeros(2 * LAYERS * PAGE * HEADS * HEAD_DIM, dtype=DTYPE)

    def set_from_flat_data_page(self, index, data):
        shape = {"layer_first": (2, LAYERS, PAGE, HEADS, HEAD_DIM), "page_first": (2, PAGE, LAYERS, HEADS, HEAD_DIM),
                 "page_first_direct": (2, 1, LAYERS, PAGE, HEADS, HEAD_DIM),
                 "page_head": (2, 1, HEADS, PAGE, LAYERS, HEAD_DIM)}[self.layout]
        self.get_data_page(index, flat=False).copy_(data.reshape(shape))


class MLAPool(_Pool):
    def __init__(self, layout, index_k=True, scale=True, fp8_packed=False):
        self.layout, self.dsa_kv_cache_store_fp8 = layout, fp8_packed
        dim = LORA + ROPE
        self.kv_lora_rank, self.qk_rope_head_dim, self.kv_cache_dim = LORA, ROPE, dim
        self.index_k_buffer = self.index_k_scale_buffer = None
        if layout == "page_first_kv_split":
            self.k_buffer = torch.zeros((PAGES, LAYERS, PAGE, 1, LORA), dtype=DTYPE)
            self.v_buffer = torch.zeros((PAGES, LAYERS, PAGE, 1, ROPE), dtype=DTYPE)
            if index_k:
                self.index_k_buffer = torch.zeros((PAGES, INDEX_LAYERS, PAGE, 1, INDEX_DIM), dtype=DTYPE)
            if scale:
                self.index_k_scale_buffer = torch.zeros((PAGES, INDEX_LAYERS, PAGE, 1, 1), dtype=torch.float32)
            self.kv_buffer = self.k_buffer
        else:
            dims = {"layer_first": (LAYERS, self.size, 1, dim), "page_first": (self.size, LAYERS, 1, dim),
                    "page_first_direct": (PAGES, LAYERS, PAGE, 1, dim)}[layout]
            self.kv_buffer = torch.zeros(dims, dtype=DTYPE)

    def buffers(self):
        if self.layout != "page_first_kv_split":
            return [self.kv_buffer]
        out = [self.k_buffer] + ([] if self.dsa_kv_cache_store_fp8 else [self.v_buffer])
        return out + [t for t in (self.index_k_buffer, self.index_k_scale_buffer) if t is not None]

    def get_page_buffer_meta(self, indices):
        starts = indices.tolist()[::PAGE]
        if self.layout == "page_first_kv_split":
            return self._kv_split_meta(starts)
        tb = self.kv_cache_dim * self.kv_buffer.element_size()
        base, ptrs = self.kv_buffer.data_ptr(), []
        for start in starts:
            if self.layout == "layer_first":
                ptrs += [base + start * tb + layer * self.size * tb for layer in range(LAYERS)]
            else:
                ptrs.append(base + start * LAYERS * tb)
        each = PAGE * tb if self.layout == "layer_first" else LAYERS * PAGE * tb
        return ptrs, [each] * len(ptrs)

    def _kv_split_meta(self, starts):
        parts = [(self.k_buffer, LAYERS)]
        if not self.dsa_kv_cache_store_fp8:
            parts.append((self.v_buffer, LAYERS))
        parts += [(t, INDEX_LAYERS) for t in (self.index_k_buffer, self.index_k_scale_buffer) if t is not None]
        ptrs, sizes = [], []
        for start in starts:
            for t, layers in parts:
                row = layers * t.shape[-1] * t.element_size()  # one token of every layer
                ptrs.append(t.data_ptr() + start * row)
                sizes.append(PAGE * row)
        return ptrs, sizes

    def get_data_page(self, index, flat=True):
        if self.layout == "layer_first":
            page = self.kv_buffer[:, index:index + PAGE]
        elif self.layout == "page_first":
            page = self.kv_buffer[index:index + PAGE]
        elif self.layout == "page_first_direct":
            page = self.kv_buffer[index // PAGE:index // PAGE + 1]
        else:
            raise ValueError("Unsupported layout: %s" % self.layout)  # SGLang's generic path has no kv_split
        return page.flatten() if flat else page

    def get_dummy_flat_data_page(self):
        return torch.zeros(LAYERS * PAGE * self.kv_cache_dim, dtype=DTYPE)

    def set_from_flat_data_page(self, index, data):
        page = self.get_data_page(index, flat=False)
        page.copy_(data.reshape(page.shape))


def make(kind, layout, seed=None, **kw):
    """A pool: kind "mha" or "mla"; filled with seeded random bytes when seed is given, else zeros."""
    pool = MHAPool(layout) if kind == "mha" else MLAPool(layout, **kw)
    return pool.fill(seed) if seed is not None else pool


def page_keys(case, n=PAGES):
    """SGLang page keys (64 hex chars, as get_hash_str gives) unique to a test case."""
    import hashlib
    return [hashlib.sha256(("%s/%d" % (case, i)).encode()).hexdigest() for i in range(n)]
