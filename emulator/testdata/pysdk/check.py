"""An independent client on the Python SDK that Debian packages
(python3-azure-cosmos, the v3 SDK, azure.cosmos.cosmos_client), run by
TestPythonSDK as

    /usr/bin/python3 check.py ENDPOINT KEY [--no-endpoint-discovery] [--skip PART,...]

against docshard serve. It uses the SDK's default settings (endpoint
discovery on: the SDK reads the account and sends every request to the
region endpoint the account names) unless --no-endpoint-discovery. It
exits 1 on the first difference from what Cosmos DB answers, naming it.

Its parts, which --skip leaves out: crud (point operations under partition
keys, 404, 409, 412), query-in-key (queries within one key), query-across
(queries across keys: filters, ORDER BY, COUNT and the other aggregates,
DISTINCT, TOP), query-refused (a query across keys without
enableCrossPartitionQuery is refused), paging (hundreds of items read in
pages, each once: queries within and across keys, ORDER BY, the read feed).
"""

import argparse
import sys
import traceback
import warnings

import azure.cosmos.cosmos_client as cosmos_client
import azure.cosmos.documents as documents
import azure.cosmos.errors as errors

PARTS = ("crud", "query-in-key", "query-across", "query-refused", "paging")
DB = "py"


def expect_status(status, fn, what):
    """Calls fn and requires it to fail with an HTTP status."""
    try:
        fn()
    except errors.HTTPFailure as e:
        if e.status_code != status:
            raise AssertionError("%s: want status %d, got %d: %s" % (what, status, e.status_code, e))
        return e
    raise AssertionError("%s: want status %d, but it succeeded" % (what, status))


def equal(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what, got, want))


def query(client, coll, q, **options):
    return list(client.QueryItems(coll, q, options))


def doc_link(coll, doc_id):
    return "%s/docs/%s" % (coll, doc_id)


def crud(client):
    coll = "dbs/%s/colls/crud" % DB
    client.CreateContainer("dbs/" + DB, {"id": "crud", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}})
    created = client.CreateItem(coll, {"id": "a", "pk": "k1", "n": 1, "tags": ["x", "y"], "nested": {"f": 1.5}})
    for field in ("_rid", "_etag", "_ts", "_self"):
        if field not in created:
            raise AssertionError("a created item has no %s: %r" % (field, created))
    read = client.ReadItem(doc_link(coll, "a"), {"partitionKey": "k1"})
    equal((read["n"], read["tags"], read["nested"]), (1, ["x", "y"], {"f": 1.5}), "the item read back")
    equal(read["_etag"], created["_etag"], "the etag read back")
    expect_status(404, lambda: client.ReadItem(doc_link(coll, "a"), {"partitionKey": "k2"}), "a read under another key")
    expect_status(404, lambda: client.ReadItem(doc_link(coll, "nope"), {"partitionKey": "k1"}), "a read of a missing id")
    expect_status(409, lambda: client.CreateItem(coll, {"id": "a", "pk": "k1"}), "a create of an existing id")
    # The same id under another key is another item.
    client.CreateItem(coll, {"id": "a", "pk": "k2", "n": 2})
    equal(client.ReadItem(doc_link(coll, "a"), {"partitionKey": "k2"})["n"], 2, "the same id under another key")

    replaced = client.ReplaceItem(doc_link(coll, "a"), {"id": "a", "pk": "k1", "n": 3},
                                  {"partitionKey": "k1", "accessCondition": {"type": "IfMatch", "condition": created["_etag"]}})
    equal(replaced["n"], 3, "a replace under a matching etag")
    if replaced["_etag"] == created["_etag"]:
        raise AssertionError("a replace kept the etag %s" % replaced["_etag"])
    expect_status(412, lambda: client.ReplaceItem(doc_link(coll, "a"), {"id": "a", "pk": "k1", "n": 4},
                                                  {"partitionKey": "k1", "accessCondition": {"type": "IfMatch", "condition": created["_etag"]}}),
                  "a replace under a stale etag")
    expect_status(412, lambda: client.DeleteItem(doc_link(coll, "a"),
                                                 {"partitionKey": "k1", "accessCondition": {"type": "IfMatch", "condition": created["_etag"]}}),
                  "a delete under a stale etag")
    expect_status(404, lambda: client.ReplaceItem(doc_link(coll, "nope"), {"id": "nope", "pk": "k1"}, {"partitionKey": "k1"}),
                  "a replace of a missing id")

    upserted = client.UpsertItem(coll, {"id": "b", "pk": "k1", "n": 5})
    equal(upserted["n"], 5, "an upsert that creates")
    upserted = client.UpsertItem(coll, {"id": "b", "pk": "k1", "n": 6})
    equal(upserted["n"], 6, "an upsert that replaces")
    equal(client.ReadItem(doc_link(coll, "b"), {"partitionKey": "k1"})["n"], 6, "the upserted item read back")

    client.DeleteItem(doc_link(coll, "a"), {"partitionKey": "k1"})
    expect_status(404, lambda: client.ReadItem(doc_link(coll, "a"), {"partitionKey": "k1"}), "a read of a deleted item")
    expect_status(404, lambda: client.DeleteItem(doc_link(coll, "a"), {"partitionKey": "k1"}), "a delete of a deleted item")
    equal(client.ReadItem(doc_link(coll, "a"), {"partitionKey": "k2"})["n"], 2, "the same id under another key, after the delete")

    expect_status(409, lambda: client.CreateContainer("dbs/" + DB, {"id": "crud", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}),
                  "a create of an existing container")
    expect_status(404, lambda: client.ReadContainer("dbs/%s/colls/nope" % DB), "a read of a missing container")
    expect_status(404, lambda: client.ReadItem("dbs/%s/colls/nope/docs/a" % DB, {"partitionKey": "k1"}), "a read in a missing container")
    client.DeleteContainer(coll)


