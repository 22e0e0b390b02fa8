from graphrag_ray.cli import run

run()
