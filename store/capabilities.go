package store

import (
	"context"
	"encoding/json"
	"strconv"
)

// Optional capabilities. A backend offers one by implementing its interface
// on the value Open returns; callers test for it with a type assertion, as
// database/sql does with its driver's optional interfaces:
//
//	if cf, ok := st.(store.ChangeFeeder); ok { ... }
//
// A backend that cannot offer a capability faithfully does not implement it
// rather than half-implementing it.
//
// Every optional capability is declared in this file, and only they are:
// the wrappers of a Store (store/retry, internal/fleetsim) keep exactly the
// capabilities of the store they wrap by code generated from it
// (internal/storecap), so one declared elsewhere would be hidden by them.

// ChangeFeeder reads a collection's change feed: the documents written
// since a position, in the order of their last write. It follows Cosmos
// DB's change feed in its "latest version" mode: a document written several
// times since the position appears once, in the place of its last write;
// deletions do not appear (a reader that must see them compares against the
// collection, or learns them another way).
type ChangeFeeder interface {
	// ReadChanges returns one page of changes after opts.Continuation. The
	// page's Continuation is never empty: it is the position after the
	// page, to pass to the next call; a page with no changes means the
	// reader has caught up, and its Continuation is the position to poll
	// from. A token from another collection, or a malformed one, is an
	// error wrapping ErrBadRequest. Cost: one round trip; the page holds at
	// most opts.PageSize documents.
	ReadChanges(ctx context.Context, link string, opts *ChangeFeedOptions) (*ChangePage, error)
}

// ChangeFeedOptions qualify a change-feed read. A nil *ChangeFeedOptions
// means defaults: from the beginning, the backend's page size.
type ChangeFeedOptions struct {
	// Continuation resumes after the page that returned it. Empty means from
	// the beginning of the collection (every document, each once) unless
	// FromNow is set.
	Continuation string
	// FromNow starts at the current end of the feed: the page is empty and
	// its Continuation marks the present, so the next call returns only
	// what is written after this one. Ignored when Continuation is set.
	FromNow bool
	// PartitionKey scopes the feed to documents with this partition-key
	// value; nil means the whole collection.
	PartitionKey any
	// PageSize is a hint for the most documents a page holds; 0 means the
	// backend's default.
	PageSize int
	// HideReshard reads the feed as a consumer of application writes: a
	// write marked WriteOptions.Reshard that copied a document here does
	// not appear, and a document a reshard's clean-up deleted still
	// appears at its last version (see WriteOptions.Reshard). A backend
	// that does not mark writes (Cosmos DB) ignores it. Tokens of either
	// kind of read resume either kind.
	HideReshard bool
}

// ChangePage is one page of a change feed.
type ChangePage struct {
	// Items are the changed documents, each the whole JSON text as stored
	// (system properties included), oldest change first. Callers must not
	// modify them.
	Items []json.RawMessage
	// Continuation is the position after this page; never empty.
	Continuation string
	// RequestCharge is the cost the backend reports (Cosmos DB request
	// units); 0 where the backend has no such measure.
	RequestCharge float64
}

// Batcher runs a transactional batch: several operations on documents of
// one partition-key value of one collection, applied all together or not
// at all, as Cosmos DB's transactional batch does.
type Batcher interface {
	// ExecuteBatch applies ops in order, atomically. When every operation
	// succeeds it returns one result per operation and a nil error. When one
	// fails, nothing is written: the error wraps the failing operation's
	// kind (ErrConflict, ErrNotFound, ErrPreconditionFailed, ...) and is a
	// *BatchError naming its index. A batch of no operations, of more than
	// MaxBatchOperations, or whose documents do not carry partitionKey is an
	// error wrapping ErrBadRequest. Cost: one round trip.
	ExecuteBatch(ctx context.Context, link string, partitionKey any, ops []BatchOp, opts *BatchOptions) ([]BatchResult, error)
}

// MaxBatchOperations is the most operations a transactional batch holds
// (Cosmos DB's limit).
const MaxBatchOperations = 100

// BatchOpKind says what a batch operation does.
type BatchOpKind int

// The batch operations, each with the meaning of the Documents method of
// the same name.
const (
	BatchCreate BatchOpKind = iota + 1
	BatchRead
	BatchReplace
	BatchUpsert
	BatchDelete
	// BatchPatch applies BatchOp.Patch to the document ID, as
	// Patcher.Patch does, to the document as the operations before it
	// leave it.
	BatchPatch
)

// String returns the operation's name ("create", "read", ...).
func (k BatchOpKind) String() string {
	switch k {
	case BatchCreate:
		return "create"
	case BatchRead:
		return "read"
	case BatchReplace:
		return "replace"
	case BatchUpsert:
		return "upsert"
	case BatchDelete:
		return "delete"
	case BatchPatch:
		return "patch"
	}
	return "unknown"
}

