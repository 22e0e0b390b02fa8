from graphrag_ray.cli import main

raise SystemExit(main())
