package main

import (
	"testing"

	"github.com/docshard/docshard/internal/exampletest"
)

func TestManaged(t *testing.T) {
	exampletest.Expect(t, run, "created [dbs/app/colls/users0 dbs/app/colls/users1]",
		"verify: 300 documents, each once where the ring puts it: true", "users2: partitioned by /userId, default TTL 2592000 s")
}
