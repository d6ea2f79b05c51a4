"""RunQuery: filters, ordering, cursors, offset/limit, projection, collection groups."""

import math

import pytest
from fsutil import (Ref, new_collection_id, and_, cursor, ff, names, or_, order, pdata, put, put_many, query_ids,
                    run_query, run_query_raw, uf)

NAN = float("nan")

# Document ids are chosen so that name order differs from value order.
SEED = {
    "a": {"n": 3, "s": "b", "tags": ["red", "blue"], "grp": "x", "f": 1.5, "nested": {"k": 2}},
    "b": {"n": 1, "s": "a", "tags": ["green"], "grp": "y", "f": NAN, "nested": {"k": 1}},
    "c": {"n": 2, "s": "c", "tags": [], "grp": "x", "f": None},
    "d": {"n": 5, "s": "e", "tags": ["red"], "grp": "y", "f": -0.5},
    "e": {"n": 4.5, "s": "d", "tags": ["blue", "red"], "grp": "z"},
    "f": {"n": "10", "s": "f", "grp": "x", "f": 2},
    "g": {"n": None, "grp": "z", "tags": ["red", "red"]},
    "h": {"grp": "y"},
}


@pytest.fixture(scope="module")
def qc(client, database, root):
    """A collection seeded with SEED; returns its id."""
    cid = new_collection_id("q")
    put_many(client, database, {f"{root}/{cid}/{k}": v for k, v in SEED.items()})
    return cid


def q(qc, where=None, order_by=None, **extra):
    sq = {"from_": [{"collection_id": qc}]}
    if where is not None:
        sq["where"] = where
    if order_by is not None:
        sq["order_by"] = order_by
    sq.update(extra)
    return sq


def ids(client, root, sq):
    return query_ids(client, root, sq)


def test_query_whole_collection(client, root, qc):
    docs = run_query(client, root, q(qc))
    assert names(docs) == list("abcdefgh")
    assert pdata(docs[0]) == SEED["a"]
    assert math.isnan(pdata(docs[1])["f"])


def test_query_responses_have_read_time(client, root, qc):
    responses = run_query_raw(client, root, q(qc, limit=2))
    docs = [r for r in responses if "document" in r]
    assert len(docs) == 2
    assert all("read_time" in r for r in docs)


def test_query_empty_result_still_answers(client, root):
    responses = run_query_raw(client, root, q(new_collection_id("empty")))
    assert all("document" not in r for r in responses)
    assert responses and any("read_time" in r for r in responses)


@pytest.mark.parametrize("op,value,expected", [
    ("EQUAL", 2, ["c"]),
    ("EQUAL", 4.5, ["e"]),
    ("EQUAL", 3.0, ["a"]),                         # 3.0 == 3
    ("EQUAL", "10", ["f"]),
    ("NOT_EQUAL", 3, ["b", "c", "e", "d", "f"]),  # ordered by n; missing and null excluded
    ("LESS_THAN", 3, ["b", "c"]),
    ("LESS_THAN_OR_EQUAL", 3, ["b", "c", "a"]),
    ("GREATER_THAN", 3, ["e", "d"]),               # numbers only: "10" is a string
    ("GREATER_THAN_OR_EQUAL", 4.5, ["e", "d"]),
    ("GREATER_THAN", 1.5, ["c", "a", "e", "d"]),   # int vs double compare numerically
    ("GREATER_THAN", "1", ["f"]),                  # strings only
    ("LESS_THAN", "9", ["f"]),
    ("IN", [1, 5, "10"], ["b", "d", "f"]),
    ("IN", [2.0, "zz", 7], ["c"]),
    ("NOT_IN", [1, 2], ["a", "e", "d", "f"]),      # ordered by n; missing and null excluded
])
def test_field_filter_on_n(client, root, qc, op, value, expected):
    assert ids(client, root, q(qc, where=ff("n", op, value))) == expected


@pytest.mark.parametrize("op,value,expected", [
    ("ARRAY_CONTAINS", "red", ["a", "d", "e", "g"]),
    ("ARRAY_CONTAINS", "green", ["b"]),
    ("ARRAY_CONTAINS", "none", []),
    ("ARRAY_CONTAINS_ANY", ["green", "blue"], ["a", "b", "e"]),
    ("ARRAY_CONTAINS_ANY", ["red", "red"], ["a", "d", "e", "g"]),
    ("EQUAL", [], ["c"]),
    ("EQUAL", ["red", "blue"], ["a"]),
    ("EQUAL", ["blue", "red"], ["e"]),
])
def test_field_filter_on_array(client, root, qc, op, value, expected):
    assert ids(client, root, q(qc, where=ff("tags", op, value))) == expected


