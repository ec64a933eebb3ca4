"""The packaged instance catalog is Karpenter's reference, generated; bad csv rows fail loudly."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import pytest

from slurmgen.catalog import generate
from slurmgen.catalog.catalog import (
    COLUMNS, KARPENTER_VERSION, OPTIONAL_COLUMNS, CatalogError, InstanceType, default_catalog_text, load_catalog,
    parse_catalog,
)

REFERENCE_MD = Path(__file__).resolve().parents[3] / "shared" / "reference" / "karpenter-instance-types-v1.14.1.md"
# The 12 required columns: what a minimal site csv (clusters/instance-types.csv) has.
HEADER = ",".join(c for c in COLUMNS if c not in OPTIONAL_COLUMNS)


def write_csv(tmp_path: Path, *rows: str, name: str = "site.csv", header: str = HEADER) -> Path:
    """A user catalog with two comment lines first, so line numbers in errors are checked too."""
    path = tmp_path / name
    path.write_text("\n".join(["# my site types", "# second comment", header, *rows]) + "\n", encoding="utf-8")
    return path


def provenance() -> dict[str, str]:
    """The `#   key: value` lines of the packaged csv's generated header."""
    return dict(re.findall(r"^#\s+(source|karpenter|sha256|types):\s+(\S+)$", default_catalog_text(), re.M))


def test_packaged_catalog_records_where_it_was_generated_from() -> None:
    # given the packaged csv, when its header is read
    header = provenance()
    # then it names the reference page, the Karpenter version the sizing follows, a sha256 and the row count
    assert header["source"] == "karpenter-instance-types-v1.14.1.md"
    assert header["karpenter"] == f"v{KARPENTER_VERSION}"
    assert re.fullmatch(r"[0-9a-f]{64}", header["sha256"])
    assert int(header["types"]) == len(load_catalog()) == 1336


def test_every_packaged_row_is_valid_and_the_lazy_catalog_agrees() -> None:
    # given the packaged csv parsed eagerly (every cell validated) and the lazily parsed default catalog
    eager = parse_catalog(default_catalog_text(), "instances.csv")
    lazy = load_catalog()
    # then both hold the same types with the same facts, every one of them from Karpenter's page
    assert list(eager) == list(lazy)
    assert all(lazy[name] == it for name, it in eager.items())
    assert {it.source for it in eager.values()} == {"karpenter", "karpenter+neuron-docs"}


@pytest.mark.parametrize(
    ("name", "facts"),
    [
        # (vcpu, memory_mib, arch, max_pods, resource, count, model, maker, efa, nvme, neuron cores)
        ("p5.4xlarge", (16, 262144, "amd64", 118, "nvidia.com/gpu", 1, "h100", "nvidia", 1, 3800, 0)),
        ("c7i.48xlarge", (192, 393216, "amd64", 737, "", 0, "", "", 1, 0, 0)),
        ("hpc7a.96xlarge", (192, 786432, "amd64", 100, "", 0, "", "", 2, 0, 0)),
        ("g4dn.12xlarge", (48, 196608, "amd64", 234, "nvidia.com/gpu", 4, "t4", "nvidia", 1, 900, 0)),
        ("trn2.48xlarge", (192, 2097152, "amd64", 100, "aws.amazon.com/neuron", 16, "trainium2", "aws", 16, 7600, 128)),
        ("g4ad.16xlarge", (64, 262144, "amd64", 234, "amd.com/gpu", 4, "radeon-pro-v520", "amd", 0, 2400, 0)),
        ("dl1.24xlarge", (96, 786432, "amd64", 737, "habana.ai/gaudi", 8, "gaudi-hl-205", "habana", 4, 4000, 0)),
        ("c7g.16xlarge", (64, 131072, "arm64", 737, "", 0, "", "", 1, 0, 0)),
        # fractional L4: GPU labels, but Karpenter advertises no nvidia.com/gpu, so CPU-only here
        ("g6f.xlarge", (4, 16384, "amd64", 58, "", 0, "", "", 0, 100, 0)),
    ],
)
def test_new_types_carry_karpenters_labels(name: str, facts: tuple[object, ...]) -> None:
    # given a type the hand-written catalog did not have, when looked up
    it = load_catalog()[name]
    # then its facts are Karpenter's labels and resources for it
    got = (it.vcpu, it.memory_mib, it.arch, it.max_pods, it.accelerator_resource, it.accelerator_count,
           it.accelerator_model, it.accelerator_manufacturer, it.efa_max, it.local_nvme_gb, it.neuron_cores)
    assert got == facts


def test_generated_catalog_equals_a_fresh_parse_of_the_reference_page() -> None:
    # given the research copy of Karpenter's page (optional: shared/ is not a runtime dependency)
    if not REFERENCE_MD.is_file():
        pytest.skip(f"{REFERENCE_MD} is absent; the committed instances.csv is tested on its own")
    text = REFERENCE_MD.read_text(encoding="utf-8")
    # when the generator runs on it
    fresh = generate.render(text, file_name=REFERENCE_MD.name, version=KARPENTER_VERSION)
    # then it reproduces the committed file byte for byte, and the recorded sha256 is the page's
    assert fresh == default_catalog_text()
    assert provenance()["sha256"] == hashlib.sha256(text.encode("utf-8")).hexdigest()