def small_container(client):
    """A container of 30 items, n 0..29, under keys k0, k1, k2 (n % 3)."""
    coll = "dbs/%s/colls/small" % DB
    client.CreateContainer("dbs/" + DB, {"id": "small", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}})
    for i in range(30):
        client.CreateItem(coll, {"id": "i%d" % i, "pk": "k%d" % (i % 3), "n": i, "even": i % 2 == 0})
    return coll


def query_in_key(client, coll):
    equal(query(client, coll, "SELECT VALUE c.n FROM c ORDER BY c.n", partitionKey="k1"),
          list(range(1, 30, 3)), "ORDER BY within a key")
    equal(query(client, coll, {"query": "SELECT VALUE c.n FROM c WHERE c.n > @lo ORDER BY c.n DESC",
                               "parameters": [{"name": "@lo", "value": 20}]}, partitionKey="k2"),
          [29, 26, 23], "a filter with a parameter within a key")
    equal(query(client, coll, "SELECT c.id, c.n FROM c WHERE c.even ORDER BY c.n", partitionKey="k0"),
          [{"id": "i%d" % n, "n": n} for n in range(0, 30, 6)], "a projection within a key")
    equal(query(client, coll, "SELECT VALUE COUNT(1) FROM c", partitionKey="k0"), [10], "COUNT within a key")
    equal(query(client, coll, "SELECT TOP 2 VALUE c.n FROM c ORDER BY c.n DESC", partitionKey="k0"), [27, 24], "TOP within a key")
    equal(query(client, coll, "SELECT VALUE c.n FROM c", partitionKey="k9"), [], "a key with no items")


def query_across(client, coll):
    across = {"enableCrossPartitionQuery": True}
    equal(sorted(query(client, coll, "SELECT VALUE c.n FROM c WHERE c.n >= 25", **across)), [25, 26, 27, 28, 29],
          "a filter across keys")
    equal(sorted(query(client, coll, {"query": "SELECT VALUE c.id FROM c WHERE c.n IN (@a, @b)",
                                      "parameters": [{"name": "@a", "value": 4}, {"name": "@b", "value": 8}]}, **across)),
          ["i4", "i8"], "a filter with parameters across keys")
    equal(query(client, coll, "SELECT VALUE c.n FROM c ORDER BY c.n DESC", **across), list(range(29, -1, -1)),
          "ORDER BY across keys")
    equal(query(client, coll, "SELECT c.id FROM c WHERE c.n < 4 ORDER BY c.n", **across),
          [{"id": "i0"}, {"id": "i1"}, {"id": "i2"}, {"id": "i3"}], "ORDER BY with a projection across keys")
    equal(query(client, coll, "SELECT TOP 3 VALUE c.n FROM c ORDER BY c.n DESC", **across), [29, 28, 27], "TOP and ORDER BY across keys")
    top = query(client, coll, "SELECT TOP 5 VALUE c.id FROM c", **across)
    equal((len(top), len(set(top))), (5, 5), "TOP across keys: how many, how many distinct")
    equal(query(client, coll, "SELECT VALUE COUNT(1) FROM c", **across), [30], "COUNT across keys")
    equal(query(client, coll, "SELECT VALUE COUNT(1) FROM c WHERE c.even", **across), [15], "COUNT of a filter across keys")
    equal(query(client, coll, "SELECT VALUE SUM(c.n) FROM c", **across), [435], "SUM across keys")
    equal(query(client, coll, "SELECT VALUE MAX(c.n) FROM c", **across), [29], "MAX across keys")
    equal(query(client, coll, "SELECT VALUE MIN(c.n) FROM c", **across), [0], "MIN across keys")
    equal(query(client, coll, "SELECT VALUE AVG(c.n) FROM c", **across), [14.5], "AVG across keys")
    equal(sorted(query(client, coll, "SELECT DISTINCT VALUE c.pk FROM c", **across)), ["k0", "k1", "k2"], "DISTINCT across keys")
    equal(sorted(query(client, coll, "SELECT DISTINCT VALUE c.even FROM c", **across)), [False, True], "DISTINCT of a boolean across keys")


