"""The writer process of test_processes.py: lends a pool, writes numpy arrays, torch CPU tensors and DeepSeek-R1
shaped layer objects, prints "ready", then keeps the pool until stdin closes.

  peer_writer.py META_URL
"""
import sys

import mmctest
import shapes


def main():
    s = mmctest.store(sys.argv[1], dram="160MB")
    data = shapes.Data()
    # numpy arrays through batch_put_from
    assert s.batch_put_from(data.np_keys, [a.ctypes.data for a in data.np_arrays],
                            [a.nbytes for a in data.np_arrays]) == [0] * len(data.np_keys)
    # torch tensors, one put_from each (data_ptr())
    for k, t in zip(data.torch_keys, data.tensors):
        assert s.put_from(k, t.data_ptr(), t.numel() * t.element_size()) == 0
    # DeepSeek-R1: 61 layers x (128 KiB K + 16 KiB V) per key, from registered torch buffers
    for t in (data.dsr1_k, data.dsr1_v):
        assert s.register_buffer(t.data_ptr(), t.numel() * t.element_size()) == 0
    ptrs, sizes = data.dsr1_layers(data.dsr1_k, data.dsr1_v)
    assert s.batch_put_from_layers(data.dsr1_keys, ptrs, sizes, 3) == [0] * len(data.dsr1_keys)
    print("ready", flush=True)
    sys.stdin.read()
    s.close()


if __name__ == "__main__":
    main()
