package emulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// Resource ids. Cosmos DB names every resource also by a _rid: 4 bytes for
// a database, those and 4 more for a collection, those and 8 more for a
// document, in base64 with '/' written as '-'. The store keeps no _rid, so
// the emulator derives a database's and a collection's from names
// (SHA-256): stable across restarts and processes, the same for a name
// deleted and created again. A document's follows its place in the store's
// read feed (appendSeqRID), so they follow creation (Cosmos DB documents
// no order of _rids: a unique, hierarchical, system-generated id); from its key
// and id (appendDocRID) where the store keeps no such place. The bits
// Cosmos DB's SDKs read to tell resource kinds apart are set as theirs:
// collection ids have the top bit of their first byte clear (set means a
// user), document ids the top four bits of their last byte (the kind,
// 0 for a document).

func digest(parts ...string) [sha256.Size]byte {
	return sha256.Sum256([]byte(strings.Join(parts, "\x00")))
}

func ridString(b []byte) string {
	return string(appendRID(nil, b))
}

// appendRID appends b in base64 with '/' written as '-'.
func appendRID(dst, b []byte) []byte {
	n := len(dst)
	dst = base64.StdEncoding.AppendEncode(dst, b)
	for i := n; i < len(dst); i++ {
		if dst[i] == '/' {
			dst[i] = '-'
		}
	}
	return dst
}

// dbRID returns a database's 4-byte id.
func dbRID(db string) []byte {
	d := digest("db", db)
	return d[:4:4]
}

// collRID returns a collection's 8-byte id.
func collRID(db, coll string) []byte {
	d := digest("coll", db, coll)
	out := append(dbRID(db), d[:4]...)
	out[4] &^= 0x80
	return out
}

// appendDocRID appends a document's 16-byte id, from its collection's id,
// its partition-key text and its id, as appendRID writes it.
func appendDocRID(dst, coll []byte, pkText, id string) []byte {
	var in [256]byte
	b := append(append(append(append(in[:0], "doc\x00"...), pkText...), 0), id...)
	d := sha256.Sum256(b)
	var out [16]byte
	copy(out[:], coll)
	copy(out[len(coll):], d[:8])
	out[15] &^= 0xf0
	return appendRID(dst, out[:len(coll)+8])
}

// appendSeqRID appends the 16-byte id of the document at place seq of its
// collection's read feed (store.Document.Seq), as appendRID writes it: the
// collection's id, then seq's low 45 bits as nine digits of 5 bits, most
// significant first, each in a 6-bit group of its own (the 12th to 20th
// characters of the text), and a last byte of 0 (a document). Digits of
// 5 bits are written 'A'-'Z' and 'a'-'f', in ASCII order, so the texts of
// one collection's documents sort as their seqs do, so a page put in _rid
// order keeps the feed's order (the cosmos backend's resume needs no such
// order: TestReadFeedResumeNeedsNoRIDOrder). Unique below 2^45 documents created in a
// collection.
func appendSeqRID(dst, coll []byte, seq uint64) []byte {
	var out [16]byte
	copy(out[:8], coll)
	out[8] = byte(seq>>40) & 31 // the 12th character; the 11th keeps the collection's bits
	var groups uint64           // the 13th to 20th characters: bytes 9-14
	for i := 7; i >= 0; i-- {
		groups = groups<<6 | (seq>>(5*uint(i)))&31
	}
	for i := 14; i >= 9; i-- {
		out[i] = byte(groups)
		groups >>= 8
	}
	return appendRID(dst, out[:])
}

// collRef is a collection addressed by a request, with its ids.
type collRef struct {
	db, coll string
	link     string // dbs/{db}/colls/{coll}
	rid      []byte
	self     string // dbs/{dbrid}/colls/{collrid}/
}

func newCollRef(db, coll string) collRef {
	rid := collRID(db, coll)
	return collRef{db: db, coll: coll, link: "dbs/" + db + "/colls/" + coll, rid: rid,
		self: "dbs/" + ridString(rid[:4]) + "/colls/" + ridString(rid) + "/"}
}

