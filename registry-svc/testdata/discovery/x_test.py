def test_suffixed_tool() -> str: return "never"
