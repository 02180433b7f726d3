from yoloprof.cli import main

raise SystemExit(main())
