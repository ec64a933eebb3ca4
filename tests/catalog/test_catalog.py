"""The packaged instance catalog matches the research table, and bad csv rows fail loudly."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest

from slurmgen.catalog.catalog import COLUMNS, CatalogError, InstanceType, load_catalog, parse_catalog

REFERENCE_CSV = Path(__file__).resolve().parents[3] / "shared" / "reference" / "instance_types.csv"
HEADER = ",".join(COLUMNS)


def reference_rows() -> list[dict[str, str]]:
    """Rows of the shared research table; a missing file is a test failure, never a skip."""
    if not REFERENCE_CSV.is_file():
        pytest.fail(f"reference table not found at {REFERENCE_CSV}; the catalog tests compare against it")
    with REFERENCE_CSV.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def write_csv(tmp_path: Path, *rows: str, name: str = "site.csv") -> Path:
    """A user catalog with two comment lines first, so line numbers in errors are checked too."""
    path = tmp_path / name
    path.write_text("\n".join(["# my site types", "# second comment", HEADER, *rows]) + "\n", encoding="utf-8")
    return path


def test_every_reference_row_is_in_the_catalog_with_the_same_hardware() -> None:
    # given the shared research table and the packaged catalog
    rows = reference_rows()
    catalog = load_catalog()
    assert len(rows) == 45
    for row in rows:
        # when the type is looked up
        it = catalog.get(row["instance_type"])
        # then it exists and every hardware figure agrees
        assert it is not None, f"{row['instance_type']} missing from slurmgen/catalog/instances.csv"
        name = it.instance_type
        assert it.vcpu == int(row["vcpu"]), name
        assert it.memory_mib == int(row["memory_gib"]) * 1024, name
        assert it.arch == row["cpu_arch"], name
        assert it.max_pods == int(row["max_pods_eni"]), name
        assert it.accelerator_resource == row["accelerator_resource"], name
        assert it.accelerator_count == int(row["accelerator_count"]), name
        assert it.accelerator_model == row["accelerator_model"].lower(), name
        assert it.efa_max == int(row["efa_max_interfaces"]), name
        assert it.local_nvme_gb == int(row["local_nvme_gb"] or 0), name
        if row["accel_mem_per_device_mib_ec2api"]:
            assert it.accelerator_memory_mib == int(row["accel_mem_per_device_mib_ec2api"]), name
        elif row["accelerator_resource"]:
            assert it.accelerator_memory_mib == round(float(row["accel_mem_per_device_gib"]) * 1024), name
        assert it.source.startswith("karpenter"), name


def test_properties_describe_the_hardware() -> None:
    # given a GPU type with EFA and NVMe, a Neuron type and a CPU-only type
    catalog = load_catalog()
    p5, trn2, m6i = catalog["p5.48xlarge"], catalog["trn2.48xlarge"], catalog["m6i.large"]
    # then the convenience properties agree with the columns
    assert (p5.has_accelerator, p5.is_nvidia, p5.is_neuron, p5.has_efa, p5.has_nvme) == (True, True, False, True, True)
    assert (trn2.is_nvidia, trn2.is_neuron) == (False, True)
    assert (m6i.has_accelerator, m6i.has_efa, m6i.has_nvme) == (False, False, False)
    assert catalog["p6-b200.48xlarge"].family == "p6-b200"
    assert p5.memory_gib == 2048 and p5.name == "p5.48xlarge"


def test_default_catalog_is_cached_and_read_only() -> None:
    # given two loads of the default catalog
    first, second = load_catalog(), load_catalog()
    # then the same parsed object is shared and cannot be mutated by a caller
    assert first is second
    with pytest.raises(TypeError):
        first["x.large"] = first["m6i.large"]  # type: ignore[index]


def test_user_csv_adds_and_overrides_types(tmp_path: Path) -> None:
    # given a user csv adding an arm64 type and overriding p5's max pods
    extra = write_csv(
        tmp_path,
        "m7g.xlarge,4,16384,arm64,58,,0,,0,0,0,user",
        "p5.48xlarge,192,2097152,amd64,110,nvidia.com/gpu,8,h100,81920,32,30400,user",
    )
    # when the catalog is loaded with it
    catalog = load_catalog(extra)
    # then the new type is there, the override wins, and the cached default is untouched
    assert catalog["m7g.xlarge"].arch == "arm64"
    assert catalog["p5.48xlarge"].max_pods == 110
    assert catalog["p5.48xlarge"].source == "user"
    assert load_catalog()["p5.48xlarge"].max_pods == 100
    assert "m7g.xlarge" not in load_catalog()
    assert len(catalog) == len(load_catalog()) + 1


def test_quoted_source_and_empty_optional_numbers_are_accepted(tmp_path: Path) -> None:
    # given a row whose source contains a comma (quoted) and whose optional numbers are empty
    extra = write_csv(tmp_path, 'c7i.large,2,4096,amd64,29,,,,,,,"user, measured"')
    # when it is loaded
    it = load_catalog(extra)["c7i.large"]
    # then empty optional cells read as 0 and the quoted cell keeps its comma
    assert (it.accelerator_count, it.efa_max, it.local_nvme_gb, it.source) == (0, 0, 0, "user, measured")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            "x1.large,2,8192,amd64,29,,0,,0,0,user",
            "site.csv:4: expected 12 columns (" + HEADER + "), got 11",
        ),
        ("x1.large,two,8192,amd64,29,,0,,0,0,0,user", "site.csv:4: vcpu must be a positive integer, got 'two'"),
        ("x1.large,0,8192,amd64,29,,0,,0,0,0,user", "site.csv:4: vcpu must be a positive integer, got '0'"),
        ("x1.large,2,8192,amd64,29,,0,,0,-1,0,user", "site.csv:4: efa_max must be a non-negative integer, got '-1'"),
        ("x1.large,2,8192,amd64,29,,0,,0,1.5,0,user", "site.csv:4: efa_max must be a non-negative integer, got '1.5'"),
        ("x1.large,2,8192,x86_64,29,,0,,0,0,0,user", "site.csv:4: arch must be one of amd64, arm64, got 'x86_64'"),
        (
            "x1.large,2,8192,amd64,29,,4,,0,0,0,user",
            "site.csv:4: accelerator_count is 4 but accelerator_resource is empty",
        ),
        (
            "x1.large,2,8192,amd64,29,nvidia.com/gpu,0,h100,0,0,0,user",
            "site.csv:4: accelerator_resource is nvidia.com/gpu but accelerator_count is 0",
        ),
        (
            "x1.large,2,8192,amd64,29,,0,h100,0,0,0,user",
            "site.csv:4: accelerator_model is 'h100' but accelerator_resource is empty",
        ),
        (
            "x1.large,2,8192,amd64,29,nvidia.com/gpu,1,H100,0,0,0,user",
            "site.csv:4: accelerator_model must be lowercase [a-z0-9_-] (a Slurm GRES type), got 'H100'",
        ),
        (
            "x1.large,2,8192,amd64,29,nvidia.com/gpus,1,h100,0,0,0,user",
            "site.csv:4: accelerator_resource 'nvidia.com/gpus' is not one of amd.com/gpu, aws.amazon.com/neuron, "
            "aws.amazon.com/neuroncore, habana.ai/gaudi, nvidia.com/gpu",
        ),
        (
            "P5 48xlarge,2,8192,amd64,29,,0,,0,0,0,user",
            "site.csv:4: instance_type must look like an EC2 name (e.g. p5.48xlarge), got 'P5 48xlarge'",
        ),
    ],
)
def test_malformed_rows_name_file_line_and_problem(tmp_path: Path, row: str, message: str) -> None:
    # given a user csv whose only data row (line 4, after two comments and the header) is malformed
    extra = write_csv(tmp_path, row)
    # when it is loaded, then the error names file:line and what is wrong
    with pytest.raises(CatalogError) as err:
        load_catalog(extra)
    assert str(err.value) == f"{tmp_path}/{message}"


def test_duplicate_type_in_one_file_is_rejected(tmp_path: Path) -> None:
    # given the same type twice in one user csv
    row = "x1.large,2,8192,amd64,29,,0,,0,0,0,user"
    extra = write_csv(tmp_path, row, row)
    # when it is loaded, then both line numbers are reported
    with pytest.raises(CatalogError) as err:
        load_catalog(extra)
    assert str(err.value) == f"{extra}:5: duplicate instance_type x1.large (first defined on line 4)"


def test_wrong_header_and_empty_file_are_rejected() -> None:
    # given a csv with the columns in the wrong order, and one with no header at all
    swapped = HEADER.replace("vcpu,memory_mib", "memory_mib,vcpu")
    # when parsed, then the header problem is named with its line
    with pytest.raises(CatalogError, match=r"^bad\.csv:2: header must be instance_type,vcpu,memory_mib,"):
        parse_catalog(f"# comment\n{swapped}\n", "bad.csv")
    with pytest.raises(CatalogError, match=r"^empty\.csv: no header line; expected instance_type,"):
        parse_catalog("# only a comment\n\n", "empty.csv")


def test_unreadable_extra_file_is_a_catalog_error(tmp_path: Path) -> None:
    # given a path that does not exist
    missing = tmp_path / "nope.csv"
    # when loaded, then the error names the file instead of leaking a bare OSError
    with pytest.raises(CatalogError, match=r"nope\.csv: cannot read instance catalog"):
        load_catalog(missing)


def test_instance_type_is_frozen() -> None:
    # given a catalog entry, then it cannot be changed in place (the cache is shared)
    it: InstanceType = load_catalog()["g5.xlarge"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        it.vcpu = 8  # type: ignore[misc]
