"""Prices outside us-east-1: the summary prices a us-west-2 or eu-west-1 cluster, says which table each
price came from and which on-demand types have none; the generator reads each pinned source and the
Price List API (through a fake client: no network, no boto3)."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from slurmgen.catalog import generate_prices as gen
from slurmgen.catalog.pricing import PriceError, load_prices, parse_priced_rows
from tests.review.test_summary import spec_text, summary_between

ONE_PARTITION = "[{name: gpu, nodesets: [gpu]}]"


def test_a_us_west_2_cluster_gets_an_on_demand_cost_and_its_source(tmp_path, capsys):
    # GIVEN the starter's GPU type on demand in the starter's region, 2 nodes doubled to 4
    old, new = (spec_text(f"[{{name: gpu, instanceType: g6.12xlarge, replicas: {n}}}]", ONE_PARTITION, "us-west-2")
                for n in (2, 4))
    # WHEN the change is summarized with the packaged prices only
    summary = summary_between(tmp_path, capsys, old, new)
    # THEN the headline has a cost: 2 → 4 × $4.6016/h
    assert "- cost (on-demand): $9.20/h → $18.41/h now and at the ceiling\n" in summary
    # AND names where the price came from, for that region
    assert "- price source: on-demand, us-west-2, SkyPilot catalog 001367d (AWS Price List, undated)\n" in summary
    assert "On-demand list prices in us-west-2, USD per hour (SkyPilot catalog 001367d" in summary
    assert "no price" not in summary


def test_an_eu_west_1_cluster_gets_a_cost_and_names_the_type_without_a_price(tmp_path, capsys):
    # GIVEN two m7i.2xlarge in eu-west-1, then a third and an on-demand p5.48xlarge nodeset beside them
    cpu = "{name: cpu, instanceType: m7i.2xlarge, replicas: %d}"
    old = spec_text(f"[{cpu % 2}]", "[{name: cpu, nodesets: [cpu]}]", "eu-west-1")
    new = spec_text(f"[{cpu % 3}, {{name: gpu, instanceType: p5.48xlarge, replicas: 1}}]",
                    "[{name: cpu, nodesets: [cpu]}, {name: gpu, nodesets: [gpu]}]", "eu-west-1")
    summary = summary_between(tmp_path, capsys, old, new)
    # THEN the CPU nodes are priced at eu-west-1's list price (2 → 3 × $0.4494/h) ...
    assert "- cost (on-demand): $0.90/h → $1.35/h now and at the ceiling" in summary
    # AND the type with no eu-west-1 row is named, never counted as $0
    assert ("- price source: on-demand, eu-west-1, SkyPilot catalog 001367d (AWS Price List, undated); "
            "no price there for p5.48xlarge (add it to clusters/prices.csv)\n") in summary
    assert "$0.00" not in summary


def test_each_packaged_row_names_its_source_and_us_east_1_stays_karpenters():
    prices = load_prices()
    # GIVEN the packaged table, THEN us-east-1 is Karpenter's and the other regions SkyPilot's excerpt
    assert prices.source_of("us-east-1", "p5.48xlarge") == "Karpenter v1.14.1 on-demand list prices (2026-07-06)"
    assert prices.on_demand("us-west-2", "g5.8xlarge") == 2.448
    assert prices.on_demand("eu-west-1", "m7i.4xlarge") == 0.8988
    assert prices.source_of("eu-west-1", "m7i.4xlarge") == "SkyPilot catalog 001367d (AWS Price List, undated)"
    assert prices.source_of("us-west-2", "p5.48xlarge") is None  # not covered: no price, no guess


# -- the csv's optional source column -------------------------------------------------------------------------

def test_a_source_key_without_its_header_line_is_refused():
    text = "region,instance_type,usd_per_hour,source\nus-west-2,m7i.large,0.1008,mystery\n"
    with pytest.raises(PriceError, match=r"x:2: source 'mystery' has no '#   source mystery: LABEL' header line"):
        parse_priced_rows(text, "x")


def test_a_site_csv_may_carry_its_own_source_labels(tmp_path):
    # GIVEN a site csv written by the Price List API refresh, with its own source line
    site = tmp_path / "prices.csv"
    site.write_text("#   source price-list-api: AWS Price List API (2026-09-01)\n"
                    "region,instance_type,usd_per_hour,source\nus-west-2,p5.48xlarge,55.04,price-list-api\n"
                    "eu-west-1,p5.48xlarge,56,\n")
    prices = load_prices(site)
    # THEN its rows win and carry its label; a row without a key is the file's
    assert prices.source_of("us-west-2", "p5.48xlarge") == "AWS Price List API (2026-09-01)"
    assert prices.source_of("eu-west-1", "p5.48xlarge") == "prices.csv for 2 row(s)"
    assert prices.source_of("us-east-1", "p5.48xlarge").startswith("Karpenter v1.14.1")


# -- the generator: SkyPilot's catalog -------------------------------------------------------------------------

COMMIT = "001367d22a0033fac286a8c71aeac7109e431bcb"
VMS = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone\n"
    "g6.12xlarge,L4,4.0,48.0,192.0,\"{'Gpus': [{'Name': 'L4', 'Count': 4}], 'TotalGpuMemoryInMiB': 91552}\","
    "4.6016,1.7,us-west-2,usw2-az1\n"
    "g6.12xlarge,L4,4.0,48.0,192.0,\"{'Gpus': [{'Name': 'L4', 'Count': 4}], 'TotalGpuMemoryInMiB': 91552}\","
    "4.6016,,us-west-2,usw2-az2\n"
    "m7i.large,,,2.0,8.0,,0.11235,0.05,eu-west-1,euw1-az1\n"
    "m7i.large,,,2.0,8.0,,0.1302,0.05,cn-north-1,cnn1-az1\n"
    "x9.huge,,,2.0,8.0,,9.9,0.05,eu-west-1,euw1-az1\n"
)


def test_the_skypilot_catalog_gives_one_price_per_region_for_the_wanted_types():
    # GIVEN vms.csv lines (a quoted GpuInfo cell with commas, two zones, China, a type nobody asked for)
    source = gen.skypilot_source("vms.csv", VMS, COMMIT, ["g6.12xlarge", "m7i.large"])
    # THEN one row per (region, type), USD regions only, and the commit in the provenance
    assert source.rows == {("us-west-2", "g6.12xlarge"): "4.6016", ("eu-west-1", "m7i.large"): "0.11235"}
    assert source.label == "SkyPilot catalog 001367d (AWS Price List, undated)"
    assert f"skypilot-org/skypilot-catalog@{COMMIT} catalogs/v7/aws/vms.csv, column Price" in source.notes


def test_zones_of_one_region_must_agree_and_the_commit_must_be_whole():
    bad = VMS.replace("4.6016,,us-west-2", "4.7,,us-west-2")
    with pytest.raises(gen.SourceError, match="vms.csv: data line 3: g6.12xlarge in us-west-2 costs 4.7"):
        gen.skypilot_source("vms.csv", bad, COMMIT, ["g6.12xlarge"])
    with pytest.raises(gen.SourceError, match="full 40-hex commit"):
        gen.skypilot_source("vms.csv", VMS, "001367d", ["g6.12xlarge"])


def test_an_earlier_source_wins_and_a_disagreement_is_written_down():
    first = gen.Source("karpenter", "K", [], {("us-east-1", "m7i.large"): "0.1008"})
    later = gen.Source("skypilot", "S", [], {("us-east-1", "m7i.large"): "0.2", ("us-west-2", "m7i.large"): "0.1008"})
    rows, checks = gen.merge([first, later])
    assert rows == {("us-east-1", "m7i.large"): ("0.1008", "karpenter"), ("us-west-2", "m7i.large"): ("0.1008", "skypilot")}
    assert checks == ["skypilot: 1 row(s) also in an earlier source, 1 differ (kept the earlier: "
                      "us-east-1,m7i.large 0.1008 vs 0.2)"]


# -- the generator: the AWS Price List API, through a fake boto3 client -----------------------------------------

def product(itype: str, usd: str) -> str:
    return json.dumps({"product": {"attributes": {"instanceType": itype}},
                       "terms": {"OnDemand": {"T1": {"priceDimensions": {"D1": {"pricePerUnit": {"USD": usd}}}}}}})


class FakePricing:
    """Answers get_products pages per (region, tenancy) and records every call's filters."""

    def __init__(self, pages: dict[tuple[str, str], list[list[str]]]) -> None:
        self.pages, self.calls = pages, []

    def get_paginator(self, operation_name: str) -> Any:
        assert operation_name == "get_products"
        return self

    def paginate(self, **kwargs: Any) -> list[dict[str, Any]]:
        self.calls.append(kwargs)
        filters = {f["Field"]: f["Value"] for f in kwargs["Filters"]}
        return [{"PriceList": page} for page in self.pages.get((filters["regionCode"], filters["tenancy"]), [])]


