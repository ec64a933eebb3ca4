"""The rehearsal on a real kube-apiserver: every tests/specs cluster is accepted, and a hand-made
invalid object in a committed tree is refused, named with its file and the API server's words."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES, REPO


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES])
def test_every_spec_cluster_is_accepted_by_the_api_server(name, dist_tree, server):
    from rehearse.play import play

    # GIVEN the tests' spec rendered into a dist/ tree
    # WHEN every object is applied with server-side dry-run
    outcome = play(server.client, dist_tree / name, lambda _msg: None)
    # THEN the API server accepts each one (schema, CEL, defaulting, admission)
    refusals = [f"{o.file.relative_to(dist_tree)} ({o.label}): {m}" for o, m in outcome.refused]
    assert refusals == []
    assert len(outcome.accepted) == sum(1 for _ in (dist_tree / name).rglob("*.yaml"))
    assert server.version.startswith("v1.34.")


def _nodepool_file(tree: Path) -> Path:
    return sorted(tree.rglob("nodepool-*.yaml"))[0]


# Argo CD applies a directory Application's objects with kubectl's client-side apply, unless the
# object's sync-options annotation asks for server-side apply: the rehearsal plays both paths.
def user_cache_env() -> dict[str, str]:
    """The test's environment with the user's XDG_CACHE_HOME: the command line finds the programs that
    `make rehearse-build` built there (the tests' own cache folder is private and empty)."""
    from tests.conftest import USER_ENVIRON

    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    if "XDG_CACHE_HOME" in USER_ENVIRON:
        env["XDG_CACHE_HOME"] = USER_ENVIRON["XDG_CACHE_HOME"]
    return env


@pytest.mark.parametrize("server_side", [False, True], ids=["client-side-apply", "server-side-apply"])
def test_a_nodepool_outside_its_enum_fails_the_rehearsal_and_is_named(server_side, dist_tree, bin_dir, tmp_path):
    # GIVEN a committed tree in which one NodePool's consolidationPolicy was edited by hand
    name = "dev"
    dist = tmp_path / "dist"
    shutil.copytree(dist_tree / name, dist / name)
    broken = _nodepool_file(dist / name)
    pool = yaml.safe_load(broken.read_text())
    pool["spec"]["disruption"]["consolidationPolicy"] = "WhenIdle"
    if server_side:
        pool["metadata"].setdefault("annotations", {})["argocd.argoproj.io/sync-options"] = "ServerSideApply=true"
    broken.write_text(yaml.safe_dump(pool, sort_keys=False))
    # WHEN `make rehearse` plays it (the command line, as a user runs it)
    run = subprocess.run([sys.executable, "-m", "rehearse", "--dist", str(dist), "--cluster", name],
                         cwd=REPO, capture_output=True, text=True, timeout=600, env=user_cache_env())
    # THEN it fails, naming the file, the object, the field and the API server's words
    assert run.returncode == 1, run.stderr
    refused = [line for line in run.stdout.splitlines() if line.startswith("  REFUSED ")]
    assert len(refused) == 1, run.stdout
    assert str(broken) in refused[0] and f"NodePool {pool['metadata']['name']}" in refused[0]
    assert 'spec.disruption.consolidationPolicy: Unsupported value: "WhenIdle"' in refused[0]
    # AND the cluster's line counts it
    line = run.stdout.splitlines()[-1]
    total = sum(1 for _ in (dist / name).rglob("*.yaml"))
    assert re.fullmatch(rf"rehearse {name}: {total - 1} objects accepted by kube-apiserver v1\.34\.\d+ \(dry-run\), "
                        r"1 refused, \d+\.\ds", line), line


@pytest.mark.parametrize("validate", [True, False], ids=["strict", "Validate=false"])
def test_an_unknown_field_is_refused_unless_the_object_turns_validation_off(validate, dist_tree, server, tmp_path):
    from rehearse.play import play

    # GIVEN a tree in which one NodeSet carries a field its CRD does not declare (a typo of a key)
    shutil.copytree(dist_tree / "dev", tmp_path / "dev")
    path = sorted((tmp_path / "dev").rglob("nodeset-*.yaml"))[0]
    nodeset = yaml.safe_load(path.read_text())
    nodeset["spec"]["replica"] = 1
    if not validate:
        nodeset["metadata"].setdefault("annotations", {})["argocd.argoproj.io/sync-options"] = "Validate=false"
    path.write_text(yaml.safe_dump(nodeset, sort_keys=False))
    # WHEN it is played
    outcome = play(server.client, tmp_path / "dev", lambda _msg: None)
    # THEN Argo CD's default (strict field validation) refuses it, naming the field; Validate=false lets it through
    refused = {o.file: m for o, m in outcome.refused}
    if validate:
        assert list(refused) == [path]
        assert 'unknown field "spec.replica"' in refused[path]
    else:
        assert refused == {}


def _processes_mentioning(text: str) -> list[int]:
    """Pids whose command line or environment contains `text` (Linux /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and any(text.encode() in (proc / part).read_bytes() for part in ("cmdline", "environ")):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _names(pids: list[int]) -> list[str]:
    """The programs of `pids`, for a failure's message."""
    return [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace") for pid in pids]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_rehearsal_stops_every_process_it_started(signum, dist_tree, bin_dir):
    # GIVEN a rehearsal whose etcd and kube-apiserver are starting
    run = subprocess.Popen([sys.executable, "-m", "rehearse", "--dist", str(dist_tree), "--cluster", "dev"],
                           cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=user_cache_env())
    assert run.stderr is not None
    workdir = ""
    for line in run.stderr:
        workdir = re.search(r"data in (\S+)\)", line).group(1) if "data in" in line else workdir
        if "starting kube-apiserver" in line:
            break
    deadline = time.monotonic() + 30
    while len(_processes_mentioning(workdir)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workdir and len(_processes_mentioning(workdir)) == 2
    # WHEN it is interrupted
    run.send_signal(signum)
    rest = run.communicate(timeout=60)[1]
    # THEN it says so, and neither process nor its folder is left
    assert run.returncode == (130 if signum == signal.SIGINT else 143), rest
    assert _processes_mentioning(workdir) == []
    assert not Path(workdir).exists()


def test_the_kubeconfig_reaches_the_api_server_as_the_admin(server):
    from rehearse.client import ApiClient

    # GIVEN the kubeconfig a later component (a controller, Argo CD) would be given
    config = json.loads(server.kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    # WHEN a client is built from it alone
    client = ApiClient(cluster["server"], config["users"][0]["user"]["token"], Path(cluster["certificate-authority"]))
    # THEN it is served on loopback, trusted through the server's own certificate, and may do anything (RBAC)
    assert cluster["server"].startswith("https://127.0.0.1:")
    review = client.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "*", "group": "*", "resource": "*"}}})
    assert review.ok and review.body["status"]["allowed"] is True
    assert oct(server.kubeconfig.stat().st_mode & 0o777) == "0o600"


