package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// HeaderQuota is docshard's extension for a collection's quota
// (store.CollectionSpec.Quota), which Cosmos DB's API has no setting for:
// on a container create it gives the quota as JSON,
// {"maxDocuments":N,"maxBytes":N} (either may be left out), and the
// server's store refuses every write that would take the container past
// it with 403, sub-status 1014 (as Cosmos DB refuses a write to a full
// partition; the cosmos backend maps it to store.ErrQuotaExceeded). Every
// answer with a container that has a quota carries it in this header.
// Cosmos DB ignores the header, and other clients need not send it.
const HeaderQuota = "x-docshard-quota"

// containerBody is a container as a client creates or replaces it.
type containerBody struct {
	ID           string `json:"id"`
	PartitionKey *struct {
		Paths []string `json:"paths"`
		Kind  string   `json:"kind"`
	} `json:"partitionKey"`
	DefaultTTL      *int            `json:"defaultTtl"`
	IndexingPolicy  json.RawMessage `json:"indexingPolicy"`
	UniqueKeyPolicy *struct {
		UniqueKeys []struct {
			Paths []string `json:"paths"`
		} `json:"uniqueKeys"`
	} `json:"uniqueKeyPolicy"`
	VectorEmbeddingPolicy json.RawMessage `json:"vectorEmbeddingPolicy"`
	FullTextPolicy        json.RawMessage `json:"fullTextPolicy"`
	ComputedProperties    json.RawMessage `json:"computedProperties"`
}

// spec turns a container body into the store's spec, refusing what the
// store cannot keep: a Range key, unique keys. Kind Hash takes one path,
// MultiHash (a hierarchical key) 2 to 3.
func (b *containerBody) spec() (store.CollectionSpec, *apiError) {
	var sp store.CollectionSpec
	pk := b.PartitionKey
	multi := pk != nil && strings.EqualFold(pk.Kind, "MultiHash")
	switch {
	case pk == nil || len(pk.Paths) == 0:
		return sp, errorf(http.StatusBadRequest, "container %q has no partition-key definition: give partitionKey {\"paths\": [\"/path\"], \"kind\": \"Hash\"}", b.ID)
	case !multi && pk.Kind != "" && !strings.EqualFold(pk.Kind, "Hash"):
		return sp, errorf(http.StatusBadRequest, "container %q: partition-key kind %q is not supported: want Hash, or MultiHash for a hierarchical key", b.ID, pk.Kind)
	case !multi && len(pk.Paths) > 1:
		return sp, errorf(http.StatusBadRequest, "container %q: partition-key kind Hash takes one path, got %d: give kind MultiHash for a hierarchical key of 2 to 3 paths", b.ID, len(pk.Paths))
	case multi && (len(pk.Paths) < 2 || len(pk.Paths) > partitionkey.MaxPaths):
		return sp, errorf(http.StatusBadRequest, "container %q: a hierarchical partition key (kind MultiHash) has 2 to %d paths, got %d: give kind Hash for one path", b.ID, partitionkey.MaxPaths, len(pk.Paths))
	}
	if multi {
		sp.PartitionKeyPaths = pk.Paths
	} else {
		sp.PartitionKeyPath = pk.Paths[0]
	}
	b.policies(&sp)
	if _, _, err := store.CheckSpec(&sp); err != nil {
		return sp, fromStore(err)
	}
	return sp, nil
}

// policies copies the container's settings other than its partition key
// into sp: default TTL, indexing policy, unique keys and the policies the
// store keeps as JSON (store.CheckSpec checks them).
func (b *containerBody) policies(sp *store.CollectionSpec) {
	sp.DefaultTTL = b.DefaultTTL
	if t := bytes.TrimSpace(b.IndexingPolicy); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		sp.Indexing = t
	}
	if b.UniqueKeyPolicy != nil {
		for _, k := range b.UniqueKeyPolicy.UniqueKeys {
			sp.UniqueKeys = append(sp.UniqueKeys, k.Paths)
		}
	}
	sp.VectorEmbeddingPolicy = b.VectorEmbeddingPolicy
	sp.FullTextPolicy = b.FullTextPolicy
	sp.ComputedProperties = b.ComputedProperties
}

// addPolicies adds to a container's resource m the settings the store
// keeps besides its partition key and indexing policy, as Cosmos DB
// writes them (uniqueKeyPolicy always, the others when set).
func addPolicies(m map[string]any, spec *store.CollectionSpec) {
	keys := make([]map[string][]string, 0, len(spec.UniqueKeys))
	for _, k := range spec.UniqueKeys {
		keys = append(keys, map[string][]string{"paths": k})
	}
	m["uniqueKeyPolicy"] = map[string]any{"uniqueKeys": keys}
	for name, v := range map[string]json.RawMessage{
		"vectorEmbeddingPolicy": spec.VectorEmbeddingPolicy,
		"fullTextPolicy":        spec.FullTextPolicy,
		"computedProperties":    spec.ComputedProperties,
	} {
		if len(v) > 0 {
			m[name] = v
		}
	}
}

