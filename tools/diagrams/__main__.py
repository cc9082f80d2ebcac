import sys

from tools.diagrams import main

sys.exit(main())
