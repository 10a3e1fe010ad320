import sys

from bot.runtime.cli import main

sys.exit(main())
