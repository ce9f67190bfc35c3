"""What Kubernetes and KubeRay do with a pod template before a container runs, for tests of
deploy/kuberay: read from the manifests themselves, so that what is tested is what users apply.

- :func:`validate`: the manifest against KubeRay's RayCluster CRD (``../shared/kuberay``, read
  in place), strictly: an unknown field is an error, as ``kubectl apply --validate=strict``.
- :func:`container_env`: a container's environment as the kubelet makes it (the Service
  variables of the namespace, the ``env`` list with the downward API, ``$(VAR)`` expanded),
  plus KubeRay's variables in Ray's own container.
- :func:`expand`: ``$(VAR)`` in ``command``, ``args`` and ``env`` values.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy" / "kuberay"
CRD = ROOT.parent / "shared" / "kuberay" / "ray.io_rayclusters.yaml"

#: What Ray's images are: their user (``ray``, uid 1000, group ``users``) and its home.
IMAGE_UID, IMAGE_GID, IMAGE_HOME = 1000, 100, "/home/ray"


def manifest(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((DEPLOY / name).read_text()))


@cache
def _schema(version: str = "v1") -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    [found] = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return dict(found["schema"]["openAPIV3Schema"])


def validate(document: dict[str, Any]) -> list[str]:
    """What the API server (strict) would refuse in a RayCluster: schema errors and unknown
    fields, each with its path."""
    schema = _schema(document["apiVersion"].split("/")[-1])
    validator = jsonschema.Draft7Validator(schema)
    problems = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
                for e in validator.iter_errors(document)]  # fmt: skip
    problems += _unknown_fields(document, schema, "")
    return problems


def _unknown_fields(value: Any, schema: dict[str, Any], where: str) -> list[str]:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    if isinstance(value, dict):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        found = []
        for key, item in value.items():
            if properties is not None and key in properties:
                found += _unknown_fields(item, properties[key], f"{where}.{key}")
            elif isinstance(extra, dict):
                found += _unknown_fields(item, extra, f"{where}.{key}")
            elif properties is not None and where not in (".metadata",):
                found.append(f"{where}.{key}: unknown field")
        return found
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [p for i, item in enumerate(value)
                for p in _unknown_fields(item, schema["items"], f"{where}[{i}]")]  # fmt: skip
    return []


_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)``: replaced by VAR's value where VAR is defined, kept as written
    where not; ``$$`` is a ``$``."""

    def one(found: re.Match[str]) -> str:
        if found.group(0) == "$$":
            return "$"
        return env.get(found.group(1), found.group(0))

    return _REFERENCE.sub(one, text)


def service_variables(services: dict[str, tuple[str, list[dict[str, Any]]]]) -> dict[str, str]:
    """The variables the kubelet puts in every container of a namespace for each Service
    (``{name: (cluster_ip, ports)}``), as Docker links name them."""
    found: dict[str, str] = {}
    for name, (address, ports) in services.items():
        prefix = name.upper().replace("-", "_")
        found[f"{prefix}_SERVICE_HOST"] = address
        for index, port in enumerate(ports):
            number, protocol = port["port"], port.get("protocol", "TCP")
            if index == 0:
                found[f"{prefix}_SERVICE_PORT"] = str(number)
                found[f"{prefix}_PORT"] = f"{protocol.lower()}://{address}:{number}"
            if port.get("name"):
                found[f"{prefix}_SERVICE_PORT_{port['name'].upper().replace('-', '_')}"] = str(
                    number
                )
            link = f"{prefix}_PORT_{number}_{protocol}"
            found[link] = f"{protocol.lower()}://{address}:{number}"
            found[f"{link}_PROTO"] = protocol.lower()
            found[f"{link}_PORT"] = str(number)
            found[f"{link}_ADDR"] = address
    return found


def container_env(
    container: dict[str, Any],
    *,
    namespace: str,
    pod_ip: str,
    services: dict[str, str],
    kuberay: dict[str, str] | None = None,
) -> dict[str, str]:
    """A container's environment, in the kubelet's order: the namespace's Service variables,
    KubeRay's (Ray's container only), then the container's own ``env`` (later wins)."""
    env = {"HOME": IMAGE_HOME, "PATH": "/usr/local/bin:/usr/bin:/bin", **services,
           **(kuberay or {})}  # fmt: skip
    fields = {"metadata.namespace": namespace, "status.podIP": pod_ip}
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = expand(str(item["value"]), env)
        else:
            env[item["name"]] = fields[item["valueFrom"]["fieldRef"]["fieldPath"]]
    return env