def test_a_rehearsal_interrupted_while_argo_cd_syncs_stops_every_process_it_started(dist_tree, bin_dir):
    # GIVEN a rehearsal in its sync stage: Argo CD, the controllers, kwok and redis are running
    env = {**user_cache_env(), "SLURMGEN_CHART_PULL": "0"}
    run = subprocess.Popen([sys.executable, "-m", "rehearse", "--dist", str(dist_tree), "--cluster", "dev"],
                           cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    assert run.stderr is not None
    workdirs, redis = [], ""
    for line in run.stderr:
        if "data in" in line:
            workdirs.append(re.search(r"data in (\S+)\)", line).group(1))
        if "starting redis-server on" in line:  # redis retitles itself "redis-server 127.0.0.1:PORT"
            redis = "redis-server " + re.search(r"on (127\.0\.0\.1:\d+)", line).group(1)
        if "Argo CD syncs" in line:
            break
    sync_dir = workdirs[-1]
    started = _processes_mentioning(sync_dir) + _processes_mentioning(redis)
    # etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, redis and Argo CD's two
    assert len(workdirs) == 2 and redis and len(started) == 8, _names(started)
    # WHEN it is interrupted (Ctrl-C)
    run.send_signal(signal.SIGINT)
    rest = run.communicate(timeout=120)[1]
    # THEN it exits 130 and leaves no process and no folder of either stage
    assert run.returncode == 130, rest
    for workdir in workdirs:
        assert _processes_mentioning(workdir) == []
        assert not Path(workdir).exists()
    assert _processes_mentioning(redis) == []


def test_without_any_chart_the_sync_stage_says_so_at_once(dist_tree, bin_dir):
    # GIVEN no chart folder and no pulling
    env = {**user_cache_env(), "SLURMGEN_CHART_PULL": "0"}
    env.pop("SLURMGEN_CHART_DIR", None)
    # WHEN the rehearsal runs both stages
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "rehearse", "--dist", str(dist_tree), "--cluster", "dev"],
                         cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    # THEN it fails at once (no 15-minute wait for waves that cannot converge), saying what is missing and the fix
    assert run.returncode == 1
    line = run.stdout.splitlines()[-1]
    assert line.startswith("rehearse dev: FAILED: the sync stage needs the pinned Helm charts and found none"), line
    assert "SLURMGEN_CHART_DIR" in line and time.monotonic() - started < 120
