import nonexistent_module_xyz

def import_bad_tool() -> str:
    return "never"
