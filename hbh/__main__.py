from hbh.cli import main

raise SystemExit(main())
