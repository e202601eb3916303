"""run_all.py - runs check.py under every CPython 3.10-3.14 on this machine (Debian's
python3, pyenv's versions, $APX_PYTHONS) with libapx-pyprobe.so; ctest pystack-interpreters.
Fails when one fails or none of 3.11-3.13 was found; versions absent here are listed."""
import glob
import os
import subprocess
import sys

probe = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
cands = ["/usr/bin/python3", sys.executable]
cands += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[0-4]*/bin/python3")))
cands += sorted(glob.glob("/root/.pyenv/versions/3.1[0-4]*/bin/python3"))
cands += [p for p in os.environ.get("APX_PYTHONS", "").split(":") if p]
seen, ran, bad = set(), set(), 0
for py in cands:
    if not os.path.exists(py):
        continue
    try:
        ver = subprocess.run([py, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        continue
    if not ver or ver in seen or not ("3.10" <= ver[:4] <= "3.14" and ver.count(".") == 2):
        continue
    seen.add(ver)
    r = subprocess.run([py, os.path.join(here, "check.py"), probe], capture_output=True,
                       text=True, timeout=120)
    sys.stdout.write(r.stdout + r.stderr)
    if r.returncode != 0:
        print("pystack: %s (%s) failed with exit %d" % (py, ver, r.returncode))
        bad += 1
    ran.add(ver[:4])
for v in ("3.10", "3.11", "3.12", "3.13", "3.14"):
    if v not in ran:
        print("pystack: no CPython %s here: not checked" % v)
if bad or not ran & {"3.11", "3.12", "3.13"}:
    sys.exit(1)
