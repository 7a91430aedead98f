"""The writer process of test_sglang_layouts.py: for each JSON case on stdin it builds an SGLang host pool of the
case's layout filled with the case's seeded bytes, loads mmc.sglang.MmcHiCacheStorage as SGLang's dynamic backend
does, and writes every page as SGLang's cache controller would (batch_set_v1 with interface_v1, else the generic
batch_set of get_data_page copies), then answers "done CASE". Its stores lend the memory the pages live in, so it
keeps them until stdin closes.

  sglang_writer.py META_URL
"""
import json
import sys

import sglang_layouts_cases as cases


def main():
    url, backends, pools = sys.argv[1], [], []
    try:
        for line in sys.stdin:
            case = json.loads(line)
            try:
                backend = cases.backend(case, url, lend=True)
                backends.append(backend)
                pool = cases.pool(case, writer=True)
                backend.register_mem_pool_host(pool)
                pools.append(pool)  # the pages stay where the registration says
                answer = "ok" if cases.write(backend, pool, case) else "failed"
            except Exception as e:  # one case's failure is that case's answer
                answer = "%s: %s" % (type(e).__name__, e)
            print("done %s %s" % (case["name"], answer), flush=True)
    finally:
        for b in backends:
            b.close()


if __name__ == "__main__":
    main()
