"""The writer process of test_mooncake.py: `from mooncake.store import MooncakeDistributedStore`, lends a segment,
batch_put_from's registered numpy arrays and torch CPU tensors and batch_put_from_multi_buffers' DeepSeek-R1 layer
objects, prints "ready", then keeps the segment until stdin closes.

  mooncake_peer.py MASTER_HOST:PORT PROTOCOL
"""
import sys

from mooncake.store import MooncakeDistributedStore

import shapes


def main():
    s = MooncakeDistributedStore()
    assert s.setup("localhost", "P2PHANDSHAKE", 160 << 20, 16 << 20, sys.argv[2], "", sys.argv[1]) == 0, s.last_error
    data = shapes.Data()
    for a in data.np_arrays:
        assert s.register_buffer(a.ctypes.data, a.nbytes) == 0
    assert s.batch_put_from(data.np_keys, [a.ctypes.data for a in data.np_arrays],
                            [a.nbytes for a in data.np_arrays]) == [0] * len(data.np_keys)
    for t in data.tensors:
        assert s.register_buffer(t.data_ptr(), t.numel() * t.element_size()) == 0
    assert s.batch_put_from(data.torch_keys, [t.data_ptr() for t in data.tensors],
                            [t.numel() * t.element_size() for t in data.tensors]) == [0] * len(data.torch_keys)
    for t in (data.dsr1_k, data.dsr1_v):
        assert s.register_buffer(t.data_ptr(), t.numel() * t.element_size()) == 0
    ptrs, sizes = data.dsr1_layers(data.dsr1_k, data.dsr1_v)
    assert s.batch_put_from_multi_buffers(data.dsr1_keys, ptrs, sizes) == [0] * len(data.dsr1_keys)
    print("ready", flush=True)
    sys.stdin.read()
    s.close()


if __name__ == "__main__":
    main()
