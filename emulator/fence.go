package emulator

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/docshard/docshard/store"
)

// docshard's extensions to the REST API. Cosmos DB has no fencing, so
// these headers are docshard's own; Cosmos DB and other servers neither
// send nor read them.
const (
	// HeaderServe is on every answer to a database read: the extensions
	// this server offers, comma-separated ("batch", "fence", "query": see
	// HeaderWholeQuery). A client
	// tells docshard serve from another endpoint by it.
	HeaderServe = "x-docshard-serve"
	// HeaderEpoch stamps a write (create, replace, upsert, delete, patch,
	// batch) with an epoch (store.WriteOptions.Epoch): below its
	// database's fence the write is refused with 412, body code
	// CodeFenced, and HeaderFence.
	HeaderEpoch = "x-docshard-epoch"
	// HeaderFence is the database's fence: on every answer to a database
	// read (GET dbs/{db}, found or not) and on a refused stamped write.
	HeaderFence = "x-docshard-fence"
	// HeaderRaiseFence on a database read raises the database's fence to
	// its epoch first (store.Fencer.RaiseFence); the answer's HeaderFence
	// is the fence then in force. A database need not exist to be fenced.
	HeaderRaiseFence = "x-docshard-raise-fence"
	// CodeFenced is the body's "code" of a write refused by the fence.
	CodeFenced = "Fenced"
	// HeaderReshard, "true" on a write (create, replace, upsert, delete),
	// marks it as a reshard's own (store.WriteOptions.Reshard): a copy, or
	// the clean-up of a moved source. Offered as the extension "reshard".
	HeaderReshard = "x-docshard-reshard"
	// HeaderHideReshard, "true" on a change-feed read, reads it without a
	// reshard's marks (store.ChangeFeedOptions.HideReshard): copies left
	// out, moved documents kept at their last version.
	HeaderHideReshard = "x-docshard-hide-reshard"
)

// extensions lists what the server offers of docshard's extensions, for
// HeaderServe.
func extensions(st store.Store) string {
	var out []string
	if _, ok := st.(store.Batcher); ok {
		out = append(out, "batch")
	}
	if _, ok := st.(store.Fencer); ok {
		out = append(out, "fence")
	}
	out = append(out, "query") // HeaderWholeQuery
	if _, ok := st.(store.ChangeFeeder); ok {
		out = append(out, "reshard") // HeaderReshard, HeaderHideReshard
	}
	return strings.Join(out, ",")
}

// epoch reads HeaderEpoch: 0 when absent.
func (c *call) epoch() (int64, *apiError) {
	v := c.r.Header.Get(HeaderEpoch)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, errorf(http.StatusBadRequest, "%s %q: want a whole number from 0", HeaderEpoch, v)
	}
	return n, nil
}

// fence handles the fencing headers of a database read: it raises the
// fence when HeaderRaiseFence asks, and sets HeaderServe and HeaderFence
// on the answer, whether the database is found or not.
func (s *Server) fence(c *call, db string) *apiError {
	h := c.w.Header()
	h.Set(HeaderServe, s.extensions)
	f, ok := s.st.(store.Fencer)
	raise := c.r.Header.Get(HeaderRaiseFence)
	switch {
	case !ok && raise != "":
		return unsupported("fencing (the store is not a store.Fencer)")
	case !ok:
		return nil
	}
	ctx := c.r.Context()
	var cur int64
	var err error
	if raise != "" {
		n, perr := strconv.ParseInt(strings.TrimSpace(raise), 10, 64)
		if perr != nil || n < 0 {
			return errorf(http.StatusBadRequest, "%s %q: want a whole number from 0", HeaderRaiseFence, raise)
		}
		cur, err = f.RaiseFence(ctx, "dbs/"+db, n)
	} else {
		cur, err = f.Fence(ctx, "dbs/"+db)
	}
	if err != nil {
		return fromStore(err)
	}
	h.Set(HeaderFence, strconv.FormatInt(cur, 10))
	return nil
}

// fencedAnswer adds HeaderFence to the answer of a write the fence of db
// refused.
func (s *Server) fencedAnswer(c *call, db string) {
	if f, ok := s.st.(store.Fencer); ok {
		if cur, err := f.Fence(c.r.Context(), "dbs/"+db); err == nil {
			c.w.Header().Set(HeaderFence, strconv.FormatInt(cur, 10))
		}
	}
}
