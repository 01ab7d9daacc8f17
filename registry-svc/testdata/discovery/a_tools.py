"""Fixture: discovery rules of registry-svc/design.md "Tool discovery"."""
from os.path import join  # imported function: ignored

from _helpers import shout, HelperBase  # sibling private helper imports fine
from b_more import MoreService  # imported *Service class: registered once, from b_more


def hello(name: str) -> str:
    """Greet someone."""
    return shout("hello " + name)


def _private_fn() -> str:
    return "never a tool"


async def async_hello(name: str) -> str:
    """Greet someone, asynchronously."""
    return "async hello " + name


async_hello.task_support = "optional"  # may run as an MCP task
async_hello.task_after_input = True  # asks inline first, a task once answered


class Base:
    def inherited_op(self) -> str:
        return "inherited"


class FooService(Base):
    """A service whose own public methods are tools."""

    def __init__(self):
        self.prefix = "foo"

    def foo_op(self, x: int) -> str:
        """Do foo."""
        return "%s %d" % (self.prefix, x)

    async def foo_async(self) -> str:
        """Do foo asynchronously."""
        return self.prefix

    @staticmethod
    def foo_static() -> str:
        """A static method."""
        return "static"

    def _hidden(self) -> str:
        return "hidden"

    joined = join  # method assigned from an imported function: ignored


class HelperDerivedService(HelperBase):
    """Only its own methods count, not HelperBase's."""

    def derived_op(self) -> str:
        """Own method."""
        return "derived"


class DisabledService:
    @staticmethod
    def _enabled() -> bool:
        return False

    def disabled_op(self) -> str:
        return "never"


class BrokenCtorService:
    def __init__(self):
        raise RuntimeError("constructor failed")

    def broken_op(self) -> str:
        return "never"
