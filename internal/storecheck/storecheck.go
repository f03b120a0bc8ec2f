// Package storecheck holds the checks every store.Store backend makes
// before it looks at a request, so the embedded store and the Cosmos DB
// backend refuse the same requests with the same errors.
package storecheck

import "github.com/docshard/docshard/store"

// Batch checks what every Batcher refuses before it looks at the
// operations: a batch of no operations or more than store.MaxBatchOperations,
// or without a partition-key value. The error wraps ErrBadRequest and
// names the collection link l.
func Batch(l string, partitionKey any, ops []store.BatchOp) error {
	if len(ops) == 0 || len(ops) > store.MaxBatchOperations {
		return store.Errorf(store.ErrBadRequest, "batch", l, "", "a batch holds 1 to %d operations, not %d", store.MaxBatchOperations, len(ops))
	}
	if partitionKey == nil {
		return store.Errorf(store.ErrBadRequest, "batch", l, "", "a batch needs its partition-key value")
	}
	return nil
}
