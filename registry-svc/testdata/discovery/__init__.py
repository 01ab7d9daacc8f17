def init_tool() -> str: return "never"
