"""``python -m interactive_recsys.cli``: the ``irs`` command."""

import sys

from interactive_recsys.cli._main import main

sys.exit(main())
