def shout(s):
    return s.upper()


def helper_tool() -> str:
    return "private file: never a tool"


class HelperBase:
    def base_op(self) -> str:
        return "base"
