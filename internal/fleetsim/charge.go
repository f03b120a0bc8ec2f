package fleetsim

import "fmt"

// Kind is the kind of a store call, as a Counter counts it.
type Kind int

// The kinds of store calls.
const (
	PointRead  Kind = iota // Read
	Create                 // Create
	Upsert                 // Upsert
	Replace                // Replace
	Delete                 // Delete
	Query                  // a page of Query
	ReadFeed               // a page of ReadFeed
	ChangeFeed             // a page of store.ChangeFeeder's ReadChanges
	Batch                  // store.Batcher's ExecuteBatch
	Fence                  // store.Fencer's RaiseFence or Fence
	Metadata               // a collection's create, delete, list, info, replace
	numKinds
)

var kindNames = [numKinds]string{"point read", "create", "upsert", "replace", "delete", "query", "read feed", "change feed", "batch", "fence", "metadata"}

// String returns the kind's name ("point read", "upsert", ...).
func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return fmt.Sprintf("kind(%d)", int(k))
	}
	return kindNames[k]
}

// Kinds returns every kind, in order.
func Kinds() []Kind {
	out := make([]Kind, numKinds)
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

// Charges is a table of request charges: what each store call costs on
// Cosmos DB, in request units (RU), by the size of the documents it reads
// or writes. DefaultCharges is the published one.
//
// Sources (Microsoft's published figures):
//
//   - "Optimize request cost in Azure Cosmos DB",
//     https://docs.microsoft.com/en-us/azure/cosmos-db/optimize-cost-reads-writes:
//     a point read of a 1 KB item costs 1 RU, of a 100 KB item 10 RU; a
//     write (insert, replace, upsert, delete) of a 1 KB item 5 RU, of a
//     100 KB item 50 RU, at session consistency (strong and bounded
//     staleness double the reads).
//   - "Request Units in Azure Cosmos DB",
//     https://learn.microsoft.com/cosmos-db/request-units: a point read of
//     a 1 KB item is 1 RU; writes and queries cost a variable number, a
//     query "potentially more than point operations".
//
// Between 1 KB and 100 KB a charge is interpolated linearly between the
// two published points; below 1 KB it is the 1 KB figure (Cosmos DB does
// not charge less than that); above 100 KB it goes on along the same
// line. Microsoft publishes no per-document figure for queries and feeds:
// this table charges a page a base (QueryPage, ChangeFeedPage) plus, per
// document returned, what a point read of it costs, which is an upper
// bound for a query served from the index (the real charge of a page
// that returns many small documents may be lower); the base, 2.3 RU, is
// about the smallest query charge seen on the service. A batch costs the sum of its operations, as Cosmos DB
// charges it. The fence (store.Fencer) is docshard's extension, not a
// Cosmos DB call: a raise is charged as a write, a read as a point read,
// so a protocol relying on it is not made to look free. Metadata calls
// (collections) are counted but charged nothing: Cosmos DB serves them
// from a separate budget.
type Charges struct {
	// Read1KB and Read100KB are a point read's charge for a document of 1 KB
	// and of 100 KB (1 and 10 RU).
	Read1KB, Read100KB float64
	// Write1KB and Write100KB are a write's charge (create, upsert,
	// replace, delete) for a document of 1 KB and of 100 KB (5 and 50 RU).
	Write1KB, Write100KB float64
	// QueryPage is the base charge of a query or read-feed page (2.3 RU),
	// to which each document returned adds its point read's charge.
	QueryPage float64
	// ChangeFeedPage is the base charge of a change-feed page (1 RU: an
	// empty page is answered like a point read of nothing), to which each
	// document returned adds its point read's charge.
	ChangeFeedPage float64
	// ReadMultiplier multiplies every read's charge: 1 at session or
	// weaker consistency, 2 at strong or bounded staleness.
	ReadMultiplier float64
}

// DefaultCharges is the table of the published figures (see Charges).
var DefaultCharges = Charges{
	Read1KB: 1, Read100KB: 10,
	Write1KB: 5, Write100KB: 50,
	QueryPage:      2.3,
	ChangeFeedPage: 1,
	ReadMultiplier: 1,
}

// sized interpolates between the charges at 1 KB and at 100 KB for a
// document of size bytes (at least the 1 KB charge).
func sized(at1, at100 float64, size int) float64 {
	kb := float64(size) / 1024
	if kb <= 1 {
		return at1
	}
	return at1 + (at100-at1)*(kb-1)/99
}

// ReadRU is the charge of a point read of a document of size bytes.
func (c *Charges) ReadRU(size int) float64 {
	return sized(c.Read1KB, c.Read100KB, size) * c.readMultiplier()
}

// WriteRU is the charge of a write of a document of size bytes.
func (c *Charges) WriteRU(size int) float64 { return sized(c.Write1KB, c.Write100KB, size) }

// PageRU is the charge of a page of kind k (Query, ReadFeed or
// ChangeFeed) returning documents of the given sizes.
func (c *Charges) PageRU(k Kind, sizes []int) float64 {
	ru := c.QueryPage * c.readMultiplier()
	if k == ChangeFeed {
		ru = c.ChangeFeedPage * c.readMultiplier()
	}
	for _, s := range sizes {
		ru += c.ReadRU(s)
	}
	return ru
}

func (c *Charges) readMultiplier() float64 {
	if c.ReadMultiplier <= 0 {
		return 1
	}
	return c.ReadMultiplier
}
