"""Fixture: what ordinary tools still do inside the sandbox."""
import os
import tempfile
import urllib.request

from _helpers import greeting


def scratch(text: str) -> str:
    """Write text to a temp file and read it back."""
    with tempfile.NamedTemporaryFile("w+", delete=False) as f:
        f.write(text)
        name = f.name
    with open(name) as f:
        back = f.read()
    os.remove(name)
    return back + " in " + os.path.dirname(name)


def fetch(url: str) -> str:
    """Fetch a URL."""
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def greet(name: str) -> str:
    """Greet through the sibling _helpers module."""
    return greeting(name)


def who() -> str:
    """Report the uid and pid the tool runs as."""
    return "uid=%d pid=%d ppid=%d" % (os.getuid(), os.getpid(), os.getppid())
