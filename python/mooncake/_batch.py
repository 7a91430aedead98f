"""Mooncake's batch calls take any number of keys, libmmc's at most BATCH_MAX (vLLM looks a whole prompt up in one
batch_is_exist)."""
from mmc._lib import BATCH_MAX


def in_chunks(call, n, *parallel):
    """call over consecutive runs of BATCH_MAX keys, the arguments parallel to the keys split with them, and their
    per-key answers joined in order."""
    out = []
    for at in range(0, n, BATCH_MAX):
        out.extend(call(*(list(p[at:at + BATCH_MAX]) for p in parallel)))
    return out