def test_the_price_list_refresh_writes_a_site_csv_with_its_source(capsys):
    # GIVEN the API's pages for us-west-2: two shared-tenancy pages and a bare-metal one
    client = FakePricing({("us-west-2", "Shared"): [[product("p5.48xlarge", "55.0400000000")],
                                                    [product("m7i.large", "0.1008000000"), product("zz.none", "1")]],
                          ("us-west-2", "Dedicated"): [[product("m7i.metal-24xl", "4.8384000000")]]})
    # WHEN the maintenance command runs with it
    code = gen.main(["--price-list-api", "us-west-2", "--types", "p5.48xlarge,m7i.large,m7i.metal-24xl"],
                    client=client, today=datetime.date(2026, 9, 1))
    out = capsys.readouterr().out
    # THEN the csv has the catalog types' prices, each naming the API and the date
    assert code == 0
    assert out.endswith("region,instance_type,usd_per_hour,source\nus-west-2,m7i.large,0.1008,price-list-api\n"
                        "us-west-2,m7i.metal-24xl,4.8384,price-list-api\nus-west-2,p5.48xlarge,55.04,price-list-api\n")
    assert "#   source price-list-api: AWS Price List API (2026-09-01)\n" in out
    # AND it asked with Karpenter's filters: Linux, on demand, no pre-installed software, capacity used
    filters = {f["Field"]: f["Value"] for f in client.calls[0]["Filters"]}
    assert filters | {"regionCode": "us-west-2"} == filters
    assert {"operatingSystem": "Linux", "marketoption": "OnDemand", "preInstalledSw": "NA",
            "capacitystatus": "Used", "tenancy": "Shared", "productFamily": "Compute Instance"}.items() <= filters.items()
    # AND what it wrote is a valid site prices.csv
    assert load_prices_from_text(out)[("us-west-2", "p5.48xlarge")] == (55.04, "price-list-api")


def test_a_region_with_no_price_at_all_is_one_line_and_exit_2(capsys):
    code = gen.main(["--price-list-api", "us-west-9", "--types", "m7i.large"], client=FakePricing({}),
                    today=datetime.date(2026, 9, 1))
    assert code == 2
    assert capsys.readouterr().err == ("--price-list-api: no on-demand Linux price for any catalog type in "
                                       "us-west-9; is the region name right and the pricing:GetProducts "
                                       "permission granted?\n")


def load_prices_from_text(text: str) -> dict[tuple[str, str], tuple[float, str | None]]:
    return parse_priced_rows(text, "out.csv")