// policiesText is the text of the settings addPolicies adds, for a
// container's ETag.
func policiesText(spec *store.CollectionSpec) string {
	b, _ := json.Marshal([]any{spec.UniqueKeys, spec.VectorEmbeddingPolicy, spec.FullTextPolicy, spec.ComputedProperties})
	return string(b)
}

// collections answers /dbs/{db}/colls: GET lists the database's
// collections, POST creates one or, as a query, queries them.
func (s *Server) collections(c *call, db string) *apiError {
	ctx := c.r.Context()
	if c.r.Method == http.MethodGet || c.r.Method == http.MethodPost && c.isQuery() {
		if _, ok, e := s.databaseExists(ctx, db); e != nil {
			return e
		} else if !ok {
			return dbNotFound(db)
		}
		links, err := s.st.ListCollections(ctx, "dbs/"+db)
		if err != nil {
			return fromStore(err)
		}
		items := make([][]byte, 0, len(links))
		for _, l := range links {
			info, err := s.st.CollectionInfo(ctx, l)
			if err != nil {
				continue // deleted since the listing
			}
			lc, _ := link.ParseCollection(l)
			items = append(items, containerJSON(newCollRef(lc.Database, lc.Collection), info.Spec))
		}
		return c.resourceFeed(ridString(dbRID(db)), "DocumentCollections", items)
	}
	if c.r.Method != http.MethodPost {
		return c.badMethod()
	}
	var body containerBody
	if e := c.decode("container", &body); e != nil {
		return e
	}
	if _, err := link.ParseCollection("dbs/" + db + "/colls/" + body.ID); err != nil || len(body.ID) > 255 {
		return errorf(http.StatusBadRequest, "container id %q: want 1 to 255 characters, none of / \\ ? #", body.ID)
	}
	spec, e := body.spec()
	if e != nil {
		return e
	}
	if spec.Quota, e = quotaHeader(c.r.Header.Get(HeaderQuota)); e != nil {
		return e
	}
	throughput, e := offerHeaders(c.r.Header)
	if e != nil {
		return e
	}
	s.admin.Lock()
	defer s.admin.Unlock()
	if _, ok, e := s.databaseExists(ctx, db); e != nil {
		return e
	} else if !ok {
		return dbNotFound(db)
	}
	ref := newCollRef(db, body.ID)
	s.paths.Delete(ref.link)
	if err := s.st.CreateCollection(ctx, ref.link, &spec); err != nil {
		return fromStore(err)
	}
	if e := s.recordOffer(ref.link, throughput); e != nil {
		_ = s.st.DeleteCollection(ctx, ref.link) // created with its throughput or not at all
		return e
	}
	return s.writeContainer(c, http.StatusCreated, ref)
}

// collection answers /dbs/{db}/colls/{coll}: GET reads it (with usage when
// x-ms-documentdb-populatequotainfo is set), PUT replaces it where nothing
// the store keeps changes, DELETE deletes it and its documents.
func (s *Server) collection(c *call, ref collRef) *apiError {
	ctx := c.r.Context()
	switch c.r.Method {
	case http.MethodGet:
		return s.writeContainer(c, http.StatusOK, ref)
	case http.MethodPut:
		var body containerBody
		if e := c.decode("container", &body); e != nil {
			return e
		}
		if body.ID != ref.coll {
			return errorf(http.StatusBadRequest, "the container's id %q differs from %q in the path", body.ID, ref.coll)
		}
		spec, e := body.spec()
		if e != nil {
			return e
		}
		info, err := s.st.CollectionInfo(ctx, ref.link)
		if err != nil {
			return fromStore(err)
		}
		if was, is := info.Spec.KeyPaths(), spec.KeyPaths(); !slices.Equal(was, is) || info.Spec.Hierarchical() != spec.Hierarchical() {
			return errorf(http.StatusBadRequest, "the partition key of container %q cannot change (%s to %s)", ref.coll, strings.Join(was, ", "), strings.Join(is, ", "))
		}
		if len(spec.Indexing) == 0 {
			spec.Indexing = json.RawMessage(defaultIndexing) // as Cosmos DB gives a container replaced without one
		}
		if !sameSettings(&spec, &info.Spec) {
			r, ok := s.st.(store.Replacer)
			if !ok {
				return unsupported("changing a container's settings over this store (it cannot replace a collection's spec)")
			}
			if err := r.ReplaceCollection(ctx, ref.link, &spec); err != nil {
				return fromStore(err)
			}
		}
		return s.writeContainer(c, http.StatusOK, ref)
	case http.MethodDelete:
		s.admin.Lock()
		defer s.admin.Unlock()
		s.paths.Delete(ref.link)
		if err := s.st.DeleteCollection(ctx, ref.link); err != nil {
			return fromStore(err)
		}
		if e := s.dropOffer(ref.link); e != nil {
			return e
		}
		c.empty(http.StatusNoContent, 1)
		return nil
	}
	return c.badMethod()
}

