"""Tools of the chaos run (chaos_test.go): each takes long enough that a
replica killed under load has calls of both kinds in flight."""
import time


def chaos_read(ms: int = 200) -> str:
    """Wait ms milliseconds and say so; safe to call again."""
    time.sleep(ms / 1000)
    return "read after %d ms" % ms


chaos_read.annotations = {"readOnlyHint": True}


def chaos_write(ms: int = 200) -> str:
    """Wait ms milliseconds and say so; counts as a tool with effects."""
    time.sleep(ms / 1000)
    return "wrote after %d ms" % ms
