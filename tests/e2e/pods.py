"""Pods as Kubernetes runs them, from a manifest's own pod template, on this machine: what the
KubeRay tests run deploy/kuberay in.

- A pod is a network namespace, joined to others by veth links (its IP is the first
  address of its first link, its default route out of it, as a pod's).
- A container is a mount namespace and a PID namespace of its own (one for the whole pod with
  ``shareProcessNamespace``), with its own ``/tmp`` and ``/dev/shm``; it shares only the
  volumes the manifest mounts in it. Paths the image would have and this machine lacks
  (``/etc/raydap``) are made in an overlay, never on this machine.
- It runs as the image's user (Ray's: uid 1000, group 100), with the pod's ``fsGroup`` as a
  supplementary group and no capabilities (Kubernetes gives added ones to root only).
- A Secret volume is root-owned files with ``defaultMode`` (0644 unset), group ``fsGroup``
  where the pod sets one; an ``emptyDir`` is 0777 (group ``fsGroup``, setgid, where set).
- The environment is the kubelet's (:func:`tests.kubernetes.container_env`).

The "image" is this checkout's virtual environment. Every process is stopped by its pid.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from raydap.bridge.client.local_ray import process_tree, stop_process_tree
from tests.kubernetes import IMAGE_GID, IMAGE_HOME, IMAGE_UID, expand

#: This checkout: the image's raydap and the jobs the tests run.
ROOT = Path(__file__).resolve().parents[2]
#: The image's programs first: ``ray``, ``raydap``, ``py-spy`` and Python.
IMAGE_PATH = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"


def hidden_interpreter() -> tuple[Path, Path] | None:
    """Where this Python lives, when a folder others may not enter hides it (pyenv under a
    0700 ``/root``): that folder, and its child on the way to the interpreter. An image has
    its Python where its user reaches it: containers see that child alone in the folder."""
    real = Path(os.path.realpath(sys.base_prefix))
    for folder in reversed(real.parents):
        if folder != Path("/") and not folder.stat().st_mode & 0o001:
            return folder, real.parents[len(real.parents) - len(folder.parts) - 1]
    return None


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@dataclass
class Network:
    """Network namespaces (pods) and the links between them, removed at the end."""

    tag: str
    namespaces: list[str] = field(default_factory=list)
    links: int = 0

    def namespace(self, name: str) -> str:
        netns = f"{name}{self.tag}"
        ip("netns", "add", netns)
        ip("-n", netns, "link", "set", "lo", "up")
        self.namespaces.append(netns)
        return netns

    def link(
        self, a: str, a_ip: str, b: str, b_ip: str, *, default_for: tuple[str, ...] = ()
    ) -> None:
        """A /24 link between two namespaces; ``default_for``: whose default route it is."""
        self.links += 1
        name = f"rk{self.tag}{self.links}"
        ip("link", "add", f"{name}a", "type", "veth", "peer", "name", f"{name}b")
        for netns, device, address in ((a, f"{name}a", a_ip), (b, f"{name}b", b_ip)):
            ip("link", "set", device, "netns", netns)
            ip("-n", netns, "addr", "add", f"{address}/24", "dev", device)
            ip("-n", netns, "link", "set", device, "up")
            if netns in default_for:
                ip("-n", netns, "route", "add", "default", "dev", device)

    def remove(self) -> None:
        for netns in self.namespaces:
            subprocess.run(["ip", "netns", "del", netns], capture_output=True)


@dataclass
class Container:
    name: str
    process: subprocess.Popen[bytes]
    env: dict[str, str]
    uid: int
    groups: list[int]
    log: Path

    @property
    def main_pid(self) -> int:
        """The container's own process, as this machine numbers it."""
        for _ in range(200):  # once the launchers and the shell that mounts are replaced
            with contextlib.suppress(psutil.Error):
                children = psutil.Process(self.process.pid).children()
                started = children[0].cmdline()[:1] if children else []
                if started and started[0] not in ("ip", "nsenter", "unshare", "/bin/sh"):
                    return children[0].pid
            time.sleep(0.05)
        raise AssertionError(f"container {self.name} started nothing: {self.log.read_text()}")

    def exec(self, command: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """``kubectl exec`` into it: its namespaces, its user, its environment."""
        entered = ["nsenter", f"--target={self.main_pid}", "--net", "--pid", "--mount", "--",
                   *as_user(self.uid, self.groups, self.env), *command]  # fmt: skip
        return subprocess.Popen(entered, start_new_session=True, **kwargs)


def as_user(uid: int, groups: list[int], env: dict[str, str]) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={groups[0]}",
            f"--groups={','.join(map(str, groups))}", "--inh-caps=-all", "--bounding-set=-all",
            "env", "-i", *(f"{k}={v}" for k, v in env.items())]  # fmt: skip


