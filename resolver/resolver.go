package resolver

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/docshard/docshard/partitionkey"
)

// Resolver maps documents and partition keys to collection links
// ("dbs/{db}/colls/{coll}").
//
// A Resolver is an immutable value: every implementation in this module is
// safe for concurrent use and is replaced whole, never mutated, when
// configuration changes.
//
// What callers may rely on (docs/design.md#the-resolver-contract):
//   - ResolveForCreate returns exactly one link for a key, the same one
//     every time for the same resolver value.
//   - ResolveForRead returns every collection that may hold the key, each
//     link once, in the order to look in: the most authoritative placement
//     first (for a resolver moving keys, the new placement, then the old one).
//     For a nil key it returns every collection the resolver knows, in a
//     stable order.
//   - The slice ResolveForRead returns belongs to the resolver: callers
//     must not modify it, and a resolver may hand the same slice to many
//     callers (a ring returns a shared one-element slice and allocates
//     nothing). Clone it before changing it.
type Resolver interface {
	// PartitionKey returns the partition key of a document: a struct (json
	// tags honoured), a map[string]any, or raw JSON ([]byte,
	// json.RawMessage). A document without the key yields an error wrapping
	// ErrNoPartitionKey.
	PartitionKey(doc any) (any, error)
	// ResolveForCreate returns the one collection a new document with this
	// key goes to. A nil key is an error wrapping ErrNoPartitionKey.
	ResolveForCreate(key any) (string, error)
	// ResolveForRead returns every collection that may hold this key, each
	// link once, in the order to look in. A nil key returns every
	// collection the resolver knows, in a stable order. The result is
	// read-only (see the type's documentation).
	ResolveForRead(key any) ([]string, error)
}

// Kinded is implemented by every resolver that can be serialised: Kind
// returns the "kind" tag of its JSON form ("hash", "range", "lookup", ...).
type Kinded interface {
	Kind() string
}

// KeyDefiner is an optional capability of a resolver that reads documents
// by a partition-key definition of its own (hash, range and lookup do; a
// resolver nested in another one is handed keys and may have none). With
// it a caller can read the key of a raw JSON document in place, without
// decoding it (KeyDef.AppendKey, KeyDef.ExtractRaw), and can create
// collections partitioned by the key's path, which the router does. A
// resolver whose KeyDef is zero reads no documents itself.
type KeyDefiner interface {
	KeyDef() KeyDef
}

// Provisioner is an optional capability of a resolver kind that creates
// its own collections from a spec it carries (kinds "managed" and
// "spillover" have it). Code that makes a database's collections exist
// (router.Client.EnsureCollections, docshard.Open with EnsureCollections,
// docshard load) asks it what to create, and from what, instead of
// switching on kinds; a resolver without it gets every collection
// ResolveForRead(nil) names, created from the caller's template. The
// conflict rule is the same either way (store.EnsureCollections): an
// existing collection partitioned by another path is a
// *store.KeyPathError. Provision must be cheap (it is asked on every
// ensure) and return fresh slices.
type Provisioner interface {
	Resolver
	Provision() Provision
}

// Provision is what a Provisioner wants to exist in the store.
type Provision struct {
	// Create lists the collections created from Template when missing.
	Create []string
	// Keep lists collections that must exist and are never created again
	// (a spillover's sealed collections: created empty, their documents
	// would be lost without a word); a missing one is reported, with
	// KeepReason saying what to do.
	Keep       []string
	KeepReason string
	// KeyPath is the partition-key path of every one ("" means "/id").
	KeyPath string
	// Template is the rest of the collections' spec in the JSON form of
	// store.CollectionSpec ({"defaultTtl":3600,"indexingPolicy":{...}});
	// nil means defaults. (The resolver packages do not import the store,
	// hence JSON.)
	Template json.RawMessage
}

// TextResolver is an optional capability of a resolver that places a key by
// its canonical text alone (the text KeyString gives), as the hash ring does.
// With it a caller holding a raw JSON document places it without allocating:
//
//	buf, err := keyDef.AppendKey(buf[:0], doc) // the key's canonical text
//	link, err := r.ResolveTextForCreate(buf)
//
// ResolveTextForCreate(text) must return what ResolveForCreate returns for
// any key whose canonical text is text, and must not keep text. The router
// places raw JSON documents this way.
type TextResolver interface {
	Resolver
	ResolveTextForCreate(text []byte) (string, error)
}