// refCache keeps the collRef of the collections requests address, so their
// ids (two SHA-256 digests) are computed once. Names come from clients, so
// it holds at most maxCachedRefs; past that, refs are computed each time.
type refCache struct {
	mu   sync.RWMutex
	refs map[[2]string]collRef
}

const maxCachedRefs = 4096

func (rc *refCache) get(db, coll string) collRef {
	k := [2]string{db, coll}
	rc.mu.RLock()
	ref, ok := rc.refs[k]
	rc.mu.RUnlock()
	if ok {
		return ref
	}
	ref = newCollRef(db, coll)
	rc.mu.Lock()
	if rc.refs == nil {
		rc.refs = map[[2]string]collRef{}
	}
	if len(rc.refs) < maxCachedRefs {
		rc.refs[k] = ref
	}
	rc.mu.Unlock()
	return ref
}

// withSystem returns a stored document's text with the system properties
// the store does not keep: _rid, _self and _attachments (the store writes
// _etag and _ts). seq is its store.Document.Seq, 0 when the store keeps
// none (see appendSystem).
func (c collRef) withSystem(body []byte, pkText, id string, seq uint64) []byte {
	end := bytes.LastIndexByte(body, '}')
	if end < 0 {
		return body
	}
	out := make([]byte, 0, len(body)+len(c.self)+128)
	out = append(out, body[:end]...)
	out = c.appendSystem(out, pkText, id, seq)
	return append(out, body[end:]...)
}

// appendSystem appends the system properties withSystem adds, each after
// a comma. The _rid follows the read feed (appendSeqRID) where the store
// says the document's place (seq > 0); else it is derived from the key
// and id (appendDocRID).
func (c collRef) appendSystem(dst []byte, pkText, id string, seq uint64) []byte {
	dst = append(dst, `,"_rid":"`...)
	n := len(dst)
	if seq > 0 {
		dst = appendSeqRID(dst, c.rid, seq)
	} else {
		dst = appendDocRID(dst, c.rid, pkText, id)
	}
	rid := dst[n:]
	dst = append(dst, `","_self":"`...)
	dst = append(dst, c.self...)
	dst = append(dst, "docs/"...)
	dst = append(dst, rid...)
	return append(dst, `/","_attachments":"attachments/"`...)
}

// keyTextOf reads the partition-key value at the collection's paths from a
// stored document and returns its identity text (see
// partitionkey.Paths.AppendDocIdentity; store.NoneText for an object or
// array there, which a store would not have accepted).
func keyTextOf(body []byte, paths partitionkey.Paths) string {
	text, err := paths.AppendDocIdentity(nil, body)
	if err != nil {
		return store.NoneText
	}
	return string(text)
}

// etagOf returns a quoted ETag for a resource from the parts that make its
// state.
func etagOf(parts ...string) string {
	d := digest(parts...)
	return `"` + hex.EncodeToString(d[:8]) + `"`
}

// accountJSON is the database account as the official emulator answers
// it: one region, "South Central US", whose endpoint is the one given
// (regionEndpoint), readable and writable; Strong consistency; and the query
// engine's limits. Strong is the official emulator's answer (azcosmos's
// TestGlobalEndpointManagerEmulator expects it) where a new account of the
// service says Session, and it is also the truth here: every read sees
// every acknowledged write.
func accountJSON(endpoint string) []byte {
	region := []map[string]string{{"name": "South Central US", "databaseAccountEndpoint": endpoint}}
	b, _ := json.Marshal(map[string]any{
		"id":                           "docshard",
		"_rid":                         "docshard",
		"_self":                        "",
		"media":                        "//media/",
		"addresses":                    "//addresses/",
		"_dbs":                         "//dbs/",
		"writableLocations":            region,
		"readableLocations":            region,
		"enableMultipleWriteLocations": false,
		"userConsistencyPolicy":        map[string]string{"defaultConsistencyLevel": "Strong"},
		"userReplicationPolicy":        map[string]any{"asyncReplication": false, "minReplicaSetSize": 1, "maxReplicasetSize": 1},
		"systemReplicationPolicy":      map[string]any{"minReplicaSetSize": 1, "maxReplicasetSize": 1},
		"readPolicy":                   map[string]any{"primaryReadCoefficient": 1, "secondaryReadCoefficient": 1},
		"queryEngineConfiguration": `{"maxSqlQueryInputLength":262144,"maxJoinsPerSqlQuery":5,"maxLogicalAndPerSqlQuery":500,` +
			`"maxLogicalOrPerSqlQuery":500,"maxUdfRefPerSqlQuery":10,"maxInExpressionItemsCount":16000,"queryMaxInMemorySortDocumentCount":500,` +
			`"maxQueryRequestTimeoutFraction":0.9,"sqlAllowNonFiniteNumbers":false,"sqlAllowAggregateFunctions":true,"sqlAllowSubQuery":true,` +
			`"sqlAllowScalarSubQuery":true,"allowNewKeywords":true,"sqlAllowLike":true,"sqlAllowGroupByClause":true,"maxSpatialQueryCells":12,` +
			`"spatialMaxGeometryPointCount":256,"sqlDisableOptimizationFlags":0,"sqlAllowTop":true,"enableSpatialIndexing":true}`,
	})
	return b
}