// quotaHeader reads HeaderQuota: nil when absent.
func quotaHeader(v string) (*store.Quota, *apiError) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var q store.Quota
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		return nil, errorf(http.StatusBadRequest, `%s %q: want {"maxDocuments": N, "maxBytes": N}: %v`, HeaderQuota, v, err)
	}
	sp := store.CollectionSpec{Quota: &q}
	if _, _, err := store.CheckSpec(&sp); err != nil {
		return nil, fromStore(err)
	}
	return sp.Quota, nil
}

func sameTTL(a, b *int) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// sameSettings reports whether a container's replace changes nothing the
// store keeps (its quota aside, which a replace does not give).
func sameSettings(a, b *store.CollectionSpec) bool {
	ai, bi := a.Indexing, b.Indexing
	if len(bi) == 0 {
		bi = json.RawMessage(defaultIndexing)
	}
	return sameTTL(a.DefaultTTL, b.DefaultTTL) && sameJSON(ai, bi) && policiesText(a) == policiesText(b)
}

// sameJSON reports whether two JSON texts hold equal values.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// writeContainer answers a collection's resource, with its usage in Cosmos
// DB's quota headers when asked (documentsSize in KB): the documents as
// clients read them, the system properties the store does not keep
// included (their length is the same for every document of a collection).
func (s *Server) writeContainer(c *call, status int, ref collRef) *apiError {
	info, err := s.st.CollectionInfo(c.r.Context(), ref.link)
	if err != nil {
		return fromStore(err)
	}
	if isTrue(c.r.Header.Get("x-ms-documentdb-populatequotainfo")) {
		system := int64(len(ref.appendSystem(nil, "", "", 1)))
		kb := (info.Bytes + info.Documents*system + 1023) / 1024
		h := c.w.Header()
		h.Set("x-ms-resource-quota", fmt.Sprintf("documentSize=%d;documentsSize=%d;documentsCount=-1;collectionSize=%d;", 10240, 10485760, 10485760))
		h.Set("x-ms-resource-usage", fmt.Sprintf("documentSize=%d;documentsSize=%d;documentsCount=%d;collectionSize=%d;", kb/1024, kb, info.Documents, kb))
	}
	if q := info.Spec.Quota; q != nil {
		text, _ := json.Marshal(q)
		c.w.Header().Set(HeaderQuota, string(text))
	}
	c.json(status, containerJSON(ref, info.Spec), 1)
	return nil
}

// pathOf returns a collection's partition-key paths (one, or a
// hierarchical key's 2 to 3), cached by link (the cache is cleared
// whenever the emulator creates or deletes the link).
func (s *Server) pathOf(ctx context.Context, ref collRef) (partitionkey.Paths, *apiError) {
	if p, ok := s.paths.Load(ref.link); ok {
		return p.(partitionkey.Paths), nil
	}
	info, err := s.st.CollectionInfo(ctx, ref.link)
	if err != nil {
		return nil, fromStore(err)
	}
	_, path, err := store.CheckSpec(&info.Spec)
	if err != nil {
		return nil, fromStore(err)
	}
	s.paths.Store(ref.link, path)
	return path, nil
}

// pkRanges answers /dbs/{db}/colls/{coll}/pkranges: one range covering
// every key. As an incremental feed (A-IM) with If-None-Match of the
// ranges' ETag, it answers 304: they never change.
func (s *Server) pkRanges(c *call, ref collRef) *apiError {
	if _, e := s.pathOf(c.r.Context(), ref); e != nil {
		return e
	}
	etag := pkRangesETag(ref)
	c.w.Header().Set("etag", etag)
	if c.r.Header.Get("A-IM") != "" && c.r.Header.Get("If-None-Match") == etag {
		c.empty(http.StatusNotModified, 1)
		return nil
	}
	c.w.Header().Set("x-ms-item-count", "1")
	c.json(http.StatusOK, feedJSON(ridString(ref.rid), "PartitionKeyRanges", [][]byte{pkRangeJSON(ref)}), 1)
	return nil
}
