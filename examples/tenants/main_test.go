package main

import (
	"testing"

	"github.com/docshard/docshard/internal/exampletest"
)

func TestTenants(t *testing.T) {
	exampletest.Expect(t, run, "bigcorp  -> dbs/saas/colls/bigcorp", "bigcorp total: 60", "4 groups")
}