class Pod:
    """One pod of a manifest's template, in a network namespace of its own."""

    def __init__(
        self, name: str, spec: dict[str, Any], netns: str, base: Path,
        secrets: dict[str, dict[str, str]],
    ) -> None:  # fmt: skip
        self.name, self.spec, self.netns = name, spec, netns
        self.base = base / name
        self.base.mkdir(parents=True)
        self.base.chmod(0o755)
        self.containers: dict[str, Container] = {}
        self.pause: subprocess.Popen[bytes] | None = None
        context = spec.get("securityContext") or {}
        self.fs_group: int | None = context.get("fsGroup")
        self.volumes = {v["name"]: self._volume(v, secrets) for v in spec.get("volumes") or []}

    def _volume(self, volume: dict[str, Any], secrets: dict[str, dict[str, str]]) -> Path:
        path = self.base / f"volume-{volume['name']}"
        path.mkdir()
        group = self.fs_group if self.fs_group is not None else 0
        if "secret" in volume:
            mode = volume["secret"].get("defaultMode", 0o644)
            for key, text in secrets[volume["secret"]["secretName"]].items():
                (path / key).write_text(text)
                os.chown(path / key, 0, group)
                (path / key).chmod(mode)
            path.chmod(0o755)
        elif "emptyDir" in volume:
            os.chown(path, 0, group)
            path.chmod(0o2777 if self.fs_group is not None else 0o777)
        else:
            raise NotImplementedError(f"volume {volume['name']}: only secret and emptyDir")
        return path

    def _shared_pid_namespace(self) -> int | None:
        """The pause container's pid where the pod shares one PID namespace."""
        if not self.spec.get("shareProcessNamespace"):
            return None
        if self.pause is None:
            self.pause = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, "unshare", "--pid", "--fork", "--mount",
                 "--propagation", "private", "--mount-proc", "sleep", "infinity"],
                start_new_session=True,
            )  # fmt: skip
        for _ in range(100):
            children = psutil.Process(self.pause.pid).children()
            if children:
                return children[0].pid
            time.sleep(0.05)
        raise AssertionError("the pause container did not start")

    def start(
        self, container: dict[str, Any], env: dict[str, str], command: list[str] | None = None
    ) -> Container:
        """Run a container of this pod: ``command`` where the manifest gives none (KubeRay's
        ``ray start`` for Ray's containers)."""
        name = container["name"]
        given = [*(container.get("command") or []), *(container.get("args") or [])]
        argv = [expand(a, env) for a in given] if given else list(command or [])
        context = container.get("securityContext") or {}
        uid = context.get(
            "runAsUser", (self.spec.get("securityContext") or {}).get("runAsUser", IMAGE_UID)
        )
        groups = [IMAGE_GID, *([self.fs_group] if self.fs_group is not None else [])]
        home = self.base / f"{name}-home"
        home.mkdir()
        os.chown(home, uid, IMAGE_GID)
        env = {**env, "PATH": IMAGE_PATH}
        kept, restored = self._image_under_tmp(name)
        script = ["set -e", "mount -t proc proc /proc", *self._interpreter(name), *kept,
                  "mount -t tmpfs -o mode=1777 tmpfs /tmp",
                  "mount -t tmpfs -o mode=1777 tmpfs /dev/shm", *restored]  # fmt: skip
        mounts = [(IMAGE_HOME, home, False)] + [
            (m["mountPath"], self.volumes[m["name"]], bool(m.get("readOnly")))
            for m in container.get("volumeMounts") or []
        ]
        for index, (target, source, read_only) in enumerate(mounts):
            script += self._mount(name, index, target, source, read_only)
        script.append("exec " + shlex.join([*as_user(uid, groups, env), *argv]))
        shared = self._shared_pid_namespace()
        enter = (["nsenter", f"--target={shared}", "--pid", "--", "unshare", "--mount"]
                 if shared is not None else ["unshare", "--pid", "--fork", "--mount"])  # fmt: skip
        log = self.base / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, *enter, "--propagation", "private",
                 "/bin/sh", "-c", "\n".join(script)],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.containers[name] = Container(name, process, env, uid, groups, log)
        return self.containers[name]

    def _image_under_tmp(self, container: str) -> tuple[list[str], list[str]]:
        """The image's files (this checkout and its virtual environment) where they lie under
        ``/tmp``, which each container gets empty (a fresh clone in /tmp, as CI's): shell lines
        that keep them aside before, and put them back after."""
        roots: list[Path] = []
        for path in sorted({Path(os.path.realpath(p)) for p in (ROOT, sys.prefix)}):
            if path.is_relative_to("/tmp") and not any(path.is_relative_to(r) for r in roots):
                roots.append(path)
        kept, restored = [], []
        for index, path in enumerate(roots):
            stage = self.base / f"{container}-image{index}"
            stage.mkdir()
            kept.append(f"mount --bind {shlex.quote(str(path))} {stage}")
            restored += [f"mkdir -p {shlex.quote(str(path))}",
                         f"mount --bind {stage} {shlex.quote(str(path))}"]  # fmt: skip
        return kept, restored

    def _interpreter(self, container: str) -> list[str]:
        hidden = hidden_interpreter()
        if hidden is None:
            return []
        folder, child = hidden
        stage = self.base / f"{container}-python"
        stage.mkdir()
        return [f"mount --bind {child} {stage}", f"mount -t tmpfs -o mode=755 tmpfs {folder}",
                f"mkdir -p {child}", f"mount --bind {stage} {child}"]  # fmt: skip

    def _mount(
        self, container: str, index: int, target: str, source: Path, read_only: bool
    ) -> list[str]:
        """Shell lines that mount ``source`` at ``target``; a missing parent is made in an
        overlay of its nearest existing ancestor (never on this machine)."""
        lines = []
        target_path = Path(target)
        if not target_path.is_relative_to("/tmp") and not target_path.exists():
            ancestor = next(p for p in target_path.parents if p.exists())
            if ancestor == Path("/") or self.base.is_relative_to(ancestor):
                raise AssertionError(f"cannot overlay {ancestor} for {target}")
            layer = self.base / f"{container}-overlay{index}"
            (layer / "upper").mkdir(parents=True)
            (layer / "work").mkdir()
            lines.append(f"mount -t overlay overlay -o lowerdir={ancestor},upperdir="
                         f"{layer / 'upper'},workdir={layer / 'work'} {ancestor}")  # fmt: skip
        lines += [f"mkdir -p {shlex.quote(target)}",
                  f"mount --bind {shlex.quote(str(source))} {shlex.quote(target)}"]  # fmt: skip
        if read_only:
            lines.append(f"mount -o remount,bind,ro {shlex.quote(target)}")
        return lines

    def processes(self) -> list[int]:
        """The pod's own processes (its containers' and its pause process), by pid."""
        started = [c.process for c in self.containers.values()]
        return [p.pid for p in (*started, *([self.pause] if self.pause else []))]

    def reap(self) -> None:
        for process in (*(c.process for c in self.containers.values()), self.pause):
            if process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=10)


def stop_pods(pods: list[Pod], grace: float = 3.0) -> None:
    """Every process of every pod at once: SIGTERM, then SIGKILL after ``grace`` seconds (as
    the kubelet does, with a shorter grace), each by pid."""
    roots = [pid for pod in pods for pid in pod.processes()]
    if roots:
        first, *rest = roots
        stop_process_tree(first, grace=grace,
                          also=lambda: {m for r in rest for m in process_tree(r)})  # fmt: skip
    for pod in pods:
        pod.reap()
