package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestTimeseries(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10-20 February lives in [dbs/metrics/colls/2026-02]", "(read 1 collection)", "all samples: 100 across 4 collections"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
