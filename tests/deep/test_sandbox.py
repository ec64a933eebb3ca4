"""The pod sandbox gives a container what its pod has and nothing more (tests/deep/sandbox.py, pod.py).

Deep in what it proves, not in what it needs: root only (namespaces, chroot), no ../shared.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail

from . import sandbox
from .pod import Pod

SLURM = 401


@pytest.fixture(autouse=True)
def _root():
    why = sandbox.missing()
    if why:
        skip_or_fail(why)


def _pod(tmp_path: Path, script: str, **spec) -> Pod:
    """A pod of one container running `script`, with a ConfigMap, a Secret and an emptyDir."""
    container = {"name": "c", "command": ["/bin/sh", "-c", script],
                 "volumeMounts": [{"name": "conf", "mountPath": "/etc/app"},
                                  {"name": "conf", "mountPath": "/etc/one.conf", "subPath": "one.conf", "readOnly": True},
                                  {"name": "key", "mountPath": "/etc/key", "readOnly": True},
                                  {"name": "scratch", "mountPath": "/run/app"}],
                 **spec.pop("container", {})}
    pod_spec = {"containers": [container],
                "volumes": [{"name": "conf", "configMap": {"name": "cm"}},
                            {"name": "key", "secret": {"secretName": "s", "defaultMode": 0o400,
                                                       "items": [{"key": "k", "path": "slurm.key"}]}},
                            {"name": "scratch", "emptyDir": {}}],
                **spec}
    root = tmp_path / "pod"
    root.mkdir(parents=True)
    root.chmod(0o755)
    return Pod(root, pod_spec, configmaps={"cm": {"one.conf": "a=1\n", "two.conf": "b=2\n"}},
               secrets={"s": {"k": b"secret"}})


def _run(pod: Pod) -> str:
    done = pod.run("c", timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_run_and_tmp_are_empty_and_no_socket_of_the_host_is_there(tmp_path):
    # GIVEN a socket of another process in the host's /run
    host = Path("/run") / f"sandbox-test-{os.getpid()}.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(host))
        try:
            # WHEN a container lists /run and /tmp
            out = _run(_pod(tmp_path, "ls -A /run /tmp; ls -ld /run /tmp | cut -c1-10"))
        finally:
            host.unlink()
    # THEN it sees only its own volume's mount point, nothing of the host
    assert out.split() == ["/run:", "app", "/tmp:", "drwxr-xr-x", "drwxrwxrwt"]


def test_volumes_are_laid_out_as_the_kubelet_does_with_fs_group(tmp_path):
    # GIVEN a pod that runs as 401 with fsGroup 401
    sc = {"runAsUser": SLURM, "runAsGroup": SLURM, "fsGroup": SLURM}
    script = ("id -u; id -G; stat -Lc '%a %u %g' /etc/key/slurm.key /etc/one.conf /run/app; cat /etc/one.conf;"
              "ls -A /etc/app | tr '\\n' ' '; echo; readlink /etc/app/two.conf; touch /etc/one.conf 2>/dev/null || echo read-only;"
              "touch /run/app/x && echo writable")
    out = _run(_pod(tmp_path, script, securityContext=sc)).splitlines()
    # THEN its user and groups are the pod's, the Secret's 0400 file gains group read for fsGroup,
    # a ConfigMap key is 0644, the emptyDir is group-owned and setgid, and subPath mounts the key's file
    assert out[0] == "401" and set(out[1].split()) == {"401"}
    assert out[2:5] == ["440 0 401", "644 0 401", "2777 0 401"]
    assert out[5] == "a=1"
    assert out[6].split() == ["..2026_01_01_00_00_00.000000001", "..data", "one.conf", "two.conf"]
    assert out[7] == "..data/two.conf"
    assert out[8:] == ["read-only", "writable"]


def test_the_env_is_the_containers_and_a_value_from_is_refused(tmp_path):
    # GIVEN a container with an env value, and one with a valueFrom
    pod = _pod(tmp_path, "echo $GREETING; env | cut -d= -f1 | sort | tr '\\n' ' '",
               container={"env": [{"name": "GREETING", "value": "hi"}]})
    # THEN it sees its value and only what a container runtime adds (no variable of the test process)
    out = _run(pod).splitlines()
    assert out[0] == "hi"
    assert set(out[1].split()) <= {"GREETING", "HOME", "HOSTNAME", "PATH", "PWD", "SHLVL", "_"}
    refused = _pod(tmp_path / "b", "true", container={"env": [{"name": "X", "valueFrom": {"secretKeyRef": {}}}]})
    with pytest.raises(ValueError, match="not a literal value"):
        refused.plan("c")


def test_nothing_the_container_started_outlives_it(tmp_path):
    # GIVEN a container that leaves a process behind it
    marker = f"sandbox-orphan-{os.getpid()}"
    _run(_pod(tmp_path, f"(exec -a {marker} sleep 300) & echo started"))
    # THEN that process is gone with the container's PID namespace
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout == "", left.stdout


def test_a_file_elsewhere_on_the_host_is_not_there(tmp_path):
    # GIVEN a file of another pod's, on the host outside every volume
    other = tmp_path / "other-pod.key"
    other.write_text("not yours")
    # WHEN a container looks for it at the same path THEN it is not there
    out = _run(_pod(tmp_path, f"test -e {other} && echo seen || echo absent"))
    assert out.strip() == "absent"