def query_refused(client, coll):
    expect_status(400, lambda: query(client, coll, "SELECT VALUE c.n FROM c"),
                  "a query across keys without enableCrossPartitionQuery")


def pages(iterable):
    """Reads a query or feed page by page (fetch_next_block), returning the pages."""
    out = []
    while True:
        page = iterable.fetch_next_block()
        if not page:
            return out
        out.append(page)


def each_once(got, want, what):
    seen = set()
    for x in got:
        if x in seen:
            raise AssertionError("%s: %r twice" % (what, x))
        seen.add(x)
    if seen != set(want):
        raise AssertionError("%s: %d of %d items, missing %r, unexpected %r" % (
            what, len(seen), len(want), sorted(set(want) - seen)[:10], sorted(seen - set(want))[:10]))


def paging(client):
    total, keys = 300, 10
    coll = "dbs/%s/colls/paged" % DB
    client.CreateContainer("dbs/" + DB, {"id": "paged", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}})
    for i in range(total):
        client.CreateItem(coll, {"id": "p%03d" % i, "pk": "k%d" % (i % keys), "n": i})
    ids = ["p%03d" % i for i in range(total)]

    def paged(what, size, q=None, want_pages=None, **options):
        options["maxItemCount"] = size
        it = client.ReadItems(coll, options) if q is None else client.QueryItems(coll, q, options)
        got = pages(it)
        for page in got:
            if len(page) > size:
                raise AssertionError("%s: a page of %d items, over maxItemCount %d" % (what, len(page), size))
        if want_pages is not None and len(got) < want_pages:
            raise AssertionError("%s: %d pages, want at least %d" % (what, len(got), want_pages))
        return [x for page in got for x in page]

    got = paged("a query across keys in pages of 7", 7, "SELECT VALUE c.id FROM c", want_pages=total // 7, enableCrossPartitionQuery=True)
    each_once(got, ids, "a query across keys in pages of 7")
    got = paged("a query within a key in pages of 4", 4, "SELECT VALUE c.id FROM c", want_pages=30 // 4, partitionKey="k3")
    each_once(got, ids[3::keys], "a query within a key in pages of 4")
    got = paged("ORDER BY across keys in pages of 50", 50, "SELECT VALUE c.n FROM c ORDER BY c.n", want_pages=total // 50, enableCrossPartitionQuery=True)
    equal(got, list(range(total)), "ORDER BY across keys in pages of 50")
    got = paged("the read feed in pages of 64", 64, want_pages=total // 64)
    each_once([d["id"] for d in got], ids, "the read feed in pages of 64")
    # Iterating (not page by page) reads every page too.
    each_once(query(client, coll, "SELECT VALUE c.id FROM c", enableCrossPartitionQuery=True, maxItemCount=25), ids,
              "an iterated query across keys in pages of 25")
    each_once([d["id"] for d in client.ReadItems(coll, {"maxItemCount": 40})], ids, "the iterated read feed in pages of 40")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("endpoint")
    parser.add_argument("key")
    parser.add_argument("--no-endpoint-discovery", action="store_true",
                        help="turn the SDK's endpoint discovery off (it is on by default)")
    parser.add_argument("--skip", default="", help="parts to leave out, comma-separated: " + ", ".join(PARTS))
    args = parser.parse_args()
    skip = set(p for p in args.skip.split(",") if p)
    unknown = skip - set(PARTS)
    if unknown:
        parser.error("unknown parts %s; the parts are %s" % (sorted(unknown), ", ".join(PARTS)))

    # The SDK skips certificate verification for localhost and 127.0.0.1
    # (the emulator's addresses), and urllib3 warns on every request.
    warnings.filterwarnings("ignore", message="Unverified HTTPS request")
    policy = None  # the SDK's defaults
    if args.no_endpoint_discovery:
        policy = documents.ConnectionPolicy()
        policy.EnableEndpointDiscovery = False
    client = cosmos_client.CosmosClient(args.endpoint, {"masterKey": args.key}, policy)

    client.CreateDatabase({"id": DB})
    expect_status(409, lambda: client.CreateDatabase({"id": DB}), "a create of an existing database")
    equal(client.ReadDatabase("dbs/" + DB)["id"], DB, "the database read back")
    ran = []
    if "crud" not in skip:
        crud(client)
        ran.append("crud")
    if {"query-in-key", "query-across", "query-refused"} - skip:
        coll = small_container(client)
        for part, fn in (("query-in-key", query_in_key), ("query-across", query_across), ("query-refused", query_refused)):
            if part not in skip:
                fn(client, coll)
                ran.append(part)
    if "paging" not in skip:
        paging(client)
        ran.append("paging")
    client.DeleteDatabase("dbs/" + DB)
    expect_status(404, lambda: client.ReadDatabase("dbs/" + DB), "a read of a deleted database")
    print("ok: %s" % ", ".join(ran))


if __name__ == "__main__":
    try:
        main()
    except Exception:  # one line of cause last, for the Go test's report
        traceback.print_exc()
        sys.exit(1)
