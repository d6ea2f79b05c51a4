"""RunAggregationQuery: count, count up_to, sum, avg, aliases."""

import math

import pytest
from fsutil import Int, aggregate, expect_rpc_error, ff, new_collection_id, put, put_many

SEED = {
    "a": {"v": 1, "i": 10, "grp": "x"},
    "b": {"v": 2, "i": 20, "grp": "x"},
    "c": {"v": 3.5, "i": 30, "grp": "y"},
    "d": {"v": "str", "i": 40, "grp": "y"},
    "e": {"v": None, "grp": "y"},
    "f": {"w": 1, "grp": "z"},
}


@pytest.fixture(scope="module")
def ac(client, database, root):
    cid = new_collection_id("agg")
    put_many(client, database, {f"{root}/{cid}/{k}": v for k, v in SEED.items()})
    return cid


def sq(cid, **extra):
    return {"from_": [{"collection_id": cid}], **extra}


def count(alias, up_to=None):
    c = {"count": {}}
    if up_to is not None:
        c["count"]["up_to"] = up_to
    return {"alias": alias, **c}


def sum_(alias, path):
    return {"alias": alias, "sum": {"field": {"field_path": path}}}


def avg(alias, path):
    return {"alias": alias, "avg": {"field": {"field_path": path}}}


def test_count(client, root, ac):
    assert aggregate(client, root, sq(ac), [count("n")]) == {"n": Int(6)}


def test_count_up_to(client, root, ac):
    assert aggregate(client, root, sq(ac), [count("n", up_to=4)]) == {"n": Int(4)}
    assert aggregate(client, root, sq(ac), [count("n", up_to=100)]) == {"n": Int(6)}


def test_count_with_filter_and_limit(client, root, ac):
    assert aggregate(client, root, sq(ac, where=ff("v", "GREATER_THAN", 1)), [count("n")]) == {"n": Int(2)}
    assert aggregate(client, root, sq(ac, where=ff("grp", "EQUAL", "y")), [count("n")]) == {"n": Int(3)}
    assert aggregate(client, root, sq(ac, limit=2), [count("n")]) == {"n": Int(2)}


def test_sum_integers_stays_integer(client, root, ac):
    assert aggregate(client, root, sq(ac), [sum_("total", "i")]) == {"total": Int(100)}


def test_sum_mixed_is_double_and_ignores_non_numbers(client, root, ac):
    assert aggregate(client, root, sq(ac), [sum_("total", "v")]) == {"total": 6.5}


def test_avg(client, root, ac):
    res = aggregate(client, root, sq(ac), [avg("mean", "v"), avg("mi", "i")])
    assert res["mean"] == pytest.approx(6.5 / 3)
    assert isinstance(res["mean"], float)
    assert res["mi"] == 25.0 and isinstance(res["mi"], float)


def test_multiple_aggregations_with_aliases(client, root, ac):
    res = aggregate(client, root, sq(ac, where=ff("grp", "EQUAL", "x")), [
        count("how_many"), sum_("total_v", "v"), avg("avg_i", "i"), count("capped", up_to=1),
    ])
    assert res == {"how_many": Int(2), "total_v": Int(3), "avg_i": 15.0, "capped": Int(1)}


def test_aggregations_on_empty_set(client, root, ac):
    res = aggregate(client, root, sq(ac, where=ff("grp", "EQUAL", "nope")), [
        count("c"), sum_("s", "v"), avg("a", "v")])
    assert res == {"c": Int(0), "s": Int(0), "a": None}


def test_avg_over_no_numeric_values_is_null(client, root, ac):
    res = aggregate(client, root, sq(ac), [avg("a", "grp"), sum_("s", "grp")])
    assert res == {"a": None, "s": Int(0)}


def test_aggregation_result_has_read_time(client, root, ac):
    responses = list(client.run_aggregation_query(request={
        "parent": root,
        "structured_aggregation_query": {"structured_query": sq(ac), "aggregations": [count("n")]},
    }))
    results = [r for r in responses if "result" in r]
    assert len(results) == 1
    assert "read_time" in results[0]


def test_aggregation_read_time(client, database, root):
    cid = new_collection_id("aggrt")
    first = put(client, database, f"{root}/{cid}/a", {"v": 1})
    put(client, database, f"{root}/{cid}/b", {"v": 2})
    res = aggregate(client, root, sq(cid), [count("n"), sum_("s", "v")], read_time=first.commit_time)
    assert res == {"n": Int(1), "s": Int(1)}
    assert aggregate(client, root, sq(cid), [count("n"), sum_("s", "v")]) == {"n": Int(2), "s": Int(3)}


def test_aggregation_collection_group(client, database, root):
    g = new_collection_id("aggg")
    other = new_collection_id("o")
    put_many(client, database, {
        f"{root}/{g}/1": {"v": 1},
        f"{root}/{other}/p/{g}/2": {"v": 2},
        f"{root}/{other}/p/{g}/3": {"v": 4},
    })
    res = aggregate(client, root, {"from_": [{"collection_id": g, "all_descendants": True}]},
                    [count("n"), sum_("s", "v")])
    assert res == {"n": Int(3), "s": Int(7)}


def test_default_aliases(client, root, ac):
    res = aggregate(client, root, sq(ac), [
        count("named"),
        {"count": {}},
        sum_("total", "i"),
        {"avg": {"field": {"field_path": "i"}}},
    ])
    # (count is 4: see test_aggregations_consider_only_documents_with_every_field)
    assert res == {"named": Int(4), "field_1": Int(4), "total": Int(100), "field_2": 25.0}


def test_duplicate_alias_rejected(client, root, ac):
    with expect_rpc_error("INVALID_ARGUMENT"):
        aggregate(client, root, sq(ac), [count("x"), sum_("x", "i")])


def test_aggregations_consider_only_documents_with_every_field(client, root, ac):
    """With sum/avg in the request, only documents that have every aggregated field take part
    (production answers from an index over those fields); count follows the same rows."""
    assert aggregate(client, root, sq(ac), [count("n"), sum_("s", "i")]) == {"n": Int(4), "s": Int(100)}
    # v exists on a..e (e holds null); i on a..d -> a..d
    res = aggregate(client, root, sq(ac), [count("n"), sum_("sv", "v"), avg("ai", "i")])
    assert res == {"n": Int(4), "sv": 6.5, "ai": 25.0}
    assert aggregate(client, root, sq(ac), [count("n"), avg("av", "v")]) == {"n": Int(5), "av": pytest.approx(6.5 / 3)}


def test_sum_nan_and_overflow(client, database, root):
    cid = new_collection_id("aggn")
    put_many(client, database, {
        f"{root}/{cid}/a": {"big": 2**63 - 1, "x": 1.0},
        f"{root}/{cid}/b": {"big": 1, "x": float("nan")},
    })
    res = aggregate(client, root, sq(cid), [sum_("big", "big")])
    assert res["big"] == pytest.approx(float(2**63)) and isinstance(res["big"], float)
    res = aggregate(client, root, sq(cid), [sum_("x", "x"), avg("ax", "x")])
    assert math.isnan(res["x"]) and math.isnan(res["ax"])
