"""Fixture: a tool that floods its output (issue 15, finding 8)."""


def flood(megabytes: int) -> str:
    """Print megabytes MB: half as one line, half as lines of 100 bytes."""
    half = megabytes * (1 << 20) // 2
    print("x" * half)
    line = "y" * 99
    for _ in range(half // 100):
        print(line)
    return "done"
