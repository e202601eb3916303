"""l2_window_none.py - l2_window.py without the persisting set-aside and window (the same
kernels; compare their time with the window)."""
import runpy
import sys

sys.argv = [sys.argv[0], "--none"]
runpy.run_path(__file__.replace("l2_window_none.py", "l2_window.py"), run_name="__main__")
