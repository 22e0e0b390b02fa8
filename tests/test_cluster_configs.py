"""The files in cluster/: Ray's own schema for the launcher configs; for KubeRay (whose CRD
schema is not available offline) the fields the operator requires and the choices this project
relies on (autoscaling, a CPU-less head, token auth, the pinned Ray version)."""

from pathlib import Path

import pytest
import yaml

CLUSTER = Path(__file__).resolve().parents[1] / "cluster"
RAY_VERSION = "2.60.0"


@pytest.mark.parametrize("name", ["aws.yaml", "gcp.yaml"])
def test_launcher_configs_pass_rays_schema(name):
    from ray.autoscaler._private.util import fillout_defaults, validate_config

    config = yaml.safe_load((CLUSTER / name).read_text())
    validate_config(fillout_defaults(config))  # raises on any schema violation
    head = config["available_node_types"][config["head_node_type"]]
    assert head["resources"] == {"CPU": 0}  # actors go to workers; the driver and Leiden stay
    workers = [t for n, t in config["available_node_types"].items() if n != config["head_node_type"]]
    assert workers and all(t["max_workers"] > t["min_workers"] for t in workers)
    assert f"ray[default,data]=={RAY_VERSION}" in " ".join(config["setup_commands"])
    start = " ".join(config["head_start_ray_commands"] + config["worker_start_ray_commands"])
    assert start.count("RAY_AUTH_MODE=token") == 2
    local_requirements = config["file_mounts"]["/home/ubuntu/graphrag-ray-requirements.txt"]
    assert (CLUSTER.parent / local_requirements).is_file()


def _pod_specs(cluster_spec: dict) -> list[dict]:
    groups = [cluster_spec["headGroupSpec"], *cluster_spec["workerGroupSpecs"]]
    return [group["template"]["spec"] for group in groups]


@pytest.mark.parametrize("name", ["kuberay-raycluster.yaml", "kuberay-rayjob.yaml"])
def test_kuberay_manifests_have_what_the_operator_requires(name):
    manifest = yaml.safe_load((CLUSTER / name).read_text())
    assert manifest["apiVersion"] == "ray.io/v1"
    assert manifest["metadata"]["name"]
    spec = manifest["spec"]
    if manifest["kind"] == "RayJob":
        assert spec["entrypoint"].startswith("python -m graphrag_ray index")
        assert yaml.safe_load(spec["runtimeEnvYAML"])["working_dir"].startswith("s3://")
        assert spec["shutdownAfterJobFinishes"] is True
        cluster_spec = spec["rayClusterSpec"]
    else:
        assert manifest["kind"] == "RayCluster"
        cluster_spec = spec
    assert cluster_spec["rayVersion"] == RAY_VERSION
    assert cluster_spec["enableInTreeAutoscaling"] is True
    assert cluster_spec["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    for group in cluster_spec["workerGroupSpecs"]:
        assert group["groupName"] and group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
    for pod in _pod_specs(cluster_spec):
        container = pod["containers"][0]
        assert container["image"] and container["resources"]["requests"]["cpu"]
        env = {e["name"]: e for e in container["env"]}
        assert env["RAY_AUTH_MODE"]["value"] == "token"
        # Secrets come from Kubernetes secrets, never inline values.
        for secret in ("RAY_AUTH_TOKEN", "OPENAI_API_KEY"):
            assert "value" not in env[secret] and env[secret]["valueFrom"]["secretKeyRef"]


def test_node_requirements_cover_the_runtime_dependencies():
    import tomllib

    project = tomllib.loads((CLUSTER.parent / "pyproject.toml").read_text())["project"]
    declared = {line.split(">")[0].split("=")[0].split("[")[0].strip()
                for line in (CLUSTER / "requirements.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#")}
    needed = {dep.split(">")[0].split("=")[0].split("[")[0].strip()
              for dep in project["dependencies"]}  # s3fs among them
    assert needed - {"ray"} <= declared


def _serve_apps(config: dict) -> list:
    from ray.serve.schema import ServeDeploySchema

    return ServeDeploySchema.model_validate(config).applications


def test_serve_configs_pass_serves_schema_and_build_the_application(monkeypatch):
    """cluster/serve.yaml and the RayService's serveConfigV2: Ray Serve's own schema, and
    the builder they name makes the application from their args (keys required)."""
    from graphrag_ray.errors import GraphRagError
    from graphrag_ray.serve import runner

    serve_file = yaml.safe_load((CLUSTER / "serve.yaml").read_text())
    service = yaml.safe_load((CLUSTER / "kuberay-rayservice.yaml").read_text())
    assert service["kind"] == "RayService"
    assert service["spec"]["rayClusterConfig"]["rayVersion"] == RAY_VERSION
    embedded = yaml.safe_load(service["spec"]["serveConfigV2"])
    for config in (serve_file, embedded):
        (app,) = _serve_apps(config)
        assert app.import_path == "graphrag_ray.serve.runner:app_builder"
        monkeypatch.delenv("GRAPHRAG_SERVE_API_KEYS", raising=False)
        with pytest.raises(GraphRagError, match="GRAPHRAG_SERVE_API_KEYS is not set"):
            runner.app_builder(app.args)
        monkeypatch.setenv("GRAPHRAG_SERVE_API_KEYS", "a-key")
        built = runner.app_builder(app.args)
        options = built._bound_deployment._deployment_config
        assert options.autoscaling_config.max_replicas == app.args["max_replicas"]
    for pod in _pod_specs(service["spec"]["rayClusterConfig"]):
        env = {e["name"]: e for e in pod["containers"][0]["env"]}
        for secret in ("RAY_AUTH_TOKEN", "OPENAI_API_KEY", "GRAPHRAG_SERVE_API_KEYS"):
            assert "value" not in env[secret] and env[secret]["valueFrom"]["secretKeyRef"]
