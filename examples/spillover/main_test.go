package main

import (
	"testing"

	"github.com/docshard/docshard/internal/exampletest"
)

func TestSpillover(t *testing.T) {
	exampletest.Expect(t, run, "opened dbs/events/colls/log1", "opened dbs/events/colls/log2",
		"all events: 250 across 4 collections", "events 100 to 120: 21 (read 2 collections)")
}
