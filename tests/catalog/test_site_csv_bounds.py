"""A site instance-types.csv cell is bounded (issue 23 E/F): 5,000 digits is one line, not
int()'s traceback; 30 digits of memory never reach RealMemory."""

from __future__ import annotations

import pytest

from slurmgen.catalog.catalog import CatalogError, parse_catalog

HEADER = ("instance_type,vcpu,memory_mib,arch,max_pods,accelerator_resource,accelerator_count,accelerator_model,"
          "accelerator_memory_mib,efa_max,local_nvme_gb,source\n")


@pytest.mark.parametrize("memory", ["9" * 5000, "1" + "0" * 29, "4294967295"])
def test_a_huge_integer_cell_is_one_line(memory):
    text = HEADER + f"x9.large,4,{memory},amd64,29,,0,,0,0,0,site\n"
    with pytest.raises(CatalogError) as err:
        parse_catalog(text, "site.csv")
    message = str(err.value)
    assert message.startswith("site.csv:2: memory_mib is ") and "above 4294967294" in message
    assert len(message) < 200


def test_the_largest_cell_is_read():
    catalog = parse_catalog(HEADER + "x9.large,4,4294967294,amd64,29,,0,,0,0,0,site\n", "site.csv")
    assert catalog["x9.large"].memory_mib == 4294967294
