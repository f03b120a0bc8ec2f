package main

import (
	"testing"

	"github.com/docshard/docshard/internal/exampletest"
)

func TestTimeseries(t *testing.T) {
	exampletest.Expect(t, run, "10-20 February lives in [dbs/metrics/colls/2026-02]", "(read 1 collection)", "all samples: 100 across 4 collections")
}
