"""``python -m dpfast [demo]``."""

import sys

from dpfast.cli import main

sys.exit(main())
