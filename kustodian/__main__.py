from kustodian.cli import main

raise SystemExit(main())
