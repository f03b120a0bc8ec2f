package router_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// Example shows the point operations: the application works against the
// database, and the router finds the collection from the partition key.
func Example() {
	ctx := context.Background()
	st := memstore.New(nil)
	defer st.Close()
	client := router.New(st, nil)
	ring, err := hashring.New([]string{"dbs/app/colls/u0", "dbs/app/colls/u1", "dbs/app/colls/u2"},
		&hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	if err != nil {
		panic(err)
	}
	if err := client.Register("dbs/app", ring); err != nil {
		panic(err)
	}
	if _, err := client.EnsureCollections(ctx, "dbs/app", nil); err != nil {
		panic(err)
	}

	type profile struct {
		ID     string `json:"id"`
		UserID string `json:"userId"`
		Plan   string `json:"plan"`
	}
	if _, err := client.Create(ctx, "dbs/app", profile{ID: "p1", UserID: "alice", Plan: "free"}, nil); err != nil {
		panic(err)
	}
	doc, err := client.Read(ctx, "dbs/app", "p1", "alice")
	if err != nil {
		panic(err)
	}
	where, _ := ring.ResolveForCreate("alice")
	fmt.Println("alice's profile lives in", where)

	// An optimistic update: the replace applies only if nobody wrote since
	// the read.
	if _, err := client.Replace(ctx, "dbs/app", "p1", profile{ID: "p1", UserID: "alice", Plan: "pro"},
		&router.ReplaceOptions{IfMatch: doc.ETag}); err != nil {
		panic(err)
	}
	_, err = client.Replace(ctx, "dbs/app", "p1", profile{ID: "p1", UserID: "alice", Plan: "team"},
		&router.ReplaceOptions{IfMatch: doc.ETag})
	fmt.Println("stale ETag refused:", errors.Is(err, store.ErrPreconditionFailed))

	// Giving the profile to another user changes its key: the router moves
	// it (create at the new place, then delete at the old), never losing it.
	if _, err := client.Replace(ctx, "dbs/app", "p1", profile{ID: "p1", UserID: "bob", Plan: "pro"},
		&router.ReplaceOptions{OldKey: "alice"}); err != nil {
		panic(err)
	}
	_, err = client.Read(ctx, "dbs/app", "p1", "alice")
	fmt.Println("gone from alice's collection:", errors.Is(err, store.ErrNotFound))
	if err := client.Delete(ctx, "dbs/app", "p1", "bob", nil); err != nil {
		panic(err)
	}

	// A document without its partition key is refused before any write.
	_, err = client.Create(ctx, "dbs/app", map[string]any{"id": "p2"}, nil)
	fmt.Println("missing key:", errors.Is(err, resolver.ErrNoPartitionKey))
	// Output:
	// alice's profile lives in dbs/app/colls/u1
	// stale ETag refused: true
	// gone from alice's collection: true
	// missing key: true
}
