"""The KubeRay manifests in deploy/kuberay: the bridge's command line is one `raydap serve`
accepts, its token comes from the Secret, and the Service reaches the ports it listens on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from raydap.bridge.client.cli import build_parser
from raydap.bridge.server.auth import TokenError, load_tokens
from raydap.bridge.server.settings import Settings, cli_fields
from tests.kubernetes import (
    DEPLOY,
    IMAGE_UID,
    container_env,
    expand,
    manifest,
    service_variables,
    validate,
)


def bridge_container() -> tuple[dict[str, Any], dict[str, Any]]:
    pod = manifest("raycluster.yaml")["spec"]["headGroupSpec"]["template"]["spec"]
    [container] = [c for c in pod["containers"] if c.get("command") == ["raydap"]]
    return pod, container


def test_the_bridge_command_line_is_one_raydap_serve_accepts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, container = bridge_container()
    service = manifest("service.yaml")
    env = container_env(
        container, namespace="team-a", pod_ip="10.244.1.7",
        services=service_variables({"raydap": ("10.96.14.3", service["spec"]["ports"])}),
    )  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # RAYDAP_PORT=tcp://10.96.14.3:7800 among them
    args = build_parser().parse_args([expand(a, env) for a in container["args"]])
    assert args.command == "serve"
    settings = Settings(**{k: v for k, v in vars(args).items() if k in cli_fields()})
    assert settings.host == "0.0.0.0" and not settings.no_token  # reachable, so with tokens
    assert settings.token_file is not None
    # The Service's names in the pod's own namespace, short ones included
    assert {"raydap", "raydap.team-a", "raydap.team-a.svc"} <= set(settings.allowed_hosts)
    assert env["RAY_ADDRESS"] == "127.0.0.1:6379"  # what `raydap doctor` there reads
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert (ports["raydap-http"], ports["raydap-dap"]) == (settings.port, settings.dap_port)
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": settings.port}


def test_the_manifests_are_ones_kubernetes_and_kuberay_accept() -> None:
    assert validate(manifest("raycluster.yaml")) == []
    broken = manifest("raycluster.yaml")
    broken["spec"]["headGroupSpec"]["template"]["spec"]["sharedProcessNamespace"] = True
    broken["spec"]["headGroupSpec"]["template"]["spec"]["volumes"][0]["secret"]["defaultMode"] = (
        "0440"
    )
    assert validate(broken) == [
        "spec.headGroupSpec.template.spec.volumes.0.secret.defaultMode: '0440' is not of type "
        "'integer'",
        ".spec.headGroupSpec.template.spec.sharedProcessNamespace: unknown field",
    ]


def test_the_bridge_can_read_its_tokens_and_join_ray() -> None:
    """As the image's user: the Secret's files are root's, readable by the pod's fsGroup;
    the bridge's driver sees the raylet's process and Ray's session directory."""
    pod, container = bridge_container()
    [secret] = [v["secret"] for v in pod["volumes"] if "secret" in v]
    assert pod["securityContext"]["fsGroup"] == IMAGE_UID and secret["defaultMode"] & 0o040
    assert pod["shareProcessNamespace"] is True
    [ray_head] = [c for c in pod["containers"] if c is not container]
    shared = {m["name"] for m in ray_head["volumeMounts"] if m["mountPath"] == "/tmp/ray"}
    assert shared and shared <= {m["name"] for m in container["volumeMounts"]}


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
