from myotwin.cli.main import main

raise SystemExit(main())
