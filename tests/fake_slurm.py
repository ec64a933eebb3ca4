"""A tiny stand-in for `sackd` and `sacctmgr`, enough to run the accounts Job's script for real.

Like the real clients (auth/slurm: SchedMD/slurm slurm-26-05-1-1 src/common/sack_api.c), every
sacctmgr call fails unless sackd's socket exists. slurmdbd's state is a JSON file ($FAKE_STATE):
{"qos": {name: description}, "accounts": {name: description},
"assocs": [[account, user, parent, cluster]]};
mutating calls are appended to $FAKE_LOG. $FAKE_FAIL names `delete` targets that fail (jobs running).
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import time
from pathlib import Path


def sackd(argv: list[str]) -> int:
    run = Path(os.environ["FAKE_RUN"])
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write("sackd " + " ".join(argv) + "\n")
    if "--conf-server" not in argv:
        return 1  # nothing to fetch slurm.conf from
    (run / "conf").mkdir(parents=True, exist_ok=True)
    (run / "conf" / "slurm.conf").write_text("ClusterName=x\n")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(run / "sack.socket"))
    server.listen()
    time.sleep(60)
    return 0


def _options(line: str) -> dict[str, str]:
    return {k.lower(): quoted or bare for k, quoted, bare in re.findall(r":(\w+)=(?:'([^']*)'|([^:]*))", line)}


def _load(state: dict, path: str) -> None:
    parent, cluster = "root", ""
    for line in Path(path).read_text().splitlines():
        head = re.match(r"^(QOS|Cluster|Parent|Account|User) - '([^']+)'", line)
        if not head:
            continue
        title, name = head.groups()
        opts = _options(line)
        if title == "Cluster":
            cluster = name
        elif title == "QOS":
            state["qos"][name] = opts.get("description", "")
        elif title == "Parent":
            parent = name
        elif title == "Account":
            state["accounts"][name] = opts.get("description", "")
            if [name, "", parent, cluster] not in state["assocs"]:
                state["assocs"].append([name, "", parent, cluster])
        elif title == "User" and [parent, name, "", cluster] not in state["assocs"]:
            state["assocs"].append([parent, name, "", cluster])


def sacctmgr(argv: list[str]) -> int:
    if not Path(os.environ["FAKE_RUN"], "sack.socket").exists():
        print("sacctmgr: error: auth/slurm: cannot connect to sack socket", file=sys.stderr)
        return 1
    args = [a for a in argv if a not in ("-i", "-nP")]
    state_path = Path(os.environ["FAKE_STATE"])
    state = json.loads(state_path.read_text())
    kv = dict(a.split("=", 1) for a in args[1:] if "=" in a)
    verb, what = args[0], args[1] if len(args) > 1 else ""
    if verb == "ping":
        return 0
    if verb == "show" and what == "qos":
        for name, desc in sorted(state["qos"].items()):
            if kv.get("name") in (None, name):
                print(name if kv["format"] == "name" else f"{name}|{desc}")
        return 0
    if verb == "show" and what == "account":
        for name, desc in sorted(state["accounts"].items()):
            print(f"{name}|{desc}")
        return 0
    if verb == "show" and what == "assoc":
        fields = {"account": 0, "user": 1, "parentname": 2}
        for assoc in state["assocs"]:
            if kv.get("cluster") in (None, assoc[3]):
                print("|".join(assoc[fields[f]] for f in kv["format"].split(",")))
        return 0
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write("sacctmgr " + " ".join(args) + "\n")
    if verb == "load":
        _load(state, kv["file"])
    elif verb == "delete":
        if f"{what}:{kv['name']}" in os.environ.get("FAKE_FAIL", "").split():
            print(f"Error: {what} {kv['name']} has running jobs", file=sys.stderr)
            return 1
        here = [a for a in state["assocs"] if kv.get("cluster") in (None, a[3])]
        if what == "user":
            state["assocs"].remove([kv["account"], kv["name"], "", kv["cluster"]])
        elif what == "account":
            if any(a[2] == kv["name"] for a in here):
                print(f"Error: account {kv['name']} still has children", file=sys.stderr)
                return 1
            # with cluster=, only that cluster's associations go (sacctmgr account_functions.c SA_SET_ASSOC)
            state["assocs"] = [a for a in state["assocs"] if a[0] != kv["name"] or a not in here]
            if "cluster" not in kv:
                del state["accounts"][kv["name"]]
        elif what == "qos":
            del state["qos"][kv["name"]]
    state_path.write_text(json.dumps(state))
    return 0


if __name__ == "__main__":
    tool = Path(sys.argv[0]).name
    sys.exit(sackd(sys.argv[1:]) if tool == "sackd" else sacctmgr(sys.argv[1:]))
