import importlib
import sys
import traceback

for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as exc:  # one program's crash must not hide the others' output
        print(name, "CRASH", type(exc).__name__)
        traceback.print_exc()
