import sys

from connote.cli import main

sys.exit(main())
