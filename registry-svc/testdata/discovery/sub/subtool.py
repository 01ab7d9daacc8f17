def sub_tool() -> str: return "never"