def test_filter_nested_field(client, root, qc):
    assert ids(client, root, q(qc, where=ff("nested.k", "EQUAL", 1))) == ["b"]
    assert ids(client, root, q(qc, where=ff("nested", "EQUAL", {"k": 2}))) == ["a"]
    assert ids(client, root, q(qc, where=ff("nested.k", "GREATER_THAN_OR_EQUAL", 1))) == ["b", "a"]


@pytest.mark.parametrize("op,expected", [
    ("IS_NAN", ["b"]),
    ("IS_NULL", ["c"]),
    ("IS_NOT_NULL", ["b", "d", "a", "f"]),      # ordered by f: NaN sorts before numbers
    ("IS_NOT_NAN", ["d", "a", "f"]),            # null and missing excluded
])
def test_unary_filters(client, root, qc, op, expected):
    assert ids(client, root, q(qc, where=uf("f", op))) == expected


def test_nan_excluded_from_range_filters(client, root, qc):
    assert ids(client, root, q(qc, where=ff("f", "LESS_THAN", 0))) == ["d"]
    assert ids(client, root, q(qc, where=ff("f", "GREATER_THAN", -1))) == ["d", "a", "f"]


def test_composite_and(client, root, qc):
    assert ids(client, root, q(qc, where=and_(ff("grp", "EQUAL", "x"), ff("n", "GREATER_THAN", 1)))) == ["c", "a"]
    assert ids(client, root, q(qc, where=and_(ff("tags", "ARRAY_CONTAINS", "red"), ff("grp", "EQUAL", "y")))) == ["d"]
    assert ids(client, root, q(qc, where=and_(ff("grp", "EQUAL", "x"), ff("grp", "EQUAL", "y")))) == []


def test_composite_or(client, root, qc):
    assert ids(client, root, q(qc, where=or_(ff("grp", "EQUAL", "z"), ff("n", "EQUAL", 1)))) == ["b", "e", "g"]
    assert ids(client, root, q(qc, where=or_(ff("s", "EQUAL", "a"), ff("s", "EQUAL", "a")))) == ["b"]


def test_composite_nested(client, root, qc):
    where = or_(
        and_(ff("grp", "EQUAL", "x"), ff("n", "EQUAL", 3)),
        and_(ff("grp", "EQUAL", "y"), ff("n", "EQUAL", 5)),
    )
    assert ids(client, root, q(qc, where=where)) == ["a", "d"]
    where = and_(ff("grp", "IN", ["x", "y"]), or_(ff("s", "EQUAL", "a"), ff("s", "EQUAL", "c")))
    assert ids(client, root, q(qc, where=where)) == ["b", "c"]


def test_single_filter_composite(client, root, qc):
    assert ids(client, root, q(qc, where=and_(ff("grp", "EQUAL", "z")))) == ["e", "g"]


# ------------------------------------------------------------------------------------------
# Ordering
# ------------------------------------------------------------------------------------------


def test_order_by_asc_excludes_missing(client, root, qc):
    # null < numbers < strings; "h" has no n and is excluded
    assert ids(client, root, q(qc, order_by=[order("n")])) == ["g", "b", "c", "a", "e", "d", "f"]


def test_order_by_desc(client, root, qc):
    assert ids(client, root, q(qc, order_by=[order("n", "DESCENDING")])) == ["f", "d", "e", "a", "c", "b", "g"]


def test_order_by_implicit_name_tiebreak(client, root, qc):
    assert ids(client, root, q(qc, order_by=[order("grp")])) == ["a", "c", "f", "b", "d", "h", "e", "g"]
    # the implicit __name__ order follows the direction of the last explicit order
    assert ids(client, root, q(qc, order_by=[order("grp", "DESCENDING")])) == ["g", "e", "h", "d", "b", "f", "c", "a"]


def test_order_by_two_fields(client, root, qc):
    got = ids(client, root, q(qc, order_by=[order("grp"), order("n", "DESCENDING")]))
    assert got == ["f", "a", "c", "d", "b", "e", "g"]


def test_inequality_implies_order(client, root, qc):
    assert ids(client, root, q(qc, where=ff("s", "GREATER_THAN", "a"))) == ["a", "c", "e", "d", "f"]


