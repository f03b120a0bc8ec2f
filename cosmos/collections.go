package cosmos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/store"
)

// containerSpec is what the store remembers of a container.
type containerSpec struct {
	spec  store.CollectionSpec
	paths partitionkey.Paths // one path, or a hierarchical key's 2 to 3
}

// headerQuota is docshard serve's quota extension, as package emulator
// defines it (HeaderQuota).
const headerQuota = "x-docshard-quota"

// CreateCollection creates the container (and its database when missing).
// A spec's Quota is sent as docshard serve's extension (x-docshard-quota),
// which serve enforces; Cosmos DB ignores it and keeps only its own
// limits, whose refusals are store.ErrQuotaExceeded too.
func (s *Store) CreateCollection(ctx context.Context, l string, spec *store.CollectionSpec) error {
	const op = "create collection"
	if err := s.checkOpen(op, l); err != nil {
		return err
	}
	c, err := link.ParseCollection(l)
	if err != nil {
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	sp, paths, err := store.CheckSpec(spec)
	if err != nil {
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	props := azcosmos.ContainerProperties{
		ID:                     c.Collection,
		PartitionKeyDefinition: keyDefinition(&sp),
	}
	if err := setPolicies(&props, &sp); err != nil {
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: err.Error(), Err: err}
	}
	if len(sp.UniqueKeys) > 0 {
		props.UniqueKeyPolicy = &azcosmos.UniqueKeyPolicy{}
		for _, k := range sp.UniqueKeys {
			props.UniqueKeyPolicy.UniqueKeys = append(props.UniqueKeyPolicy.UniqueKeys, azcosmos.UniqueKey{Paths: k})
		}
	}
	client := s.accountFor(c)
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: c.Database}, nil); err != nil && !conflict(err) {
		return mapErr(op, l, "", err)
	}
	db, err := client.NewDatabase(c.Database)
	if err != nil {
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Err: err}
	}
	cctx := ctx
	if sp.Quota != nil {
		// docshard serve's extension (emulator.HeaderQuota): Cosmos DB
		// ignores the header and enforces only its own limits.
		text, _ := json.Marshal(sp.Quota)
		cctx = policy.WithHTTPHeader(ctx, http.Header{headerQuota: {string(text)}})
	}
	if _, err := db.CreateContainer(cctx, props, nil); err != nil {
		if conflict(err) {
			return &store.Error{Kind: store.ErrConflict, Op: op, Link: l, Status: 409, Message: "the collection exists"}
		}
		return mapErr(op, l, "", err)
	}
	s.mu.Lock()
	s.specs[c.String()] = &containerSpec{spec: sp, paths: paths}
	s.mu.Unlock()
	return nil
}

// specOf returns the spec of a container as the service describes it.
func specOf(props *azcosmos.ContainerProperties) store.CollectionSpec {
	sp := store.CollectionSpec{PartitionKeyPath: "/id"}
	if props != nil {
		switch kp := props.PartitionKeyDefinition.Paths; {
		case len(kp) > 1:
			sp.PartitionKeyPath, sp.PartitionKeyPaths = "", kp
		case len(kp) == 1:
			sp.PartitionKeyPath = kp[0]
		}
		if props.DefaultTimeToLive != nil {
			ttl := int(*props.DefaultTimeToLive)
			sp.DefaultTTL = &ttl
		}
		if props.IndexingPolicy != nil {
			sp.Indexing, _ = json.Marshal(props.IndexingPolicy)
		}
		if props.UniqueKeyPolicy != nil {
			for _, k := range props.UniqueKeyPolicy.UniqueKeys {
				sp.UniqueKeys = append(sp.UniqueKeys, k.Paths)
			}
		}
		if props.VectorEmbeddingPolicy != nil {
			sp.VectorEmbeddingPolicy, _ = json.Marshal(props.VectorEmbeddingPolicy)
		}
		if props.FullTextPolicy != nil {
			sp.FullTextPolicy, _ = json.Marshal(props.FullTextPolicy)
		}
	}
	return sp
}

