// Package provision holds what the resolvers that name and create their own
// collections (kinds "managed" and "spillover") share: the collection-name
// prefix they check, and the collection template, bound to the partition
// key, written in their JSON and handed to resolver.Provision.
package provision

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/store"
)

// MaxPrefix is the longest collection prefix, in bytes: with a sequence
// number it stays within a collection id's 255 characters.
const MaxPrefix = 200

// CheckPrefix refuses a collection prefix that cannot start a collection
// id: empty (missing says why it is needed), holding / \ ? or #, starting
// with _ (docshard's own collections do), or longer than MaxPrefix. The
// error is a *resolver.ConfigError naming "collectionPrefix".
func CheckPrefix(p, missing string) error {
	switch {
	case p == "":
		return resolver.Invalid("collectionPrefix", nil, "missing: "+missing)
	case strings.ContainsAny(p, `/\?#`):
		return resolver.Invalid("collectionPrefix", p, `must not contain / \ ? or #`)
	case strings.HasPrefix(p, "_"):
		return resolver.Invalid("collectionPrefix", p, "must not start with _ (docshard's own collections do)")
	case len(p) > MaxPrefix:
		return resolver.Invalid("collectionPrefix", p, fmt.Sprintf("longer than %d bytes", MaxPrefix))
	}
	return nil
}

// Template returns the spec collections are created with: spec (nil means
// defaults), partitioned by key's first path. A spec whose
// partitionKeyPath is set must name that path; otherwise the error is a
// *resolver.ConfigError naming "template.partitionKeyPath". A spec with a
// quota is refused, naming "template.quota".
func Template(spec *store.CollectionSpec, key resolver.KeyDef) (store.CollectionSpec, error) {
	var t store.CollectionSpec
	if spec != nil {
		t = *spec
		if t.Quota != nil {
			// A kind that bounds its collections (spillover) sets the
			// quota from its own settings; a ring has nowhere to send a
			// write its collection refuses.
			return t, resolver.Invalid("template.quota", nil, "not a template setting: a spillover's maxDocuments and maxBytes set its collections' quota")
		}
		if p := t.PartitionKeyPath; p != "" {
			// The one conflict rule (store.SameKeyPath): /id and /"id" are one path.
			same := false
			if !key.IsZero() {
				same, _ = store.SameKeyPath(p, key.Paths()[0])
			}
			if !same {
				return t, resolver.Invalid("template.partitionKeyPath", p, "must be the partition key's first path (or left out)")
			}
		}
	}
	if !key.IsZero() {
		t.PartitionKeyPath = key.Paths()[0]
	}
	return t, nil
}

// JSON returns template t as a resolver writes it (its "template" member):
// without the partition-key path, which the resolver's partitionKey gives;
// nil when nothing else is set.
func JSON(t store.CollectionSpec) *store.CollectionSpec {
	if t.DefaultTTL == nil && len(t.Indexing) == 0 {
		return nil
	}
	t.PartitionKeyPath = ""
	return &t
}

// Provision returns the resolver.Provision that creates the collections in
// create (and requires those in keep, with keepReason) from template t.
func Provision(t store.CollectionSpec, create, keep []string, keepReason string) resolver.Provision {
	key := t.PartitionKeyPath
	t.PartitionKeyPath = ""
	text, _ := json.Marshal(t) // a CollectionSpec always encodes
	return resolver.Provision{Create: create, Keep: keep, KeepReason: keepReason, KeyPath: key, Template: text}
}
