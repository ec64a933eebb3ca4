"""Growing FSx for Lustre: what Kubernetes, the CSI driver and FSx accept, checked at synth.

Read at the pinned versions (cited in slurmgen/verify/fsx_size.py): aws-fsx-csi-driver v1.9.0
ControllerExpandVolume calls fsx:UpdateFileSystem for a claim whose StorageClass allows expansion;
a static claim (storageClassName "") is refused by the API server; SCRATCH_1 file systems never grow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from slurmgen.cli import main
from slurmgen.plan.identity import grants
from slurmgen.spec import parse_text
from slurmgen.synth.build import render
from slurmgen.write.output import read_tree
from tests.spec_builder import spec_text

ROLE = "arn:aws:iam::111122223333:role/fsx-csi"
FS = "fs-0123456789abcdef0"


def dynamic(size: int, deployment: str = "PERSISTENT_2") -> str:
    extra = {"perUnitStorageThroughput": 250} if deployment.startswith("PERSISTENT") else {}
    return spec_text(aws={"accountId": "111122223333", "identity": {"roles": {"fsxCsiController": ROLE}}},
                     storage={"fsx": {"enabled": True, "mode": "dynamic", "sizeGiB": size, "zone": "us-west-2a",
                                      "deploymentType": deployment, "dynamic": {
                                          "subnetId": "subnet-0123456789abcdef0",
                                          "securityGroupIds": ["sg-0123456789abcdef0"], **extra}}})


def static(size: int) -> str:
    return spec_text(storage={"fsx": {"enabled": True, "sizeGiB": size, "zone": "us-west-2a", "static": {
        "fileSystemId": FS, "dnsName": f"{FS}.fsx.us-west-2.amazonaws.com", "mountName": "abc"}}})


def files(text: str) -> dict[str, Any]:
    [cluster] = render([parse_text("t.yaml", text)])
    return cluster.files


def synth(tmp_path: Path, text: str, *args: str) -> int:
    spec = tmp_path / "t.yaml"
    spec.write_text(text)
    return main(["--spec", str(spec), "--out", str(tmp_path / "dist"), *args])


def test_a_dynamic_storage_class_allows_expansion_unless_the_type_cannot_grow():
    # GIVEN a PERSISTENT_2 and a SCRATCH_1 dynamic file system
    grows = files(dynamic(1200))["storage/storageclass-t-fsx.yaml"]
    fixed = files(dynamic(1200, "SCRATCH_1"))["storage/storageclass-t-fsx.yaml"]
    # THEN only the one FSx can grow lets its claim grow (else the resize would fail in the driver forever)
    assert grows["allowVolumeExpansion"] is True
    assert "allowVolumeExpansion" not in fixed


def test_the_csi_role_may_grow_only_a_type_that_can_grow():
    # GIVEN the identity plans of a PERSISTENT_2 and a SCRATCH_1 dynamic file system
    def actions(text: str) -> set[str]:
        [grant] = grants(parse_text("t.yaml", text))
        return {a for s in grant.policy["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    # THEN UpdateFileSystem (what ControllerExpandVolume calls) is granted only where it can succeed
    assert "fsx:UpdateFileSystem" in actions(dynamic(1200))
    assert "fsx:UpdateFileSystem" not in actions(dynamic(1200, "SCRATCH_1"))


def test_a_dynamic_file_system_grows_over_the_committed_render(tmp_path, capsys):
    # GIVEN a dynamic PERSISTENT_2 file system rendered at 1200 GiB
    assert synth(tmp_path, dynamic(1200)) == 0
    # WHEN it is raised to 2400 GiB (a multiple of 2400, the increment UpdateFileSystem takes)
    rc = synth(tmp_path, dynamic(2400))
    # THEN synth accepts it and the claim asks for the new size from a class that allows it
    assert rc == 0, capsys.readouterr().err
    claim = yaml.safe_load((tmp_path / "dist/t/storage/persistentvolumeclaim-fsx.yaml").read_text())
    assert claim["spec"]["resources"]["requests"]["storage"] == "2400Gi"
    assert claim["spec"]["storageClassName"] == "t-fsx"


def test_a_shrink_is_a_spec_error_no_approval_can_pass(tmp_path, capsys):
    # GIVEN a dynamic file system rendered at 2400 GiB
    assert synth(tmp_path, dynamic(2400)) == 0
    before = read_tree(tmp_path / "dist")
    capsys.readouterr()
    # WHEN it is set to 1200 GiB, with the approval the generic shrink guard would have asked for
    rc = synth(tmp_path, dynamic(1200), "--allow-destroy", "t:PersistentVolumeClaim/fsx")
    # THEN exit 2: the spec line says to set it back, and the approval matches nothing
    err = capsys.readouterr().err.splitlines()
    assert rc == 2
    assert err[0].endswith(": storage.fsx.sizeGiB: 1200 GiB is less than the 2400 GiB of the claim slurm/fsx: an FSx "
                           "for Lustre file system cannot shrink and Kubernetes refuses a smaller claim; set it back "
                           "to 2400")
    assert err[1].startswith("--allow-destroy t:PersistentVolumeClaim/fsx: matches no destructive change")
    assert len(err) == 2
    assert read_tree(tmp_path / "dist") == before


def test_a_static_file_system_is_grown_with_the_aws_cli_not_the_claim(tmp_path, capsys):
    # GIVEN an existing file system rendered at 1200 GiB
    assert synth(tmp_path, static(1200)) == 0
    before = read_tree(tmp_path / "dist")
    capsys.readouterr()
    # WHEN its size is raised in the spec
    rc = synth(tmp_path, static(2400))
    # THEN exit 2 with the command that grows it, naming the spec's line, and nothing written
    [line] = capsys.readouterr().err.splitlines()
    assert rc == 2
    assert line.startswith(f"{tmp_path / 't.yaml'}:")
    assert ": storage.fsx.sizeGiB: 1200 -> 2400 GiB would resize the claim of an existing file system" in line
    assert f"`aws fsx update-file-system --region us-west-2 --file-system-id {FS} --storage-capacity 2400`" in line
    assert read_tree(tmp_path / "dist") == before


def test_the_summary_says_how_much_fsx_grows(tmp_path, capsys):
    # GIVEN a dynamic file system rendered at 1200 GiB
    assert synth(tmp_path, dynamic(1200)) == 0
    capsys.readouterr()
    # WHEN the change to 2400 GiB is summarized against that render
    (tmp_path / "t.yaml").write_text(dynamic(2400))
    assert main(["--spec", str(tmp_path / "t.yaml"), "--summary", "--base-dir", str(tmp_path / "dist")]) == 0
    summary = capsys.readouterr().out
    # THEN the headline and the note say the size before and after, and what the driver does
    assert "\n- grows FSx slurm/fsx from 1200 GiB to 2400 GiB\n" in summary
    assert ("- stateful: grows FSx slurm/fsx from 1200 GiB to 2400 GiB: the CSI driver calls UpdateFileSystem; "
            "takes minutes to hours") in summary
    assert "no change in capacity" not in summary
    assert "changes PersistentVolumeClaim slurm/fsx" not in summary


def test_allowing_expansion_on_an_existing_class_is_not_a_stateful_change(tmp_path, capsys):
    # GIVEN a dynamic file system's render from before its StorageClass allowed expansion
    assert synth(tmp_path, dynamic(1200)) == 0
    sc = tmp_path / "dist/t/storage/storageclass-t-fsx.yaml"
    sc.write_text(sc.read_text().replace("allowVolumeExpansion: true\n", ""))
    capsys.readouterr()
    # WHEN the same spec is summarized against it
    assert main(["--spec", str(tmp_path / "t.yaml"), "--summary", "--base-dir", str(tmp_path / "dist")]) == 0
    summary = capsys.readouterr().out
    # THEN the class is listed as changed, but no data is at stake (the field may change in place)
    assert "StorageClass t-fsx (allowVolumeExpansion)" in summary
    assert "stateful: changes StorageClass" not in summary
    assert "- changes nothing stateful" in summary