// Sentinel errors. Errors returned by resolvers wrap one of these, so callers
// test them with errors.Is.
var (
	// ErrNoPartitionKey: the document has no value at the partition-key
	// path, the key passed to ResolveForCreate is nil, or the resolver has no
	// partitionKey to extract with. It is partitionkey.ErrNoPartitionKey.
	ErrNoPartitionKey = partitionkey.ErrNoPartitionKey
	// ErrKeyType: the key has a type the resolver cannot place (a bool for a
	// hash ring, a string for a numeric range, ...). It is
	// partitionkey.ErrKeyType.
	ErrKeyType = partitionkey.ErrKeyType
	// ErrNoTarget: no collection is configured for the key (a lookup value
	// with no entry and no default, a range key outside every range).
	ErrNoTarget = errors.New("no collection for partition key")
	// ErrInvalid: a resolver definition (JSON or constructor arguments) is
	// malformed or out of range. Errors wrapping it are *ConfigError.
	ErrInvalid = errors.New("invalid resolver definition")
	// ErrMoving: the key is being switched to another collection at this
	// moment (a transition resolver frozen for a reshard's cutover), so it
	// cannot be written; a router following the shared state retries once
	// the switch is published.
	ErrMoving = errors.New("the key is moving to another collection")
)

// KeyError reports a key that could not be resolved or extracted. It names
// the key (and the path it came from, where there is one) and wraps one of
// ErrNoPartitionKey, ErrKeyType or ErrNoTarget. It is partitionkey.KeyError,
// so the errors of both packages match errors.As with either name.
type KeyError = partitionkey.KeyError

func quoteKey(k any) string {
	if s, ok := k.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", k)
}

// ConfigError reports a malformed resolver definition. Field is a path into
// the JSON form ("default.collections[1]", "ranges[2].high"), so the message
// names exactly what to fix.
type ConfigError struct {
	Field  string // where the problem is; empty for the document as a whole
	Value  any    // the offending value, when there is one
	Reason string // what is wrong
	Err    error  // an underlying cause, may be nil
}

// Error implements error.
func (e *ConfigError) Error() string {
	msg := "resolver: invalid definition"
	if e.Field != "" {
		msg += ": " + e.Field
	}
	if e.Value != nil {
		msg += fmt.Sprintf(" = %s", quoteKey(e.Value))
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrInvalid and the underlying cause.
func (e *ConfigError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}

// Invalid returns a *ConfigError for field with the given value and reason.
func Invalid(field string, value any, reason string) error {
	return &ConfigError{Field: field, Value: value, Reason: reason}
}

// InField prefixes the field path of a *ConfigError in err with field, so a
// nested decoder's error names its place in the whole tree
// ("default" + "collections[1]" = "default.collections[1]"). Any other
// error is wrapped in a new *ConfigError for field. A nil err stays nil.
func InField(field string, err error) error {
	if err == nil {
		return nil
	}
	var ce *ConfigError
	if errors.As(err, &ce) {
		out := *ce
		switch {
		case out.Field == "":
			out.Field = field
		case out.Field[0] == '[':
			out.Field = field + out.Field
		default:
			out.Field = field + "." + out.Field
		}
		return &out
	}
	return &ConfigError{Field: field, Err: err}
}

// Owner is an optional capability of a resolver whose collections may hold
// documents they do not own: copies on their way in or out while a
// database moves between placements (a transition). SharedCollections names
// the collections that may hold such documents; Owner returns the one
// collection that owns a key. A reader of a shared collection keeps only
// the documents the collection owns, so no document is seen twice or in
// the wrong place; the router does so for queries. Other collections hold
// only their own documents.
//
// Holders returns every collection that may hold a document with the key,
// its owner first: a delete removes the key from all of them, so that no
// copy of a deleted document is left behind to reappear.
type Owner interface {
	SharedCollections() []string
	Owner(key any) (string, error)
	Holders(key any) ([]string, error)
}

// Spreader is an optional capability of a resolver whose reads of one key
// look in more than one collection outside any transition (spillover: an
// id may be in any of its collections). Spreads reports whether that is so
// now. A router's Create on such a resolver looks for the id in the key's
// other collections first, since the store's own conflict check covers
// only the collection it writes: without it, creating an id twice would
// store it twice.
type Spreader interface {
	Spreads() bool
}

// Freezer is an optional capability of a resolver that can refuse writes to
// the keys it is moving (a transition during its cutover): while Frozen
// reports true, ResolveForCreate (and the router's writes) fail with an
// error wrapping ErrMoving for a key whose two placements differ, until a
// new resolver is published. A router that follows the shared state polls
// it faster while the resolver in force is frozen, so a write waiting on a
// moving key (router.FollowOptions.MovingWait) learns the switch soon. A
// resolver without it never refuses writes that way.
type Freezer interface {
	Frozen() bool
}
