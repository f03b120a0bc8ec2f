package query

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSpatialFunctions(t *testing.T) {
	const (
		square  = `{"type": "Polygon", "coordinates": [[[31.8, -5], [32, -5], [32, -4.7], [31.8, -4.7], [31.8, -5]]]}`
		squareW = `{"type": "Polygon", "coordinates": [[[31.8, -5], [31.8, -4.7], [32, -4.7], [32, -5], [31.8, -5]]]}` // the other way round
		big     = `{"type": "Polygon", "coordinates": [[[-60, 20], [70, 20], [70, 70], [-60, 70], [-60, 20]]]}`
		holed   = `{"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]], [[4, 4], [6, 4], [6, 6], [4, 6], [4, 4]]]}`
		multi   = `{"type": "MultiPolygon", "coordinates": [[[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]], [[[5, 5], [6, 5], [6, 6], [5, 6], [5, 5]]]]}`
		line    = `{"type": "LineString", "coordinates": [[0, 0], [0, 40]]}`
	)
	degree := 6371.01e3 * math.Pi / 180 // meters per degree of arc on the mean sphere
	rad := func(d float64) float64 { return d * math.Pi / 180 }
	// From (5, 5) to the meridian 4 (the hole's west edge): a great circle.
	toHoleEdge := math.Asin(math.Sin(rad(1))*math.Cos(rad(5))) * 180 / math.Pi * degree
	tests := []struct {
		expr string
		want any
	}{
		{`ST_DISTANCE({"type": "Point", "coordinates": [0, 0]}, {"type": "Point", "coordinates": [0, 1]})`, degree},
		{`ST_DISTANCE({"type": "Point", "coordinates": [0, 0]}, {"type": "Point", "coordinates": [1, 0]})`, degree},
		{`ST_DISTANCE({"type": "Point", "coordinates": [-180, 0]}, {"type": "Point", "coordinates": [180, 0]})`, 0.0},
		{`ST_DISTANCE({"type": "Point", "coordinates": [0, 90]}, {"type": "Point", "coordinates": [0, -90]})`, 180 * degree},
		{`ST_DISTANCE({"type": "Point", "coordinates": [5, 5]}, ` + holed + `)`, toHoleEdge}, // inside the hole
		{`ST_DISTANCE({"type": "Point", "coordinates": [2, 2]}, ` + holed + `)`, 0.0},        // inside
		{`ST_DISTANCE({"type": "Point", "coordinates": [0, 3]}, ` + multi + `)`, 2 * degree}, // 2 degrees north of the first square's corner
		{`ST_DISTANCE({"type": "Point", "coordinates": [1, 0]}, ` + line + `)`, degree},      // 1 degree east of its start
		{`ST_DISTANCE({"type": "Point", "coordinates": [0, 10]}, ` + line + `)`, 0.0},        // on the line
		{`ST_DISTANCE({"type": "Point", "coordinates": [0, 0]}, {"type": "Point", "coordinates": 1})`, Undefined},
		{`ST_DISTANCE(42, 1337)`, Undefined},

		{`ST_WITHIN({"type": "Point", "coordinates": [31.9, -4.8]}, ` + square + `)`, true},
		{`ST_WITHIN({"type": "Point", "coordinates": [31.9, -4.8]}, ` + squareW + `)`, true},
		{`ST_WITHIN({"type": "Point", "coordinates": [31.9, -4.6]}, ` + square + `)`, false},
		// On the sphere the southern edge of big, a great circle from
		// (-60, 20) to (70, 20), passes (0, 40.7): (0, 40) is outside,
		// as Cosmos DB's query-plan test (NOT ST_WITHIN) expects.
		{`ST_WITHIN({"type": "Point", "coordinates": [0, 40]}, ` + big + `)`, false},
		{`NOT ST_WITHIN({"type": "Point", "coordinates": [0, 40]}, ` + big + `)`, true},
		{`ST_WITHIN({"type": "Point", "coordinates": [0, 41]}, ` + big + `)`, true},
		{`ST_WITHIN({"type": "Point", "coordinates": [5, 5]}, ` + holed + `)`, false},
		{`ST_WITHIN({"type": "Point", "coordinates": [2, 2]}, ` + holed + `)`, true},
		{`ST_WITHIN({"type": "Point", "coordinates": [5.5, 5.5]}, ` + multi + `)`, true},
		{`ST_WITHIN({"type": "LineString", "coordinates": [[1, 1], [3, 3]]}, ` + holed + `)`, true},
		{`ST_WITHIN({"type": "LineString", "coordinates": [[1, 1], [9, 9]]}, ` + holed + `)`, false}, // crosses the hole
		{`ST_WITHIN(` + line + `, ` + big + `)`, false},
		{`ST_WITHIN(` + square + `, {"type": "Polygon", "coordinates": [[[30, -6], [33, -6], [33, -3], [30, -3], [30, -6]]]})`, true},
		{`ST_WITHIN(` + big + `, ` + square + `)`, false},
		{`ST_WITHIN({"type": "Point", "coordinates": [0, 10]}, ` + line + `)`, true},
		{`ST_WITHIN(42, 1337)`, Undefined},

		{`ST_INTERSECTS(` + line + `, ` + big + `)`, false},
		{`ST_INTERSECTS({"type": "LineString", "coordinates": [[0, 0], [0, 45]]}, ` + big + `)`, true},
		{`ST_INTERSECTS({"type": "LineString", "coordinates": [[0, 0], [0, 10]]}, ` + big + `)`, false},
		{`ST_INTERSECTS(` + square + `, ` + big + `)`, false},
		{`ST_INTERSECTS(` + holed + `, {"type": "Polygon", "coordinates": [[[9, 9], [12, 9], [12, 12], [9, 12], [9, 9]]]})`, true},
		{`ST_INTERSECTS({"type": "Point", "coordinates": [5, 5]}, ` + holed + `)`, false},
		{`ST_INTERSECTS({"type": "Point", "coordinates": [0, 5]}, ` + holed + `)`, true}, // on the boundary
		{`ST_INTERSECTS(42, 1337)`, Undefined},

		{`ST_ISVALID({"type": "Point", "coordinates": [31.9, -132.8]})`, false},
		{`ST_ISVALID({"type": "Point", "coordinates": [31.9, -32.8]})`, true},
		{`ST_ISVALID(` + holed + `)`, true},
		{`ST_ISVALID(` + multi + `)`, true},
		{`ST_ISVALID(` + line + `)`, true},
		{`ST_ISVALID({"type": "LineString", "coordinates": [[0, 0]]})`, false},
		{`ST_ISVALID({"type": "Polygon", "coordinates": [[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]]})`, false}, // a bow tie crosses itself
		{`ST_ISVALID({"type": "MultiPoint", "coordinates": [[0, 0]]})`, false},
		{`ST_ISVALID(42)`, false},
		{`ST_ISVALIDDETAILED({"type": "Point", "coordinates": [31.9, -32.8]})`, map[string]any{"valid": true, "reason": "Valid Geography"}},
		{`ST_ISVALIDDETAILED({"type": "Polygon", "coordinates": [[[31.8, -5], [31.8, -4.7], [32, -4.7], [32, -5]]]})`,
			map[string]any{"valid": false, "reason": "The Polygon input is not valid because the start and end points of the ring number 1 are not the same. Each ring of a polygon must have the same start and end points."}},
		{`ST_ISVALIDDETAILED({"type": "Point", "coordinates": [31.9, -132.8]})`, map[string]any{"valid": false, "reason": "Latitude values must be between -90 and 90 degrees."}},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) { assertConst(t, tc.expr, tc.want, 1e-6) })
	}
}

// BenchmarkSTWithin: a point-in-polygon filter over 1,000 documents; the
// polygon literal is parsed again for every document.
func BenchmarkSTWithin(b *testing.B) {
	docs := make([]Doc, 1000)
	for i := range docs {
		d, err := NewDoc([]byte(fmt.Sprintf(`{"id":"%d","loc":{"type":"Point","coordinates":[%g,%g]}}`, i, 31.5+float64(i%100)/100, -5.2+float64(i/100)/20)))
		require.NoError(b, err)
		docs[i] = d
	}
	prog, err := Prepare(`SELECT VALUE c.id FROM c WHERE ST_WITHIN(c.loc, {"type": "Polygon", "coordinates": [[[31.8, -5], [32, -5], [32, -4.7], [31.8, -4.7], [31.8, -5]]]})`, nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := prog.Execute(context.Background(), seqOf(docs)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(docs)), "ns/doc")
}
