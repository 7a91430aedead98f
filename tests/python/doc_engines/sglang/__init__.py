"""A stand-in `sglang` package for py-docs: only `python -m sglang.launch_server` (launch_server.py)."""
