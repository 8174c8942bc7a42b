"""Fast entry for Claude Code: ``python -I -S /path/to/precedents/hook/launch.py [session]``.

``-I -S`` skips site-packages (and their .pth files) and the user's
environment, which saves ~30 ms per message, but then nothing puts our package
on ``sys.path``: this file does, from its own location, and runs the hook.
Only ``os`` and ``sys`` (already loaded by the interpreter) are used here.
"""

import os
import sys

# .../<src or site-packages>/precedents/hook/launch.py -> .../<src or site-packages>
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from precedents.hook import main

sys.exit(main(sys.argv[1:]))
