"""Committed traces as paths apx can open: NAME.apx as it is, NAME.apx.xz (the larger suite
traces and the held-out suite's, kept compressed so the repository stays small) unpacked once
into a temporary folder removed at exit. Imported by suite-check.py, json-order.py and
report-html-plots.py."""
import atexit
import glob
import lzma
import os
import shutil
import tempfile

_unpacked = None


def path(name):
    """NAME (a path without .apx): NAME.apx, or NAME.apx.xz unpacked; None when neither is."""
    global _unpacked
    plain = name + ".apx"
    if os.path.exists(plain):
        return plain
    if not os.path.exists(plain + ".xz"):
        return None
    if _unpacked is None:
        _unpacked = tempfile.mkdtemp(prefix="apx-fixtures-")
        atexit.register(shutil.rmtree, _unpacked, True)
    out = os.path.join(_unpacked, os.path.basename(os.path.dirname(plain)) + "-" +
                       os.path.basename(plain))
    if not os.path.exists(out):
        with lzma.open(plain + ".xz") as fin, open(out, "wb") as fout:
            shutil.copyfileobj(fin, fout)
    return out


def in_folder(folder):
    """Every trace of FOLDER (NAME.apx and NAME.apx.xz), sorted by name, as openable paths."""
    names = {p[:-len(".apx")] for p in glob.glob(os.path.join(folder, "*.apx"))}
    names |= {p[:-len(".apx.xz")] for p in glob.glob(os.path.join(folder, "*.apx.xz"))}
    return [path(n) for n in sorted(names)]
