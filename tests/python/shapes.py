"""The data both sides of test_processes.py regenerate from seeds: numpy arrays, torch tensors and DeepSeek-R1
shaped KV blocks (61 layers, a 128 KiB K part and a 16 KiB V part per layer)."""
import numpy as np
import torch

DSR1_LAYERS, DSR1_K, DSR1_V = 61, 128 << 10, 16 << 10
DSR1_KEYS = 4


class Data:
    def __init__(self):
        rng = np.random.default_rng(20260901)
        self.np_keys = ["proc/np/%d" % i for i in range(4)]
        self.np_arrays = [rng.integers(0, 256, (1 << 20) + i * 4096, dtype=np.uint8) for i in range(4)]
        g = torch.Generator().manual_seed(7)
        self.torch_keys = ["proc/torch/%d" % i for i in range(3)]
        self.tensors = [torch.randn(256, 1024, generator=g).to(torch.float16),
                        torch.randint(0, 1 << 30, (1000,), generator=g, dtype=torch.int64),
                        torch.randn(3, 5, 7, generator=g)]
        self.dsr1_keys = ["proc/dsr1/%d" % i for i in range(DSR1_KEYS)]
        self.dsr1_k = torch.randint(0, 256, (DSR1_KEYS, DSR1_LAYERS, DSR1_K), generator=g, dtype=torch.uint8)
        self.dsr1_v = torch.randint(0, 256, (DSR1_KEYS, DSR1_LAYERS, DSR1_V), generator=g, dtype=torch.uint8)

    @staticmethod
    def dsr1_layers(k, v):
        """Nested pointer and size lists: per key, per layer its K part then its V part."""
        ptrs, sizes = [], []
        for i in range(k.shape[0]):
            p, s = [], []
            for layer in range(DSR1_LAYERS):
                p += [k[i, layer].data_ptr(), v[i, layer].data_ptr()]
                s += [DSR1_K, DSR1_V]
            ptrs.append(p)
            sizes.append(s)
        return ptrs, sizes
