from lsp_agent.cli import main

raise SystemExit(main())