// BatchOp is one operation of a transactional batch.
type BatchOp struct {
	Kind BatchOpKind
	// ID names the document for read, replace and delete.
	ID string
	// Doc is the JSON text of the document for create, replace and upsert.
	Doc []byte
	// IfMatch makes a replace, upsert, delete or patch conditional on the
	// stored document's ETag; empty means unconditional.
	IfMatch string
	// Patch is the operations of a patch (at most MaxPatchOperations) and
	// Condition its filter predicate ("FROM c WHERE ...", empty: none), as
	// Patcher.Patch takes them.
	Patch     []PatchOp
	Condition string
}

// BatchOptions qualify a batch. A nil *BatchOptions means none.
type BatchOptions struct {
	// Epoch stamps every write of the batch, as WriteOptions.Epoch does.
	Epoch int64
}

// BatchResult is the outcome of one operation of a successful batch.
type BatchResult struct {
	// Document is the document as stored after a create, replace, upsert
	// or patch, or as read; nil after a delete.
	Document *Document
	// Created says the operation created its document: a create, or an
	// upsert that found none (which Cosmos DB answers 201, where an upsert
	// that replaced is 200).
	Created bool
}

// BatchError reports the operation that failed a batch. It wraps the
// failure, so errors.Is(err, ErrConflict) and the like hold.
type BatchError struct {
	Index int   // the failing operation's index in the batch
	Err   error // why it failed
}

// Error implements error.
func (e *BatchError) Error() string {
	return "store: batch operation " + strconv.Itoa(e.Index) + ": " + e.Err.Error()
}

// Unwrap returns the failure.
func (e *BatchError) Unwrap() error { return e.Err }

// Fencer keeps a fence epoch per database and refuses writes stamped with
// an older one, atomically with the write: once RaiseFence returns, no write
// whose WriteOptions.Epoch (or BatchOptions.Epoch) is below the fence
// succeeds, and every write that succeeded before saw the old fence. Writes
// with Epoch 0 are not fenced. This is how routers that have not yet seen a
// new resolver are stopped from writing where the data has left (package
// shardstate raises the fence when it publishes a new epoch); a backend
// without it (Cosmos DB) leaves a window that leases bound instead.
type Fencer interface {
	// RaiseFence sets the fence of databaseLink ("dbs/{db}") to epoch if
	// that is higher than the current one, and returns the fence now in
	// force. Cost: one round trip; on the embedded store it waits for the
	// database's writes in progress to finish.
	RaiseFence(ctx context.Context, databaseLink string, epoch int64) (int64, error)
	// Fence returns the fence of databaseLink; 0 when none was raised.
	Fence(ctx context.Context, databaseLink string) (int64, error)
}

// Replacer changes the settings of an existing collection, as Cosmos DB's
// container replace does.
type Replacer interface {
	// ReplaceCollection gives the collection link spec's DefaultTTL,
	// Indexing, VectorEmbeddingPolicy, FullTextPolicy and
	// ComputedProperties. Its partition-key path and unique keys cannot
	// change, as in Cosmos DB: a spec whose PartitionKeyPath (compared by
	// SameKeyPath) or UniqueKeys differ is an error wrapping ErrBadRequest,
	// and nothing changes. spec.Quota is ignored: a quota is set at
	// creation. Once it returns, documents expire under the new default
	// TTL (their "_ts" plus their own "ttl", or the new default). A
	// missing collection is an error wrapping ErrCollectionNotFound.
	ReplaceCollection(ctx context.Context, link string, spec *CollectionSpec) error
}

// Patcher applies a partial document update, as Cosmos DB's patch does:
// up to MaxPatchOperations operations (PatchOp) applied in order to the
// current version of one document, atomically (no write of the document
// comes between the version read and the patched one written), on
// condition of opts.IfMatch and of opts.Condition.
type Patcher interface {
	// Patch applies ops to the document id and returns it as stored
	// after. A missing document is an error wrapping ErrNotFound; a
	// stale opts.IfMatch or a false opts.Condition, ErrPreconditionFailed;
	// a patch of no operations or more than MaxPatchOperations, an unknown
	// operation, a malformed path or value, an operation that does not
	// apply to the document (replace or remove of a missing property, incr
	// of a string, ...) or one that would change the id, the partition
	// key or a system property, ErrBadRequest; in every case nothing is
	// written. Cost: one round trip.
	Patch(ctx context.Context, link, id string, ops []PatchOp, opts *PatchOptions) (*Document, error)
}

// ManyReader reads several documents of one collection in one call, as
// Cosmos DB's ReadManyItems does for a container.
type ManyReader interface {
	// ReadMany returns one document per item, in the items' order: the
	// document with the item's id under its partition key, or nil when
	// there is none (a missing document is no error). An item without a
	// partition key is found by id as Read finds it. A malformed id or key
	// is an error wrapping ErrBadRequest that names the item's index.
	// Cost: one round trip.
	ReadMany(ctx context.Context, link string, items []ItemRef) ([]*Document, error)
}

// ItemRef names a document of a collection: its id and partition-key
// value (nil: not given), as a point read takes them.
type ItemRef struct {
	ID           string
	PartitionKey any
}