SAMPLE_PAGE = """\
## x9 Family
### `x9.large`
#### Labels
 | Label | Value |
 |--|--|
 |karpenter.k8s.aws/instance-cpu|2|
 |karpenter.k8s.aws/instance-gpu-count|0|
 |karpenter.k8s.aws/instance-gpu-name|l4|
 |karpenter.k8s.aws/instance-memory|8192|
 |kubernetes.io/arch|arm64|
#### Resources
 | Resource | Quantity |
 |--|--|
 |cpu|1930m|
 |memory|6937Mi|
 |pods|29|
### `x9.2xlarge`
#### Labels
 | Label | Value |
 |--|--|
 |karpenter.k8s.aws/instance-accelerator-count|2|
 |karpenter.k8s.aws/instance-accelerator-manufacturer|aws|
 |karpenter.k8s.aws/instance-accelerator-name|inferentia2|
 |karpenter.k8s.aws/instance-cpu|8|
 |karpenter.k8s.aws/instance-memory|32768|
 |kubernetes.io/arch|amd64|
#### Resources
 | Resource | Quantity |
 |--|--|
 |aws.amazon.com/neuron|2|
 |aws.amazon.com/neuroncore|4|
 |cpu|7910m|
 |memory|29317Mi|
 |pods|58|
 |vpc.amazonaws.com/efa|1|
"""


def test_generator_maps_labels_and_resources_to_columns(tmp_path: Path) -> None:
    # given a two-type page (a fractional-GPU arm64 type, a Neuron type) written to a versioned file name
    source = tmp_path / "instance-types-v9.9.9.md"
    source.write_text(SAMPLE_PAGE, encoding="utf-8")
    out = tmp_path / "instances.csv"
    # when the generator runs
    assert generate.main([str(source), "--out", str(out)]) == 0
    # then the csv loads, records its provenance, and maps each figure
    text = out.read_text(encoding="utf-8")
    assert "#   karpenter: v9.9.9\n" in text and f"#   sha256:    {hashlib.sha256(SAMPLE_PAGE.encode()).hexdigest()}" in text
    types = parse_catalog(text, str(out))
    assert list(types) == ["x9.large", "x9.2xlarge"]
    small, neuron = types["x9.large"], types["x9.2xlarge"]
    assert (small.arch, small.accelerator_resource, small.accelerator_model, small.karpenter_memory_mi) == (
        "arm64", "", "", 6937)
    assert (neuron.accelerator_resource, neuron.accelerator_count, neuron.accelerator_model, neuron.neuron_cores,
            neuron.accelerator_memory_mib, neuron.efa_max, neuron.source) == (
        "aws.amazon.com/neuron", 2, "inferentia2", 4, 32768, 1, "karpenter+neuron-docs")


def test_generator_refuses_a_page_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # given a page whose cpu quantity is not in millicores, and one with no type sections
    broken = tmp_path / "types-v1.0.0.md"
    broken.write_text(SAMPLE_PAGE.replace("|cpu|1930m|", "|cpu|2|"), encoding="utf-8")
    empty = tmp_path / "empty-v1.0.0.md"
    empty.write_text("# nothing here\n", encoding="utf-8")
    out = tmp_path / "instances.csv"
    # when the generator runs on each, then it exits 2 naming the type and field, and writes nothing
    assert generate.main([str(broken), "--out", str(out)]) == 2
    assert "x9.large: cpu must look like 123m, got '2'" in capsys.readouterr().err
    assert generate.main([str(empty), "--out", str(out)]) == 2
    assert "no '### `type`' sections found" in capsys.readouterr().err
    assert not out.exists()


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
    # given a user csv (the 12 required columns) adding an arm64 type and overriding p5's max pods
    extra = write_csv(
        tmp_path,
        "zz7.xlarge,4,16384,arm64,58,,0,,0,0,0,user",
        "p5.48xlarge,192,2097152,amd64,110,nvidia.com/gpu,8,h100,81920,32,30400,user",
    )
    # when the catalog is loaded with it
    catalog = load_catalog(extra)
    # then the new type is there, the override wins, and the cached default is untouched
    assert catalog["zz7.xlarge"].arch == "arm64"
    assert catalog["zz7.xlarge"].karpenter_cpu_m == 0  # optional column left out: unknown
    assert catalog["p5.48xlarge"].max_pods == 110
    assert catalog["p5.48xlarge"].source == "user"
    assert load_catalog()["p5.48xlarge"].max_pods == 100
    assert "zz7.xlarge" not in load_catalog()
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


def test_columns_are_read_by_name_in_any_order(tmp_path: Path) -> None:
    # given a site csv with the full header in another order (source first)
    columns = ["source", *(c for c in COLUMNS if c != "source")]
    cells = {"source": "user", "instance_type": "zz8.large", "vcpu": "2", "memory_mib": "8192", "arch": "amd64",
             "max_pods": "29", "accelerator_manufacturer": "", "karpenter_cpu_m": "1930", "karpenter_memory_mi": "6903"}
    extra = write_csv(tmp_path, ",".join(cells.get(c, "") for c in columns), header=",".join(columns))
    # when loaded, then every cell lands in its own field
    it = load_catalog(extra)["zz8.large"]
    assert (it.vcpu, it.memory_mib, it.source, it.karpenter_cpu_m, it.karpenter_memory_mi) == (2, 8192, "user", 1930, 6903)


def test_wrong_header_and_empty_file_are_rejected() -> None:
    # given a header missing vcpu and naming an unknown column, and a csv with no header at all
    bad = HEADER.replace("vcpu,", "").replace(",source", ",source,colour")
    # when parsed, then the header problem is named with its line
    with pytest.raises(CatalogError, match=r"^bad\.csv:2: header must name the columns instance_type,vcpu,.*"
                                           r": unknown column\(s\) colour; missing column\(s\) vcpu$"):
        parse_catalog(f"# comment\n{bad}\n", "bad.csv")
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
