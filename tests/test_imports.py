from __future__ import annotations

import subprocess
import sys


def test_import_is_light():
    code = (
        "import sys, openmirror_nb\n"
        "heavy = [m for m in ('pyspark', 'ipywidgets', 'IPython', 'azure', 'sempy', 'deltalake') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_lazy_public_names_resolve():
    import openmirror_nb as om

    assert callable(om.connect)
    assert om.MirroredDatabase.__name__ == "MirroredDatabase"
