"""TAP output for the Python tests: checks are (what, ok, detail) tuples; returns the exit status."""


def report(checks):
    print(f'1..{len(checks)}')
    failed = 0
    for i, (what, ok, detail) in enumerate(checks, 1):
        print(f'{"ok" if ok else "not ok"} {i} - {what}')
        if not ok:
            failed += 1
            print(f'# {detail}')
    return 1 if failed else 0
