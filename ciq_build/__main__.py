from ciq_build.cli import main

raise SystemExit(main())