// databaseJSON is a database resource.
func databaseJSON(id string, ts int64) []byte {
	rid := ridString(dbRID(id))
	b, _ := json.Marshal(map[string]any{
		"id": id, "_rid": rid, "_self": "dbs/" + rid + "/", "_etag": etagOf("db", id, strconv.FormatInt(ts, 10)),
		"_colls": "colls/", "_users": "users/", "_ts": ts,
	})
	return b
}

// defaultIndexing is the indexing policy Cosmos DB gives a container
// created without one.
const defaultIndexing = `{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}`

// containerJSON is a collection's resource: its spec as Cosmos DB writes
// it. The store keeps no creation time, so _ts is 0.
func containerJSON(c collRef, spec store.CollectionSpec) []byte {
	indexing := json.RawMessage(defaultIndexing)
	if len(spec.Indexing) > 0 {
		indexing = spec.Indexing
	}
	ttl := "off"
	if spec.DefaultTTL != nil {
		ttl = strconv.Itoa(*spec.DefaultTTL)
	}
	m := map[string]any{
		"id":             c.coll,
		"_rid":           ridString(c.rid),
		"_self":          c.self,
		"_etag":          etagOf("coll", c.link, spec.PartitionKeyPath, ttl, string(indexing), policiesText(&spec)),
		"_ts":            0,
		"partitionKey":   keyDefinitionJSON(&spec),
		"indexingPolicy": indexing,
		"conflictResolutionPolicy": map[string]string{
			"mode": "LastWriterWins", "conflictResolutionPath": "/_ts", "conflictResolutionProcedure": "",
		},
		"geospatialConfig": map[string]string{"type": "Geography"},
		"_docs":            "docs/", "_sprocs": "sprocs/", "_triggers": "triggers/", "_udfs": "udfs/", "_conflicts": "conflicts/",
	}
	if spec.DefaultTTL != nil {
		m["defaultTtl"] = *spec.DefaultTTL
	}
	addPolicies(m, &spec)
	b, _ := json.Marshal(m)
	return b
}

// pkRangeID is the one partition-key range of every collection.
const pkRangeID = "0"

// pkRangesETag is the ETag of a collection's partition-key ranges, which
// never change.
func pkRangesETag(c collRef) string { return etagOf("pkranges", c.link) }

// pkRangeJSON is the one partition-key range of a collection: the whole
// key space, "" to "FF".
func pkRangeJSON(c collRef) []byte {
	rid := append(append(make([]byte, 0, 16), c.rid...), 2, 0, 0, 0, 0, 0, 0, 0x50)
	b, _ := json.Marshal(map[string]any{
		"id": pkRangeID, "_rid": ridString(rid), "_self": c.self + "pkranges/" + ridString(rid) + "/",
		"_etag": pkRangesETag(c), "minInclusive": "", "maxExclusive": "FF", "ridPrefix": 0,
		"throughputFraction": 1, "status": "online", "parents": []string{}, "_ts": 0, "lsn": 1,
	})
	return b
}
