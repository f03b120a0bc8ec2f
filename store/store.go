package store

import (
	"context"
	"encoding/json"
	"io"

	"github.com/docshard/docshard/partitionkey"
)

// Limits Cosmos DB applies and every backend enforces.
const (
	// MaxIDLength is the longest document id, in bytes: 1,023, Cosmos DB's
	// per-item limit ("Maximum length of id", Azure Cosmos DB service
	// quotas; the REST reference's older "255 characters" no longer holds).
	MaxIDLength = 1023
	// MaxDocumentSize is the largest document, in bytes of its JSON text
	// as stored (system properties included).
	MaxDocumentSize = 2 * 1024 * 1024
)

// Store holds databases of collections of JSON documents. Implementations
// are safe for concurrent use. A collection is named by its link
// "dbs/{db}/colls/{coll}"; a database by "dbs/{db}" and exists while it has
// collections.
type Store interface {
	Collections
	Documents
	Querier
	Feeder
	// Close releases the store's resources; calls after Close fail.
	io.Closer
}

// Collections manages collections.
type Collections interface {
	// CreateCollection creates a collection. An existing collection is an
	// error wrapping ErrConflict. A nil spec means defaults.
	CreateCollection(ctx context.Context, link string, spec *CollectionSpec) error
	// DeleteCollection deletes a collection and every document in it. A
	// missing collection is an error wrapping ErrCollectionNotFound.
	DeleteCollection(ctx context.Context, link string) error
	// ListCollections returns the links of a database's collections, sorted.
	// An unknown database has none.
	ListCollections(ctx context.Context, databaseLink string) ([]string, error)
	// CollectionInfo returns a collection's spec and usage.
	CollectionInfo(ctx context.Context, link string) (*CollectionInfo, error)
}

// Documents reads and writes single documents. doc is the JSON text of one
// object with a string "id"; the stored document gains the system
// properties "_etag" (changes on every write) and "_ts" (seconds since the
// Unix epoch of the last write).
type Documents interface {
	// Create adds a document. An existing id (within the partition-key value,
	// as Cosmos DB scopes ids) is an error wrapping ErrConflict.
	Create(ctx context.Context, link string, doc []byte, opts *WriteOptions) (*Document, error)
	// Read returns a document by id. A missing one is an error wrapping
	// ErrNotFound.
	Read(ctx context.Context, link, id string, opts *ReadOptions) (*Document, error)
	// Replace overwrites an existing document; doc's "id" must equal id
	// (else an error wrapping ErrBadRequest, and nothing is written). A
	// missing document is an error wrapping ErrNotFound; a stale
	// opts.IfMatch, ErrPreconditionFailed.
	Replace(ctx context.Context, link, id string, doc []byte, opts *WriteOptions) (*Document, error)
	// Upsert creates the document or replaces the one with its id.
	// opts.IfMatch, when set, applies to the replace.
	Upsert(ctx context.Context, link string, doc []byte, opts *WriteOptions) (*Document, error)
	// Delete removes a document by id. A missing one is an error wrapping
	// ErrNotFound; a stale opts.IfMatch, ErrPreconditionFailed.
	Delete(ctx context.Context, link, id string, opts *WriteOptions) error
}

// Querier runs Cosmos DB SQL against one collection.
type Querier interface {
	// Query returns one page of results. Pass the previous page's
	// Continuation in opts to get the next; an empty Continuation in the
	// returned page means there is no more. A malformed query or token is an
	// error wrapping ErrBadRequest that names the problem.
	Query(ctx context.Context, link string, q Query, opts *QueryOptions) (*Page, error)
}

// Feeder walks every document of a collection.
type Feeder interface {
	// ReadFeed returns one page of a collection's documents in a stable
	// order. Resuming from a page's Continuation yields every document that
	// existed throughout the walk exactly once; documents written during the
	// walk may or may not appear, and appear at most once.
	ReadFeed(ctx context.Context, link string, opts *FeedOptions) (*Page, error)
}