// setPolicies sets on props the settings of sp that a replace may change:
// default TTL, indexing, vector embedding and full-text policies. azcosmos
// v1.5.0 has no field for computed properties, so a spec with them is an
// error: they would be dropped silently.
func setPolicies(props *azcosmos.ContainerProperties, sp *store.CollectionSpec) error {
	props.DefaultTimeToLive = nil
	if sp.DefaultTTL != nil {
		ttl := int32(*sp.DefaultTTL)
		props.DefaultTimeToLive = &ttl
	}
	props.IndexingPolicy = nil
	if len(sp.Indexing) > 0 {
		var ip azcosmos.IndexingPolicy
		if err := json.Unmarshal(sp.Indexing, &ip); err != nil {
			return fmt.Errorf("indexingPolicy is not a Cosmos DB indexing policy: %w", err)
		}
		props.IndexingPolicy = &ip
	}
	props.VectorEmbeddingPolicy, props.FullTextPolicy = nil, nil
	if len(sp.VectorEmbeddingPolicy) > 0 {
		props.VectorEmbeddingPolicy = &azcosmos.VectorEmbeddingPolicy{}
		if err := json.Unmarshal(sp.VectorEmbeddingPolicy, props.VectorEmbeddingPolicy); err != nil {
			return fmt.Errorf("vectorEmbeddingPolicy is not a Cosmos DB vector embedding policy: %w", err)
		}
	}
	if len(sp.FullTextPolicy) > 0 {
		props.FullTextPolicy = &azcosmos.FullTextPolicy{}
		if err := json.Unmarshal(sp.FullTextPolicy, props.FullTextPolicy); err != nil {
			return fmt.Errorf("fullTextPolicy is not a Cosmos DB full-text policy: %w", err)
		}
	}
	if len(sp.ComputedProperties) > 0 {
		return fmt.Errorf("computedProperties: the cosmos backend cannot send them (azcosmos v1.5.0 has no field for them); create the container with another client")
	}
	return nil
}

// ReplaceCollection changes the container's settings (store.Replacer):
// it reads the container and replaces it with spec's default TTL, indexing,
// vector embedding and full-text policies (store.CheckReplace: the
// partition key and unique keys cannot change; computed properties cannot
// be sent, see CreateCollection). Cost: a read and a replace of the
// container.
func (s *Store) ReplaceCollection(ctx context.Context, l string, spec *store.CollectionSpec) error {
	const op = "replace collection"
	cc, c, err := s.container(op, l)
	if err != nil {
		return err
	}
	resp, err := cc.Read(ctx, nil)
	if err != nil {
		return mapErr(op, l, "", err)
	}
	cur := specOf(resp.ContainerProperties)
	sp, err := store.CheckReplace(l, &cur, spec)
	if err != nil {
		return err
	}
	props := *resp.ContainerProperties
	if err := setPolicies(&props, &sp); err != nil {
		return &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: err.Error(), Err: err}
	}
	_, err = cc.Replace(ctx, props, nil)
	s.mu.Lock()
	delete(s.specs, c.String())
	s.mu.Unlock()
	if err != nil {
		return mapErr(op, l, "", err)
	}
	return nil
}

// DeleteCollection deletes the container.
func (s *Store) DeleteCollection(ctx context.Context, l string) error {
	const op = "delete collection"
	cc, c, err := s.container(op, l)
	if err != nil {
		return err
	}
	if _, err := cc.Delete(ctx, nil); err != nil {
		return mapErr(op, l, "", err)
	}
	s.mu.Lock()
	delete(s.specs, c.String())
	s.mu.Unlock()
	return nil
}

