package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

func Example() {
	ctx := context.Background()
	st := memstore.New(nil)
	defer st.Close()
	const users = "dbs/app/colls/users"
	if err := st.CreateCollection(ctx, users, &store.CollectionSpec{PartitionKeyPath: "/tenant"}); err != nil {
		panic(err)
	}
	for _, doc := range []string{
		`{"id":"alice","tenant":"acme","age":31}`,
		`{"id":"bob","tenant":"acme","age":45}`,
		`{"id":"alice","tenant":"globex","age":28}`, // the same id under another key
	} {
		if _, err := st.Create(ctx, users, []byte(doc), nil); err != nil {
			panic(err)
		}
	}

	d, _ := st.Read(ctx, users, "alice", &store.ReadOptions{PartitionKey: "globex"})
	fmt.Println(d.ID, d.ETag != "")
	_, err := st.Read(ctx, users, "alice", nil) // two documents have this id
	fmt.Println(errors.Is(err, store.ErrBadRequest))

	// Optimistic concurrency: a replace conditional on the ETag read.
	_, err = st.Replace(ctx, users, "alice", []byte(`{"id":"alice","tenant":"globex","age":29}`),
		&store.WriteOptions{IfMatch: d.ETag})
	fmt.Println(err)
	_, err = st.Replace(ctx, users, "alice", []byte(`{"id":"alice","tenant":"globex","age":30}`),
		&store.WriteOptions{IfMatch: d.ETag}) // stale now
	fmt.Println(errors.Is(err, store.ErrPreconditionFailed))

	page, _ := st.Query(ctx, users, store.Query{
		Text:       "SELECT c.id, c.age FROM c WHERE c.age > @min ORDER BY c.age",
		Parameters: []store.Param{{Name: "@min", Value: 29}},
	}, &store.QueryOptions{PartitionKey: "acme"})
	for _, item := range page.Items {
		fmt.Println(string(item))
	}
	// Output:
	// alice true
	// true
	// <nil>
	// true
	// {"id":"alice","age":31}
	// {"id":"bob","age":45}
}

// ExampleOpen keeps the data in a directory: it is there again after a
// restart.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "memstore-example")
	defer os.RemoveAll(dir)

	st, err := memstore.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	_ = st.CreateCollection(ctx, "dbs/app/colls/log", nil)
	_, _ = st.Create(ctx, "dbs/app/colls/log", []byte(`{"id":"e1","msg":"hello"}`), nil)
	_ = st.Close()

	st, _ = memstore.Open(dir, nil)
	defer st.Close()
	info, _ := st.CollectionInfo(ctx, "dbs/app/colls/log")
	fmt.Println(info.Spec.PartitionKeyPath, info.Documents)
	// Output: /id 1
}

// ExampleStore_ReadFeed walks every document of a collection page by page,
// as a resharding mover does; each token resumes where its page ended.
func ExampleStore_ReadFeed() {
	ctx := context.Background()
	st := memstore.New(nil)
	_ = st.CreateCollection(ctx, "dbs/app/colls/c", nil)
	for i := 0; i < 5; i++ {
		_, _ = st.Create(ctx, "dbs/app/colls/c", fmt.Appendf(nil, `{"id":"d%d"}`, i), nil)
	}
	opts := &store.FeedOptions{PageSize: 2}
	for {
		page, err := st.ReadFeed(ctx, "dbs/app/colls/c", opts)
		if err != nil {
			panic(err)
		}
		fmt.Println(len(page.Items), page.Continuation != "")
		if page.Continuation == "" {
			break
		}
		opts.Continuation = page.Continuation
	}
	// Output:
	// 2 true
	// 2 true
	// 1 false
}