def test_equality_with_order(client, root, qc):
    got = ids(client, root, q(qc, where=ff("grp", "EQUAL", "x"), order_by=[order("s", "DESCENDING")]))
    assert got == ["f", "c", "a"]


# ------------------------------------------------------------------------------------------
# Cursors, offset, limit
# ------------------------------------------------------------------------------------------

BY_N = [order("n")]  # -> g, b, c, a, e, d, f


@pytest.mark.parametrize("start,end,expected", [
    (cursor([2], True), None, ["c", "a", "e", "d", "f"]),        # startAt
    (cursor([2], False), None, ["a", "e", "d", "f"]),            # startAfter
    (None, cursor([4.5], False), ["g", "b", "c", "a", "e"]),     # endAt
    (None, cursor([4.5], True), ["g", "b", "c", "a"]),           # endBefore
    (cursor([1], True), cursor([3], False), ["b", "c", "a"]),
    (cursor([1.5], True), cursor([4], True), ["c", "a"]),         # between values
    (cursor([None], False), None, ["b", "c", "a", "e", "d", "f"]),
    (cursor(["1"], True), None, ["f"]),
    (cursor([100], True), None, ["f"]),                          # past all numbers
])
def test_cursors(client, root, qc, start, end, expected):
    extra = {}
    if start is not None:
        extra["start_at"] = start
    if end is not None:
        extra["end_at"] = end
    assert ids(client, root, q(qc, order_by=BY_N, **extra)) == expected


def test_cursor_with_name_component(client, root, qc):
    ref = lambda d: Ref(f"{root}/{qc}/{d}")  # noqa: E731
    by_grp = [order("grp"), order("__name__")]
    got = ids(client, root, q(qc, order_by=by_grp, start_at=cursor(["y", ref("b")], False)))
    assert got == ["d", "h", "e", "g"]
    got = ids(client, root, q(qc, order_by=by_grp, end_at=cursor(["y", ref("d")], True)))
    assert got == ["a", "c", "f", "b"]
    got = ids(client, root, q(qc, order_by=[order("__name__")], start_at=cursor([ref("c")], True),
                             end_at=cursor([ref("f")], False)))
    assert got == ["c", "d", "e", "f"]


def test_cursor_on_name(client, root, qc):
    ref = f"{root}/{qc}/e"
    got = ids(client, root, q(qc, order_by=[order("__name__")], start_at=cursor([Ref(ref)], False)))
    assert got == ["f", "g", "h"]
    # a cursor may hold fewer values than there are orders
    got = ids(client, root, q(qc, order_by=[order("grp"), order("__name__")], start_at=cursor(["y"], True)))
    assert got == ["b", "d", "h", "e", "g"]


def test_cursor_descending(client, root, qc):
    got = ids(client, root, q(qc, order_by=[order("n", "DESCENDING")], start_at=cursor([4.5], True)))
    assert got == ["e", "a", "c", "b", "g"]
    got = ids(client, root, q(qc, order_by=[order("n", "DESCENDING")], start_at=cursor([4.5], False),
                             end_at=cursor([2], False)))
    assert got == ["a", "c"]


def test_offset_and_limit(client, root, qc):
    assert ids(client, root, q(qc, order_by=BY_N, offset=2, limit=3)) == ["c", "a", "e"]
    assert ids(client, root, q(qc, order_by=BY_N, limit=1)) == ["g"]
    assert ids(client, root, q(qc, order_by=BY_N, offset=6)) == ["f"]
    assert ids(client, root, q(qc, order_by=BY_N, offset=50)) == []
    assert ids(client, root, q(qc, order_by=[order("__name__")], offset=1, limit=2,
                               start_at=cursor([Ref(f"{root}/{qc}/b")], True))) == ["c", "d"]


def test_limit_with_filter(client, root, qc):
    assert ids(client, root, q(qc, where=ff("tags", "ARRAY_CONTAINS", "red"), limit=2)) == ["a", "d"]


# ------------------------------------------------------------------------------------------
# Projection
# ------------------------------------------------------------------------------------------


def test_select_projection(client, root, qc):
    sq = q(qc, select={"fields": [{"field_path": "s"}, {"field_path": "nested.k"}]}, limit=3)
    docs = run_query(client, root, sq)
    assert names(docs) == ["a", "b", "c"]
    assert [pdata(d) for d in docs] == [
        {"s": "b", "nested": {"k": 2}},
        {"s": "a", "nested": {"k": 1}},
        {"s": "c"},
    ]


