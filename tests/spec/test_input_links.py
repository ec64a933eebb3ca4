"""Inputs are never read through a symbolic link (issue 23 D): a spec or instance-types.csv
committed as a link to a credentials file must not be read, so its text cannot reach an error
line in CI logs."""

from __future__ import annotations

from slurmgen.cli import main
from tests.conftest import MINIMAL_SPEC

SECRET = "aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"


def test_a_spec_that_is_a_link_is_refused_without_reading_it(tmp_path, capsys):
    # GIVEN a spec that is a link to a credentials file outside the repository
    creds = tmp_path / "home" / "credentials"
    creds.parent.mkdir()
    creds.write_text(f"[default]\n{SECRET}\n")
    spec = tmp_path / "clusters" / "t.yaml"
    spec.parent.mkdir()
    spec.symlink_to(creds)
    # WHEN synth runs on it THEN one line, exit 2, nothing of the file in the output
    rc = main(["--spec", str(spec), "--out", str(tmp_path / "dist")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.splitlines() == [f"{spec}: is a symbolic link; inputs are read only as regular files, never through a "
                                "link (copy the file, or name a shared spec in extends:)"]
    assert "wJalr" not in err and "aws_secret" not in err


def test_a_site_csv_that_is_a_link_is_refused_without_reading_it(tmp_path, capsys):
    # GIVEN a valid spec beside an instance-types.csv that is a link to a credentials file
    creds = tmp_path / "credentials"
    creds.write_text(f"{SECRET}\n")
    folder = tmp_path / "clusters"
    folder.mkdir()
    (folder / "t.yaml").write_text(MINIMAL_SPEC)
    (folder / "instance-types.csv").symlink_to(creds)
    # WHEN synth runs THEN refused, and the file's text is not shown
    rc = main(["--spec", str(folder / "t.yaml"), "--out", str(tmp_path / "dist")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "is a symbolic link" in err and "wJalr" not in err and "aws_secret" not in err
