"""``python -m robotmem``: the same as the ``robotmem`` command (MCP over stdio when no command is given)."""

import sys

from robotmem.adapters.cli import main

sys.exit(main())