def test_select_name_only(client, root, qc):
    docs = run_query(client, root, q(qc, select={"fields": [{"field_path": "__name__"}]}))
    assert names(docs) == list("abcdefgh")
    assert all(pdata(d) == {} for d in docs)


def test_select_with_filter_on_unselected_field(client, root, qc):
    sq = q(qc, where=ff("grp", "EQUAL", "y"), select={"fields": [{"field_path": "n"}]})
    docs = run_query(client, root, sq)
    assert [(d.name.rsplit("/", 1)[1], pdata(d)) for d in docs] == [("b", {"n": 1}), ("d", {"n": 5}), ("h", {})]


# ------------------------------------------------------------------------------------------
# __name__ filters
# ------------------------------------------------------------------------------------------


def test_name_filters(client, root, qc):
    ref = lambda d: Ref(f"{root}/{qc}/{d}")  # noqa: E731
    assert ids(client, root, q(qc, where=ff("__name__", "EQUAL", ref("c")))) == ["c"]
    assert ids(client, root, q(qc, where=ff("__name__", "GREATER_THAN", ref("e")))) == ["f", "g", "h"]
    assert ids(client, root, q(qc, where=ff("__name__", "LESS_THAN_OR_EQUAL", ref("b")))) == ["a", "b"]
    assert ids(client, root, q(qc, where=ff("__name__", "IN", [ref("h"), ref("a"), ref("zz")]))) == ["a", "h"]
    assert ids(client, root, q(qc, where=ff("__name__", "NOT_EQUAL", ref("a")), limit=2)) == ["b", "c"]
    assert ids(client, root, q(qc, where=and_(ff("__name__", "GREATER_THAN", ref("b")),
                                              ff("grp", "EQUAL", "x")))) == ["c", "f"]


# ------------------------------------------------------------------------------------------
# Subcollections and collection groups
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def group(client, database, root):
    g = new_collection_id("g")
    x, y = new_collection_id("x"), new_collection_id("y")
    docs = {
        f"{root}/{g}/1": {"v": 1},
        f"{root}/{x}/p/{g}/2": {"v": 2},
        f"{root}/{x}/p/{g}/2/{g}/3": {"v": 3},
        f"{root}/{y}/q/{g}/4": {"v": 4},
        f"{root}/{x}/p/other/5": {"v": 5},
        f"{root}/{x}/p": {"v": 0},
    }
    put_many(client, database, docs)
    return {"g": g, "x": x, "y": y}


def test_subcollection_query(client, root, group):
    parent = f"{root}/{group['x']}/p"
    docs = run_query(client, parent, {"from_": [{"collection_id": group["g"]}]})
    assert [d.name for d in docs] == [f"{parent}/{group['g']}/2"]


def test_collection_group_from_root(client, root, group):
    g = group["g"]
    docs = run_query(client, root, {"from_": [{"collection_id": g, "all_descendants": True}]})
    assert [d.name for d in docs] == [
        f"{root}/{g}/1",
        f"{root}/{group['x']}/p/{g}/2",
        f"{root}/{group['x']}/p/{g}/2/{g}/3",
        f"{root}/{group['y']}/q/{g}/4",
    ]


def test_collection_group_under_document(client, root, group):
    g = group["g"]
    parent = f"{root}/{group['x']}/p"
    docs = run_query(client, parent, {"from_": [{"collection_id": g, "all_descendants": True}]})
    assert [pdata(d)["v"] for d in docs] == [2, 3]


def test_collection_group_with_filter_and_order(client, root, group):
    sq = {"from_": [{"collection_id": group["g"], "all_descendants": True}],
          "where": ff("v", "GREATER_THAN", 1), "order_by": [order("v", "DESCENDING")]}
    assert [pdata(d)["v"] for d in run_query(client, root, sq)] == [4, 3, 2]


def test_all_descendants_without_collection_id(client, root, group):
    parent = f"{root}/{group['x']}/p"
    docs = run_query(client, parent, {"from_": [{"all_descendants": True}]})
    assert sorted(pdata(d)["v"] for d in docs) == [2, 3, 5]


def test_query_read_time(client, database, root, coll):
    first = put(client, database, f"{root}/{coll}/a", {"v": 1})
    put(client, database, f"{root}/{coll}/b", {"v": 2})
    put(client, database, f"{root}/{coll}/a", {"v": 3})
    docs = run_query(client, root, {"from_": [{"collection_id": coll}]}, read_time=first.commit_time)
    assert [(d.name.rsplit("/", 1)[1], pdata(d)) for d in docs] == [("a", {"v": 1})]
