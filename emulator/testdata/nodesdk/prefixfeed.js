// The change feed under a prefix of a hierarchical key, as the official
// Node.js SDK (@azure/cosmos) reads it (x-ms-start-epk and x-ms-end-epk
// over the range): run by TestNodeSDKPrefixChangeFeed as
// node prefixfeed.js ENDPOINT KEY, it exits 1 on the first difference.
const assert = require("node:assert/strict");
const { CosmosClient, ChangeFeedStartFrom, PartitionKeyKind, StatusCodes } = require("@azure/cosmos");

// drain reads an iterator until it has caught up, returning the ids read
// and the continuation to resume from.
async function drain(it) {
  const ids = [];
  for (let i = 0; i < 100; i++) {
    const r = await it.readNext();
    if (r.statusCode === StatusCodes.NotModified) {
      return { ids, continuation: r.continuationToken };
    }
    ids.push(...r.result.map((d) => d.id));
  }
  throw new Error("the change feed never caught up");
}

async function main() {
  const [endpoint, key] = process.argv.slice(2);
  const client = new CosmosClient({ endpoint, key });
  const { database } = await client.databases.createIfNotExists({ id: "nodeprefix" });
  const { container } = await database.containers.createIfNotExists({
    id: "h",
    partitionKey: { paths: ["/t", "/u"], kind: PartitionKeyKind.MultiHash, version: 2 },
  });
  const want = [];
  for (let i = 0; i < 12; i++) {
    const doc = { id: "d" + String(i).padStart(2, "0"), t: "t" + (i % 3), u: "u" + (i % 2) };
    await container.items.create(doc);
    if (doc.t === "t1") want.push(doc.id);
  }
  const sorted = (a) => [...a].sort();

  const first = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(["t1"]), maxItemCount: 2 }));
  assert.deepEqual(sorted(first.ids), want, "from the beginning under the prefix t1");
  const whole = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(["t1", "u1"]) }));
  assert.deepEqual(sorted(whole.ids), want.filter((id) => Number(id.slice(1)) % 2 === 1), "under the whole key [t1, u1]");

  // Resumed from its continuation: only what changed since, under the prefix.
  await container.items.upsert({ id: "d01", t: "t1", u: "u1", n: 1 });
  await container.items.upsert({ id: "d00", t: "t0", u: "u0", n: 1 });
  await container.items.create({ id: "new", t: "t1", u: "u9" });
  const next = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(first.continuation) }));
  assert.deepEqual(sorted(next.ids), ["d01", "new"], "resumed under the prefix t1");
  await database.delete();
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
