import sys

from tools.site import main

sys.exit(main())
