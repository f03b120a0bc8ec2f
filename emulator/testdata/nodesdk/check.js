// An independent client on the official Node.js SDK (@azure/cosmos), which
// asks the gateway for query plans: run by TestNodeSDK as
// node check.js ENDPOINT KEY, it exits 1 on the first difference.
const assert = require("node:assert/strict");
const { CosmosClient } = require("@azure/cosmos");

async function main() {
  const [endpoint, key] = process.argv.slice(2);
  const client = new CosmosClient({ endpoint, key });
  const { database } = await client.databases.createIfNotExists({ id: "node" });
  const { container } = await database.containers.createIfNotExists({ id: "items", partitionKey: { paths: ["/pk"] } });
  for (let i = 0; i < 30; i++) {
    await container.items.upsert({ id: "i" + i, pk: "k" + (i % 3), n: i });
  }
  const read = await container.item("i5", "k2").read();
  assert.equal(read.statusCode, 200);
  assert.equal(read.resource.n, 5);
  assert.ok(read.resource._rid && read.resource._etag && read.resource._ts);
  assert.equal((await container.item("i5", "k0").read()).statusCode, 404, "a read with the wrong key");
  assert.equal((await container.item("nope", "k0").read()).statusCode, 404);

  const q = async (query, opts) => (await container.items.query(query, opts).fetchAll()).resources;
  assert.deepEqual(await q("SELECT VALUE COUNT(1) FROM c"), [30]);
  assert.deepEqual(await q("SELECT TOP 3 VALUE c.n FROM c ORDER BY c.n DESC"), [29, 28, 27]);
  assert.deepEqual(await q("SELECT VALUE AVG(c.n) FROM c"), [14.5]);
  assert.deepEqual(await q("SELECT DISTINCT VALUE c.pk FROM c ORDER BY c.pk"), ["k0", "k1", "k2"]);
  const groups = await q("SELECT c.pk, COUNT(1) AS n FROM c GROUP BY c.pk");
  assert.deepEqual(groups.sort((a, b) => a.pk.localeCompare(b.pk)), [{ pk: "k0", n: 10 }, { pk: "k1", n: 10 }, { pk: "k2", n: 10 }]);
  assert.deepEqual(await q("SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 5 LIMIT 3"), [5, 6, 7]);
  assert.deepEqual(await q({ query: "SELECT VALUE c.n FROM c WHERE c.n > @lo ORDER BY c.n", parameters: [{ name: "@lo", value: 26 }] }), [27, 28, 29]);
  assert.deepEqual(await q("SELECT VALUE c.n FROM c ORDER BY c.n", { partitionKey: "k1", maxItemCount: 2 }), [1, 4, 7, 10, 13, 16, 19, 22, 25, 28]);

  const it = container.items.query("SELECT c.id FROM c", { maxItemCount: 7 });
  const seen = new Set();
  while (it.hasMoreResults()) {
    const page = await it.fetchNext();
    assert.ok(page.resources.length <= 7);
    for (const r of page.resources) {
      assert.ok(!seen.has(r.id), r.id + " twice");
      seen.add(r.id);
    }
  }
  assert.equal(seen.size, 30);
  assert.equal((await container.items.readAll().fetchAll()).resources.length, 30);

  const patched = await container.item("i5", "k2").patch([{ op: "incr", path: "/n", value: 10 }]);
  assert.equal(patched.resource.n, 15);
  const etag = patched.resource._etag;
  await container.item("i5", "k2").replace({ id: "i5", pk: "k2", n: 1 });
  await assert.rejects(container.item("i5", "k2").replace({ id: "i5", pk: "k2", n: 2 }, { accessCondition: { type: "IfMatch", condition: etag } }),
    (e) => e.code === 412);
  await assert.rejects(container.items.create({ id: "i6", pk: "k0" }), (e) => e.code === 409);
  await container.item("i5", "k2").delete();
  await database.delete();
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