// CollectionSpec is what a collection is created with.
type CollectionSpec struct {
	// PartitionKeyPath is the Cosmos DB partition-key path of the
	// collection ("/userId"). Empty means "/id".
	PartitionKeyPath string `json:"partitionKeyPath,omitempty"`
	// PartitionKeyPaths, with 2 or 3 paths, makes the collection's key
	// hierarchical, as Cosmos DB's MultiHash containers are: a document's
	// key is the partitionkey.CompositeKey of its values at those paths, in
	// order (None in place of a missing one); ids are unique within a full
	// key. Point operations and batches take the full key (a
	// CompositeKey or []any of as many values as paths); queries, read
	// feeds and change feeds take the full key or a prefix of it (its
	// first values: documents whose key starts with them), where a lone
	// scalar is a prefix of one value. Any other number of values is an
	// error wrapping ErrBadRequest. PartitionKeyPath is then empty; one
	// path here is the same as PartitionKeyPath.
	PartitionKeyPaths []string `json:"partitionKeyPaths,omitempty"`
	// DefaultTTL is the default time to live of documents, in seconds, as
	// Cosmos DB defines it: nil = off (documents never expire, per-document
	// "ttl" ignored); -1 = on with no default (only documents with a "ttl"
	// expire); n > 0 = documents expire n seconds after their last write
	// unless their own "ttl" says otherwise.
	DefaultTTL *int `json:"defaultTtl,omitempty"`
	// Indexing is an indexing policy in Cosmos DB's JSON form, passed
	// through to backends that use one and kept by the others.
	Indexing json.RawMessage `json:"indexingPolicy,omitempty"`
	// UniqueKeys are the collection's unique keys, as Cosmos DB's
	// uniqueKeyPolicy gives them: each is a list of paths ("/email") whose
	// values together are unique among the documents of one partition-key
	// value (a missing value counts as null). A write that would give two
	// documents of one key value the same values is refused with an error
	// wrapping ErrUniqueKeyConflict, and nothing is written. They are fixed at
	// creation (Replacer keeps them). nil means none.
	UniqueKeys [][]string `json:"uniqueKeys,omitempty"`
	// VectorEmbeddingPolicy, FullTextPolicy and ComputedProperties are
	// Cosmos DB's container settings of those names, in its JSON form (an
	// object, an object, an array), passed through to backends that use
	// them and kept by the others; the embedded store's queries neither
	// index nor compute anything from them.
	VectorEmbeddingPolicy json.RawMessage `json:"vectorEmbeddingPolicy,omitempty"`
	FullTextPolicy        json.RawMessage `json:"fullTextPolicy,omitempty"`
	ComputedProperties    json.RawMessage `json:"computedProperties,omitempty"`
	// Quota, when set, bounds the collection's usage: a write that would
	// take it past either bound is refused with an error wrapping
	// ErrQuotaExceeded, and nothing is written. It is a docshard extension
	// (Cosmos DB has no such setting): the embedded store enforces it
	// atomically with each write, docshard serve through it, and a store
	// that cannot (Cosmos DB) keeps only its own limits; see each backend.
	// nil means no quota.
	Quota *Quota `json:"quota,omitempty"`
}

// Quota is a collection's usage limit (CollectionSpec.Quota). A bound of 0
// is no bound on that measure.
type Quota struct {
	// MaxDocuments is the most documents the collection holds: a create
	// (or an upsert that creates) of one more is refused.
	MaxDocuments int64 `json:"maxDocuments,omitempty"`
	// MaxBytes is the most bytes of stored JSON text (system properties
	// included, as CollectionInfo.Bytes counts them) the collection holds:
	// a write that would grow it past that is refused.
	MaxBytes int64 `json:"maxBytes,omitempty"`
}

// Allows reports whether a collection with usage (documents, bytes) may
// take a write that adds addDocs documents and addBytes bytes (either may
// be negative: a write that does not grow a measure is never refused for
// it). A nil quota allows everything. Cost: two comparisons.
func (q *Quota) Allows(documents, bytes, addDocs, addBytes int64) bool {
	if q == nil {
		return true
	}
	if addDocs > 0 && q.MaxDocuments > 0 && documents+addDocs > q.MaxDocuments {
		return false
	}
	return addBytes <= 0 || q.MaxBytes <= 0 || bytes+addBytes <= q.MaxBytes
}

// CollectionInfo describes an existing collection.
type CollectionInfo struct {
	Link string         // the collection link
	Spec CollectionSpec // what it was created with
	// Documents and Bytes are the collection's usage: the number of
	// documents and the bytes of their JSON text. Backends that only know
	// an estimate say so in their documentation.
	Documents int64
	Bytes     int64
}

