"""The KubeRay manifests in deploy/kuberay: the bridge's command line is one `raydap serve`
accepts, its token comes from the Secret, and the Service reaches the ports it listens on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from raydap.bridge.client.cli import build_parser
from raydap.bridge.server.auth import TokenError, load_tokens
from raydap.bridge.server.settings import Settings, cli_fields

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "kuberay"


def manifest(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((DEPLOY / name).read_text()))


def bridge_container() -> tuple[dict[str, Any], dict[str, Any]]:
    pod = manifest("raycluster.yaml")["spec"]["headGroupSpec"]["template"]["spec"]
    [container] = [c for c in pod["containers"] if c.get("command") == ["raydap"]]
    return pod, container


def test_the_bridge_command_line_is_one_raydap_serve_accepts() -> None:
    _, container = bridge_container()
    args = build_parser().parse_args(container["args"])
    assert args.command == "serve"
    settings = Settings(**{k: v for k, v in vars(args).items() if k in cli_fields()})
    assert settings.host == "0.0.0.0" and not settings.no_token  # reachable, so with tokens
    assert settings.token_file is not None
    assert "raydap.default.svc" in settings.allowed_hosts
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert (ports["raydap-http"], ports["raydap-dap"]) == (settings.port, settings.dap_port)
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": settings.port}


def test_the_token_file_comes_from_the_secret_and_the_placeholder_is_refused(
    tmp_path: Path,
) -> None:
    pod, container = bridge_container()
    args = build_parser().parse_args(container["args"])
    [mount] = [
        m for m in container["volumeMounts"] if str(args.token_file).startswith(m["mountPath"])
    ]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    secret = manifest("secret.yaml")
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    placeholder = tmp_path / "tokens"
    placeholder.write_text(secret["stringData"][Path(args.token_file).name])
    with pytest.raises(TokenError, match="shorter than 16"):
        load_tokens(placeholder, None)


def test_the_service_targets_the_bridge_of_the_head_pod() -> None:
    _, container = bridge_container()
    service = manifest("service.yaml")
    names = {p["name"] for p in container["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= names
    assert service["spec"]["selector"]["ray.io/node-type"] == "head"
    assert service["spec"]["type"] == "ClusterIP"  # not exposed outside the cluster


def test_every_container_runs_the_image_with_raydap() -> None:
    """A job's live hook is imported by its workers: stock Ray's image on the worker pods would
    stop every worker of such a job (docs/live.md)."""
    cluster = manifest("raycluster.yaml")["spec"]
    pods = [cluster["headGroupSpec"]["template"]["spec"]] + [
        group["template"]["spec"] for group in cluster["workerGroupSpecs"]
    ]
    images = {c["image"] for pod in pods for c in pod["containers"]}
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    built_as = dockerfile.split("-t ", 1)[1].split()[0]
    assert images == {built_as}
    assert "pip install" in dockerfile
