"""Every rendered container that runs a Slurm client brings the means to sign.

A Slurm 26.05 client never signs with slurm.key itself: it asks a sackd over a local socket
(SchedMD/slurm slurm-26-05-3-1 src/plugins/auth/slurm/auth_slurm.c init(), src/common/sack_api.c). A
container of ours has none of another container's sockets, so it must start its own sackd, with a run
folder it may write and a slurm.conf whose SlurmUser it may chown that folder to. This proves the
rendered objects say so; tests/deep/test_real_slurm.py runs them in a pod sandbox against real daemons.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

import pytest

CLIENTS = re.compile(r"(?m)^[^#\n]*\b(sacctmgr|scontrol|sinfo|squeue|sbatch|srun|sacct|sreport|sshare)\b")
SACKD = re.compile(r"(?m)^[^#\n]*\bsackd -D\b")


def _pods(obj: Any, where: str = "") -> Iterator[tuple[str, dict]]:
    """Every pod spec inside a rendered object (a Job's, a CR template's), with where it sits."""
    if isinstance(obj, dict):
        if isinstance(obj.get("containers"), list) or isinstance(obj.get("initContainers"), list):
            yield where, obj
        for key, value in obj.items():
            yield from _pods(value, f"{where}.{key}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _pods(value, f"{where}[{i}]")


def client_containers(files: dict[str, dict]) -> list[tuple[str, dict, dict]]:
    """(file and container, the container, its pod spec) for every container whose script runs a client."""
    out = []
    for path, obj in sorted(files.items()):
        for _, pod in _pods(obj):
            for c in [*pod.get("initContainers", []), *pod.get("containers", [])]:
                script = " ".join(c.get("command", []) + c.get("args", []))
                if CLIENTS.search(script):
                    out.append((f"{path}: {c['name']}", c, pod))
    return out


def _configmap(files: dict[str, dict], name: str) -> dict:
    (found,) = [o for o in files.values() if o.get("kind") == "ConfigMap" and o["metadata"]["name"] == name]
    return found


def test_the_examples_have_client_containers(rendered):
    # GIVEN the tests' clusters THEN the init container and the accounts Job are found (the walk sees them)
    names = {label.split(": ")[1] for c in rendered.values() for label, _, _ in client_containers(c.files)}
    assert names == {"qos-bootstrap", "sacctmgr"}


@pytest.mark.parametrize("cluster", ["example", "training", "prod", "dev"])
def test_every_container_that_runs_a_slurm_client_starts_sackd_first(rendered, cluster):
    files = rendered[cluster].files
    for label, container, pod in client_containers(files):
        script = container["command"][-1]
        # THEN sackd starts before the first client call, and the clients are told its socket
        sackd, first = SACKD.search(script), CLIENTS.search(script)
        assert sackd and first and sackd.start() < first.start(), label
        assert "export SLURM_SACK_SOCKET=/run/slurm/sack/sack.socket" in script, label
        assert "RUNTIME_DIRECTORY=/run/slurm/sack sackd" in script, label
        # AND /run/slurm is an emptyDir of the pod (the image's /run belongs to root)
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert "emptyDir" in volumes[mounts["/run/slurm"]], label
        # AND the slurm.conf it reads says SlurmUser=slurm, whom sackd makes its folder's owner
        conf = [m for m in container["volumeMounts"] if m["mountPath"] == "/etc/slurm/slurm.conf"]
        (mount,) = conf
        cm = _configmap(files, volumes[mount["name"]]["configMap"]["name"])
        assert "SlurmUser=slurm" in cm["data"][mount["subPath"]].splitlines(), label
        # AND slurm.key is mounted beside it, where sackd --key-file reads it
        assert "/etc/slurm/slurm.key" in mounts, label
