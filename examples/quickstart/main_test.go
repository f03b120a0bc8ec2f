package main

import (
	"testing"

	"github.com/docshard/docshard/internal/exampletest"
)

func TestQuickstart(t *testing.T) {
	exampletest.Expect(t, run, "user-07 lives in dbs/app/colls/users", `{"name":"User 27","score":99}`, "average score: 49.83")
}
