def test_prefixed_tool() -> str: return "never"