// ListCollections lists a database's containers, sorted. A database that
// does not exist has none. When Options.Accounts spreads the database's
// collections over several accounts, each account is listed (one query
// per account) and a container counts only in the account the store
// reaches it in: one of the same name that a binding shadows (left in the
// database's own account when its collection moved to another) is not
// listed.
func (s *Store) ListCollections(ctx context.Context, dbLink string) ([]string, error) {
	const op = "list collections"
	if err := s.checkOpen(op, dbLink); err != nil {
		return nil, err
	}
	dbID, err := link.ParseDatabase(dbLink)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: dbLink, Err: err}
	}
	out := []string{}
	for _, cl := range s.databaseClients(dbID) {
		db, err := cl.NewDatabase(dbID)
		if err != nil {
			return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: dbLink, Err: err}
		}
		pager := db.NewQueryContainersPager("SELECT * FROM c", nil)
	pages:
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				if notFound(err) {
					break pages
				}
				return nil, mapErr(op, dbLink, "", err)
			}
			for _, props := range page.Containers {
				c := link.Collection{Database: dbID, Collection: props.ID}
				if s.accountFor(c) == cl {
					out = append(out, c.String())
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// spec returns a container's spec, reading it from the service once.
func (s *Store) spec(ctx context.Context, op string, cc *azcosmos.ContainerClient, c link.Collection, l string) (*containerSpec, error) {
	s.mu.RLock()
	cs := s.specs[c.String()]
	s.mu.RUnlock()
	if cs != nil {
		return cs, nil
	}
	resp, err := cc.Read(ctx, nil)
	if err != nil {
		return nil, mapErr(op, l, "", err)
	}
	sp := specOf(resp.ContainerProperties)
	paths, err := partitionkey.ParsePaths(sp.KeyPaths()...)
	if err != nil {
		return nil, &store.Error{Kind: store.ErrBadRequest, Op: op, Link: l, Message: err.Error()}
	}
	cs = &containerSpec{spec: sp, paths: paths}
	s.mu.Lock()
	s.specs[c.String()] = cs
	s.mu.Unlock()
	return cs, nil
}

// CollectionInfo returns the container's spec and usage: from the quota
// headers (x-ms-resource-usage) when the service sends them, otherwise by
// counting and measuring the documents (a full scan). The spec's Quota is
// the one docshard serve enforces (its x-docshard-quota header), nil on
// Cosmos DB.
func (s *Store) CollectionInfo(ctx context.Context, l string) (*store.CollectionInfo, error) {
	const op = "collection info"
	cc, c, err := s.container(op, l)
	if err != nil {
		return nil, err
	}
	resp, err := cc.Read(ctx, &azcosmos.ReadContainerOptions{PopulateQuotaInfo: true})
	if err != nil {
		return nil, mapErr(op, l, "", err)
	}
	cs, err := s.spec(ctx, op, cc, c, l)
	if err != nil {
		return nil, err
	}
	info := &store.CollectionInfo{Link: c.String(), Spec: cs.spec}
	info.Spec.Quota = nil // only what the server says it enforces
	if v := resp.RawResponse.Header.Get(headerQuota); v != "" {
		var q store.Quota
		if json.Unmarshal([]byte(v), &q) == nil {
			info.Spec.Quota = &q
		}
	}
	if usage := resp.RawResponse.Header.Get("x-ms-resource-usage"); usage != "" {
		docs, okD := usageField(usage, "documentsCount")
		kb, okS := usageField(usage, "documentsSize")
		if okD && okS {
			info.Documents, info.Bytes = docs, kb*1024
			return info, nil
		}
	}
	cont := ""
	for {
		page, err := s.ReadFeed(ctx, l, &store.FeedOptions{PageSize: 1000, Continuation: cont})
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			info.Documents++
			info.Bytes += int64(len(it))
		}
		if page.Continuation == "" {
			return info, nil
		}
		cont = page.Continuation
	}
}

// usageField reads "name=value" from a header like
// "documentsSize=12;documentsCount=3".
func usageField(h, name string) (int64, bool) {
	for _, part := range strings.Split(h, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && strings.EqualFold(k, name) {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func (cs *containerSpec) String() string {
	segs := make([][]string, len(cs.paths))
	for i, p := range cs.paths {
		segs[i] = p.Segments()
	}
	return fmt.Sprintf("%s %v", cs.paths, segs)
}

// keyDefinition is the container's partition-key definition for a
// normalised spec: kind Hash with its one path, or kind MultiHash (version
// 2, as Cosmos DB requires) with a hierarchical key's paths.
func keyDefinition(sp *store.CollectionSpec) azcosmos.PartitionKeyDefinition {
	if sp.Hierarchical() {
		return azcosmos.PartitionKeyDefinition{Kind: azcosmos.PartitionKeyKindMultiHash, Paths: sp.KeyPaths(), Version: 2}
	}
	return azcosmos.PartitionKeyDefinition{Paths: []string{sp.PartitionKeyPath}}
}