// Document is a stored document.
type Document struct {
	ID        string // the document's "id"
	ETag      string // its "_etag", for If-Match
	Timestamp int64  // its "_ts": seconds since the Unix epoch of the last write
	// Body is the whole JSON text, system properties included. Callers
	// must not modify it.
	Body json.RawMessage
	// Seq is the document's place in its collection's read feed, for a
	// backend that keeps one (the embedded store): set when the document
	// is created, kept by every replace, a new one when a document
	// deleted is created again; unique among the collection's documents
	// and increasing in creation order. 0 where the backend does not say.
	Seq uint64
}

// WriteOptions qualify a write. A nil *WriteOptions means none.
type WriteOptions struct {
	// PartitionKey is the document's partition-key value (string, number,
	// bool, Null, or None for a document without one) for backends that
	// need it; nil means not given. On Create, Replace and Upsert a backend
	// may check it against the body.
	PartitionKey any
	// IfMatch makes the write conditional on the stored document's ETag;
	// empty means unconditional.
	IfMatch string
	// Epoch stamps the write for a backend that is a Fencer: a write whose
	// Epoch is below its database's fence is refused with ErrFenced,
	// atomically with the write. 0 means not stamped; backends that are not
	// Fencers ignore it.
	Epoch int64
	// Reshard marks the write as a reshard's own (package transition sets
	// it on its copies and on its clean-up): the data did not change, it
	// moved. A backend whose change feed can tell (the embedded store, in
	// process and through docshard serve) leaves such a copy out of feeds
	// read with ChangeFeedOptions.HideReshard, and keeps the last version
	// of a source deleted so in them (the document moved; its version was
	// written by the application, in that collection). Other feeds and
	// every other read are unaffected. Backends that cannot tell (Cosmos
	// DB) ignore it.
	Reshard bool
}

// ReadOptions qualify a point read. A nil *ReadOptions means none.
type ReadOptions struct {
	// PartitionKey is the document's partition-key value; nil means not
	// given (a backend that needs it returns ErrBadRequest).
	PartitionKey any
}

// Null is the partition-key value of documents whose key is JSON null
// (distinct from a nil PartitionKey, which means "not given"). It is
// partitionkey.Null, the same value as resolver.Null.
var Null = partitionkey.Null

// None is the partition-key value of documents that have no value at the
// collection's partition-key path: Cosmos DB stores them under the
// "undefined" key (PartitionKey.None in its SDKs), distinct from Null, and
// they are read, replaced, deleted and queried with None. A nil
// PartitionKey still means "not given". It is partitionkey.None.
var None = partitionkey.None

// NoneText is the identity text of None (partitionkey.NoneText).
const NoneText = partitionkey.NoneText

// Query is a Cosmos DB SQL query with its parameters.
type Query struct {
	Text       string
	Parameters []Param
}

// Param is one @parameter: Name includes the '@'; Value is a Go JSON value
// (string, float64 or another number type, bool, nil, []any, map[string]any,
// json.RawMessage).
type Param struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// QueryOptions qualify a query. A nil *QueryOptions means defaults.
type QueryOptions struct {
	// PartitionKey scopes the query to documents with this partition-key
	// value; nil means every document of the collection.
	PartitionKey any
	// PageSize is a hint for the most results a page holds; 0 means the
	// backend's default, -1 as large as the backend allows.
	PageSize int
	// Continuation resumes after the page that returned it; it must be
	// used with the same query, parameters and partition key.
	Continuation string
}

// FeedOptions qualify a read feed. A nil *FeedOptions means defaults.
type FeedOptions struct {
	// PageSize is a hint for the most documents a page holds; 0 means the
	// backend's default.
	PageSize int
	// Continuation resumes after the page that returned it.
	Continuation string
}

// Page is one page of query results or feed documents.
type Page struct {
	// Items are the results, each one JSON value; callers must not modify
	// them.
	Items []json.RawMessage
	// Continuation resumes after this page; empty when there is no more.
	Continuation string
	// RequestCharge is the cost the backend reports (Cosmos DB request
	// units); 0 where the backend has no such measure.
	RequestCharge float64
}
