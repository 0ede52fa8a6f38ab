"""`python -m lsp_server` is the same program as the `agent-edit` console script."""

import sys

from lsp_server.cli import main

sys.exit(main())
