"""Fast entry for Claude Code: ``python -I -S /path/to/precedents/hook/launch.py [session]``.

``-I -S`` skips site-packages (and their .pth files) and the user's
environment, which saves ~30 ms per message, but then nothing puts our package
on ``sys.path``: this file does, from its own location, and runs the hook.
Only ``sys`` is used here; ``__file__`` is absolute when Claude Code runs it.
"""

import sys

# .../<src or site-packages>/precedents/hook/launch.py -> .../<src or site-packages>
_here = __file__.replace("\\", "/")
sys.path.insert(0, _here.rsplit("/", 3)[0] if _here.count("/") >= 3 else ".")

from precedents.hook.core import main  # noqa: E402 - needs the path above

sys.exit(main(sys.argv[1:]))
