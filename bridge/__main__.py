"""``python -m raydap.bridge`` runs the ``raydap`` command line."""

import sys

from raydap.bridge.client.cli import main

sys.exit(main())
