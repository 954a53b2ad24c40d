"""Entry point of kope's Python bridge (see kope_bridge/serve.py)."""
import sys

from kope_bridge.serve import main

sys.exit(main())
